// Instructions the shim adds to one gated submission, counted exactly: each benchmark runs this
// program as a child under callgrind (valgrind --tool=callgrind) four times — direct calls on
// the do-nothing driver (fake_driver.cc) and the same calls through libgshare.so's hooks
// wrapping it, each for two run lengths — and takes the slope between the two lengths, so
// start-up, the first call's slow paths and the loop's set-up cancel out. Counters:
// direct_instructions and shim_instructions per call, added_instructions = their difference
// (the target is <= 75 per gated call). Without valgrind on PATH every benchmark is skipped.
//
//   gated_call_instructions_bench --benchmark_format=json
//   gated_call_instructions_bench --child <call> <direct|shim> <calls>   (what the parent runs)
//   GSHARE_BENCH_SHIM_LIB=/tmp/before/libgshare.so gated_call_instructions_bench
//       (another build of the shim, e.g. a copy saved before a change: driver_table.h)
#include <cuda.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "driver_table.h"

extern char** environ;

namespace {

using Table = gshare::bench::DriverTable;

const auto kStream = reinterpret_cast<CUstream>(static_cast<uintptr_t>(0x5000));
const auto kEvent = reinterpret_cast<CUevent>(static_cast<uintptr_t>(0xE000));
const auto kGraph = reinterpret_cast<CUgraphExec>(static_cast<uintptr_t>(0x6000));

// One gated call of each kind the issue names (memset, copies, launches, graph launch, event
// record); false when the table lacks the entry point.
struct CallKind {
  const char* name;
  bool (*call)(const Table& t);
};

int g_value = 0;

const CallKind kCalls[] = {
    {"memset_d8_async", [](const Table& t) {
       return t.memset8_async && t.memset8_async(0x1000, 0, 16, kStream) == CUDA_SUCCESS;
     }},
    {"memset_d8_async_default_stream", [](const Table& t) {
       return t.memset8_async && t.memset8_async(0x1000, 0, 16, nullptr) == CUDA_SUCCESS;
     }},
    {"memcpy_htod_async", [](const Table& t) {
       return t.htod_async && t.htod_async(0x1000, &g_value, sizeof(g_value), kStream) == CUDA_SUCCESS;
     }},
    {"memcpy_dtoh_async", [](const Table& t) {
       return t.dtoh_async && t.dtoh_async(&g_value, 0x1000, sizeof(g_value), kStream) == CUDA_SUCCESS;
     }},
    {"memcpy_dtod_async", [](const Table& t) {
       return t.dtod_async && t.dtod_async(0x2000, 0x1000, 64, kStream) == CUDA_SUCCESS;
     }},
    {"launch_kernel", [](const Table& t) {
       return t.launch &&
              t.launch(nullptr, 1, 1, 1, 1, 1, 1, 0, kStream, nullptr, nullptr) == CUDA_SUCCESS;
     }},
    {"launch_kernel_default_stream", [](const Table& t) {
       return t.launch &&
              t.launch(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) == CUDA_SUCCESS;
     }},
    {"launch_kernel_ex", [](const Table& t) {
       CUlaunchConfig config{};
       config.gridDimX = config.gridDimY = config.gridDimZ = 1;
       config.blockDimX = config.blockDimY = config.blockDimZ = 1;
       config.hStream = kStream;
       return t.launch_ex && t.launch_ex(&config, nullptr, nullptr, nullptr) == CUDA_SUCCESS;
     }},
    {"graph_launch", [](const Table& t) {
       return t.graph_launch && t.graph_launch(kGraph, kStream) == CUDA_SUCCESS;
     }},
    {"event_record", [](const Table& t) {
       return t.event_record && t.event_record(kEvent, kStream) == CUDA_SUCCESS;
     }},
};

const CallKind* FindCall(const std::string& name) {
  for (const CallKind& k : kCalls) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

// The child: `calls` calls of one kind on one table. Exit status 0 when every call succeeded.
int RunChild(const std::string& call, const std::string& way, long calls) {
  const CallKind* kind = FindCall(call);
  if (kind == nullptr || (way != "direct" && way != "shim") || calls <= 0) {
    std::fprintf(stderr, "usage: --child <call> <direct|shim> <calls>\n");
    return 2;
  }
  setenv("GSHARE_REAL_LIBCUDA", GSHARE_FAKE_DRIVER, 1);
  const gshare::bench::DirectAndShim d =
      gshare::bench::OpenDirectAndShim(GSHARE_FAKE_DRIVER, GSHARE_PRELOAD_LIB);
  if (!d.ok) return 3;
  const Table& t = way == "shim" ? d.shim : d.direct;
  for (long i = 0; i < calls; ++i) {
    if (!kind->call(t)) {
      std::fprintf(stderr, "%s through %s failed at call %ld\n", call.c_str(), way.c_str(), i);
      return 4;
    }
  }
  return 0;
}

// Runs argv with its stdout on /dev/null (the parent's stdout carries the JSON) and waits; its
// exit status, or -1 when it could not be started or did not exit.
int Spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

bool HaveValgrind() {
  static const bool have = Spawn({"valgrind", "--version", "-q"}) == 0;
  return have;
}

std::string SelfPath() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).string();
}

// Instructions executed by the whole child (callgrind's "summary:" total), or nullopt.
std::optional<double> CountInstructions(const std::string& call, const std::string& way,
                                        long calls) {
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() /
      ("gshare-callgrind-" + std::to_string(getpid()) + "-" + call + "-" + way + ".out");
  const int rc = Spawn({"valgrind", "-q", "--tool=callgrind", "--callgrind-out-file=" + out.string(),
                        SelfPath(), "--child", call, way, std::to_string(calls)});
  std::optional<double> total;
  std::ifstream in(out);
  for (std::string line; rc == 0 && std::getline(in, line);) {
    if (line.rfind("summary:", 0) == 0) total = std::strtod(line.c_str() + 8, nullptr);
  }
  std::error_code ec;
  std::filesystem::remove(out, ec);
  return total;
}

constexpr long kShortRun = 2000;
constexpr long kLongRun = 22000;

// Instructions per call by the slope between the two run lengths.
std::optional<double> PerCall(const std::string& call, const std::string& way) {
  const auto short_run = CountInstructions(call, way, kShortRun);
  const auto long_run = CountInstructions(call, way, kLongRun);
  if (!short_run || !long_run) return std::nullopt;
  return (*long_run - *short_run) / static_cast<double>(kLongRun - kShortRun);
}

void BM_GatedCallInstructions(benchmark::State& state, const char* call) {
  if (!HaveValgrind()) {
    state.SkipWithError("valgrind not found on PATH (scripts/install-deps.sh installs it)");
    return;
  }
  std::optional<double> direct;
  std::optional<double> shim;
  for (auto _ : state) {
    direct = PerCall(call, "direct");
    shim = PerCall(call, "shim");
  }
  if (!direct || !shim) {
    state.SkipWithError("a callgrind run failed (run the --child command by hand to see why)");
    return;
  }
  state.counters["direct_instructions"] = *direct;
  state.counters["shim_instructions"] = *shim;
  state.counters["added_instructions"] = *shim - *direct;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--child") == 0) {
    if (argc != 5) return RunChild("", "", 0);
    return RunChild(argv[2], argv[3], std::strtol(argv[4], nullptr, 10));
  }
  for (const CallKind& k : kCalls) {
    benchmark::RegisterBenchmark(("BM_GatedCallInstructions/" + std::string(k.name)).c_str(),
                                 BM_GatedCallInstructions, k.name)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
