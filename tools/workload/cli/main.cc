// gshare-workload: loads or generates a workload exactly as gshare-sim and gshare-loadgen do,
// prints its statistics, and optionally saves it as a csv trace (with execution times drawn
// from a model catalog). See docs/workloads.md.
#include <chrono>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "gshare/common/units.h"
#include "gshare/workload/workload.h"

namespace wl = gshare::workload;

namespace {

struct Flags {
  wl::SourceOptions source;
  std::string duration = "60min";
  bool exec = false;
  std::string catalog;
  std::string out;
};

// Fills exec_ms from the catalog (the default one unless --catalog); returns false on error.
bool AddExecTimes(const Flags& flags, wl::Trace* trace) {
  wl::Catalog catalog = wl::DefaultCatalog();
  if (!flags.catalog.empty()) {
    wl::Result<wl::Catalog> loaded = wl::LoadCatalog(flags.catalog);
    if (!loaded.ok()) {
      std::fprintf(stderr, "gshare-workload: %s\n", loaded.status().message().c_str());
      return false;
    }
    catalog = std::move(loaded.value());
  }
  wl::Result<std::vector<uint32_t>> models = wl::AssignModels(*trace, catalog, flags.source.seed);
  if (!models.ok()) {
    std::fprintf(stderr, "gshare-workload: %s\n", models.status().message().c_str());
    return false;
  }
  wl::SampleExecTimes(trace, catalog, *models, flags.source.seed);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Load or generate a gshare workload, print its statistics, optionally save it."};
  Flags flags;
  wl::SourceOptions& s = flags.source;
  app.add_option("--format", s.format, std::string("workload source: ") + std::string(wl::SourceFormats()))
      ->capture_default_str();
  app.add_option("--trace", s.path, "trace file (azure-llm defaults to the shipped trace)");
  app.add_option("--functions", s.functions,
                 "synthetic: functions; azure-llm: functions to spread requests over; "
                 "azure-functions: keep the N most invoked (0: all)")
      ->capture_default_str();
  app.add_option("--seed", s.seed, "seed")->capture_default_str();
  app.add_option("--duration", flags.duration, "synthetic: length, e.g. 60min, 1440min, 86400s")
      ->capture_default_str();
  app.add_option("--rate-scale", s.synthetic.rate_scale, "synthetic: multiply every rate")
      ->capture_default_str();
  app.add_option("--time-compression", s.parse.time_compression, "divide arrival times by X")
      ->capture_default_str();
  app.add_option("--max-requests", s.parse.max_requests, "keep the first N requests (0: all)")
      ->capture_default_str();
  app.add_flag("--skip-malformed", s.parse.skip_malformed, "skip (and count) malformed rows");
  app.add_flag("--exec", flags.exec, "draw models and execution times from the catalog");
  app.add_option("--catalog", flags.catalog, "model catalog TOML (implies --exec)");
  app.add_option("--out", flags.out, "save the workload as a csv trace");
  CLI11_PARSE(app, argc, argv);

  const auto duration = gshare::ParseDuration(flags.duration);
  if (!duration.ok()) {
    std::fprintf(stderr, "gshare-workload: --duration: %s\n", duration.status().message().c_str());
    return 2;
  }
  s.synthetic.duration_us = std::chrono::duration_cast<std::chrono::microseconds>(*duration).count();

  wl::Result<wl::Trace> trace = wl::LoadTrace(s);
  if (!trace.ok()) {
    std::fprintf(stderr, "gshare-workload: %s\n", trace.status().message().c_str());
    return 1;
  }
  if ((flags.exec || !flags.catalog.empty()) && !AddExecTimes(flags, &trace.value())) return 1;

  std::printf("%s\n%s", trace->description.c_str(),
              wl::FormatSummary(wl::Summarize(*trace)).c_str());
  if (trace->skipped_rows > 0) {
    std::printf("skipped %llu malformed rows, e.g.:\n",
                static_cast<unsigned long long>(trace->skipped_rows));
    for (const std::string& e : trace->skipped_examples) std::printf("  %s\n", e.c_str());
  }
  if (!flags.out.empty()) {
    if (gshare::Status written = wl::WriteCsvTrace(*trace, flags.out); !written.ok()) {
      std::fprintf(stderr, "gshare-workload: %s\n", written.message().c_str());
      return 1;
    }
    std::printf("wrote %s\n", flags.out.c_str());
  }
  return 0;
}
