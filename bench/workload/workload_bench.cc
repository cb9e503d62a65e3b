// Benchmarks of gshare_workload: how fast each trace format parses and how fast the synthetic
// generator produces requests, at about a million requests (the simulator's target is >= 1 M
// requests replayed in <= 10 s, parsing included).
//
// Every parser benchmark also reports `vs_read`: its time divided by the time, measured in the
// same run, of merely reading the same file and counting its lines, so the figure says how much
// the parsing itself costs on whatever machine runs it. The input files are written once, to a
// private temporary directory (named with the pid) that is removed at exit.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <benchmark/benchmark.h>

#include "gshare/workload/workload.h"

namespace gshare::workload {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kRows = 1'000'000;

class BenchFiles {
 public:
  BenchFiles() {
    dir_ = fs::temp_directory_path() / ("gshare-workload-bench-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  ~BenchFiles() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path Get(const std::string& name, void (*write)(std::ofstream&)) {
    const fs::path path = dir_ / name;
    if (!fs::exists(path)) {
      std::ofstream out(path);
      write(out);
    }
    return path;
  }

 private:
  fs::path dir_;
};

BenchFiles& Files() {
  static BenchFiles files;
  return files;
}

// csv: 1 M rows over 1,000 functions, every other row with exec_ms.
void WriteCsv(std::ofstream& out) {
  out << "timestamp_ms,function,exec_ms\n";
  char line[64];
  for (int i = 0; i < kRows; ++i) {
    const int function = static_cast<int>((i * 7919LL) % 1000);
    const int n = std::snprintf(line, sizeof line, "%.3f,fn-%d,%s\n", i * 0.25, function,
                                i % 2 ? "3.5" : "");
    out.write(line, n);
  }
}

// azure-llm: 1 M rows, 4 ms apart, in the published trace's timestamp format.
void WriteAzureLlm(std::ofstream& out) {
  out << "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  char line[80];
  for (int i = 0; i < kRows; ++i) {
    const long long us = 4000LL * i;
    const long long s = us / 1'000'000;
    const int n = std::snprintf(line, sizeof line, "2023-11-16 %02lld:%02lld:%02lld.%07lld,%d,%d\n",
                                (s / 3600) % 24, (s / 60) % 60, s % 60, (us % 1'000'000) * 10,
                                100 + i % 900, 10 + i % 300);
    out.write(line, n);
  }
}

// azure-functions: 1,000 functions x 1,440 minutes, ~1 M invocations in all.
void WriteAzureFunctions(std::ofstream& out) {
  out << "HashOwner,HashApp,HashFunction,Trigger";
  for (int m = 1; m <= 1440; ++m) out << ',' << m;
  out << '\n';
  for (int f = 0; f < 1000; ++f) {
    out << "owner" << f << ",app" << f << ",func" << f << (f % 6 == 0 ? ",timer" : ",http");
    for (int m = 0; m < 1440; ++m) out << ',' << ((f * 31 + m * 17) % 97 == 0 ? 17 * (f % 5) : (m + f) % 2);
    out << '\n';
  }
}

// Seconds to read `path` and count its lines: the floor any parser of the file stands on.
double ReadBaselineSeconds(const fs::path& path) {
  static std::map<fs::path, double> cache;
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = Clock::now();
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) return 1e30;
    std::string data(fs::file_size(path), '\0');
    const size_t got = std::fread(data.data(), 1, data.size(), file);
    std::fclose(file);
    benchmark::DoNotOptimize(std::count(data.begin(), data.begin() + static_cast<long>(got), '\n'));
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return cache[path] = best;
}

// Runs `parse` in the benchmark loop and reports items/s, seconds per 1 M requests and vs_read.
template <typename Parse>
void RunParser(benchmark::State& state, const fs::path& path, Parse parse) {
  const double baseline = ReadBaselineSeconds(path);
  size_t requests = 0;
  const auto start = Clock::now();
  for (auto _ : state) {
    Result<Trace> trace = parse(path);
    if (!trace.ok()) {
      state.SkipWithError(trace.status().message().c_str());
      return;
    }
    requests = trace->invocations.size();
    benchmark::DoNotOptimize(trace->invocations.data());
  }
  const double per_iter =
      std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(requests) * state.iterations());
  state.counters["requests"] = static_cast<double>(requests);
  state.counters["s_per_1M_requests"] = per_iter / static_cast<double>(requests) * 1e6;
  state.counters["vs_read"] = per_iter / baseline;
}

void BM_ParseCsv(benchmark::State& state) {
  RunParser(state, Files().Get("trace.csv", WriteCsv),
            [](const fs::path& p) { return ParseCsvTrace(p); });
}

void BM_ParseAzureLlm(benchmark::State& state) {
  AzureLlmOptions options;
  options.functions = 1000;
  RunParser(state, Files().Get("llm.csv", WriteAzureLlm),
            [&](const fs::path& p) { return ParseAzureLlmTrace(p, options); });
}

void BM_ParseAzureLlmShipped(benchmark::State& state) {
  Result<fs::path> path = ShippedAzureLlmTracePath();
  if (!path.ok()) {
    state.SkipWithError(path.status().message().c_str());
    return;
  }
  AzureLlmOptions options;
  options.functions = 100;
  RunParser(state, *path, [&](const fs::path& p) { return ParseAzureLlmTrace(p, options); });
}

void BM_ParseAzureFunctions(benchmark::State& state) {
  RunParser(state, Files().Get("functions.csv", WriteAzureFunctions),
            [](const fs::path& p) { return ParseAzureFunctionsTrace(p); });
}

// The generator: 1 M requests from 1,000 Azure-like functions.
void BM_GenerateSynthetic(benchmark::State& state) {
  SyntheticOptions options;
  options.functions = 1000;
  options.duration_us = 86'400'000'000;
  options.max_requests = kRows;
  size_t requests = 0;
  for (auto _ : state) {
    Result<SyntheticTrace> t = GenerateSynthetic(options);
    requests = t->trace.invocations.size();
    benchmark::DoNotOptimize(t->trace.invocations.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(requests) * state.iterations());
  state.counters["requests"] = static_cast<double>(requests);
}

// Model assignment and execution-time sampling for 1 M requests.
void BM_AssignAndSample(benchmark::State& state) {
  SyntheticOptions options;
  options.functions = 1000;
  options.duration_us = 86'400'000'000;
  options.max_requests = kRows;
  Result<SyntheticTrace> t = GenerateSynthetic(options);
  const Catalog catalog = DefaultCatalog();
  for (auto _ : state) {
    state.PauseTiming();
    Trace trace = t->trace;
    state.ResumeTiming();
    Result<std::vector<uint32_t>> models = AssignModels(trace, catalog, 1);
    SampleExecTimes(&trace, catalog, *models, 1);
    benchmark::DoNotOptimize(trace.invocations.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(t->trace.invocations.size()) * state.iterations());
}

BENCHMARK(BM_ParseCsv)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ParseAzureLlm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ParseAzureLlmShipped)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ParseAzureFunctions)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GenerateSynthetic)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AssignAndSample)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gshare::workload

BENCHMARK_MAIN();
