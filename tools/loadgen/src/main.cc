// gshare-loadgen: replays a trace or a fixed rate against sample inference servers and reports
// SLO attainment, latency and errors (see docs/samples.md).
// Exit status: 0 all requests answered correctly (and --min-slo met), 1 otherwise,
// 2 bad options or unusable targets/trace.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "gshare/loadgen/plan.h"
#include "gshare/loadgen/report.h"
#include "gshare/loadgen/runner.h"
#include "gshare/loadgen/targets.h"
#include "gshare/workload/source.h"

namespace lg = gshare::loadgen;
namespace wl = gshare::workload;

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "gshare-loadgen: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gshare-loadgen: drive sample inference servers (Open Inference Protocol, loopback "
               "only) with a trace or a fixed rate; check every answer; report SLO attainment"};
  std::vector<std::string> target_flags;
  std::string targets_file, trace, format, json_path, records_path, label = "gshare";
  double slo_ms = 100, time_compression = 1, wait_ready_s = 60, min_slo = 0;
  uint32_t functions = 0;
  lg::FixedRateOptions rate;
  lg::Bounds bounds{10000, 300};
  lg::RunOptions run;
  app.add_option("--target", target_flags,
                 "NAME=http://127.0.0.1:PORT/v2/models/MODEL[@SLO_MS] (repeatable)");
  app.add_option("--targets-file", targets_file, "TOML file of [[target]] name/url/slo_ms");
  app.add_option("--slo-ms", slo_ms, "SLO of targets that do not set one")->check(CLI::PositiveNumber);
  app.add_option("--rate", rate.rate_per_s, "fixed rate, requests/s over all targets")->check(CLI::PositiveNumber);
  app.add_option("--duration", rate.duration_s, "fixed-rate run length, seconds")->check(CLI::PositiveNumber);
  app.add_flag("--poisson", rate.poisson, "fixed rate with exponential gaps");
  app.add_option("--format", format, "replay a trace: " + std::string(wl::SourceFormats()));
  app.add_option("--trace", trace, "trace file (azure-llm defaults to the shipped trace)");
  app.add_option("--functions", functions,
                 "trace functions (azure-llm: spread over this many; default: one per target)");
  app.add_option("--time-compression", time_compression, "divide trace times by this")->check(CLI::PositiveNumber);
  app.add_option("--seed", rate.seed, "seed of arrivals, trace mapping and inputs");
  app.add_option("--max-requests", bounds.max_requests, "send at most this many (0: no limit)");
  app.add_option("--max-seconds", bounds.max_seconds, "send nothing scheduled later (0: no limit)");
  app.add_option("--concurrency", run.concurrency, "worker threads / connections per target")->check(CLI::Range(1, 1024));
  app.add_option("--timeout-s", run.timeout_s, "per-request timeout")->check(CLI::PositiveNumber);
  app.add_option("--variants", rate.variants, "distinct inputs per target")->check(CLI::Range(1u, 1000000u));
  app.add_option("--bert-tokens", run.shape.bert_tokens, "tokens per sample-bert request")->check(CLI::Range(1, 128));
  app.add_option("--llm-prompt", run.shape.llm_prompt, "sample-llm prompt tokens (without trace tokens)")->check(CLI::Range(1, 128));
  app.add_option("--llm-tokens", run.shape.llm_tokens, "sample-llm generated tokens (without trace tokens)")->check(CLI::Range(1, 128));
  app.add_option("--token-scale", run.shape.token_scale, "divide trace token counts by this")->check(CLI::PositiveNumber);
  app.add_option("--wait-ready", wait_ready_s, "seconds to wait for targets to become ready");
  app.add_option("--label", label, "the \"policy\" field of the JSON run");
  app.add_option("--json", json_path, "write the JSON report here");
  app.add_option("--records", records_path,
                 "write every request as CSV: target,scheduled_ms,latency_ms,outcome");
  app.add_option("--min-slo", min_slo, "exit 1 when SLO attainment is below this fraction")->check(CLI::Range(0.0, 1.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0; every usage error: 2
  }

  std::vector<lg::Target> targets;
  if (!targets_file.empty()) {
    auto t = lg::LoadTargetsToml(targets_file);
    if (!t.ok()) return Fail(t.status().message());
    targets = std::move(*t);
  }
  for (const std::string& f : target_flags) {
    auto t = lg::ParseTargetFlag(f);
    if (!t.ok()) return Fail(t.status().message());
    targets.push_back(std::move(*t));
  }
  if (targets.empty()) return Fail("no targets: give --target NAME=URL or --targets-file FILE");
  std::vector<std::string> names;
  std::vector<double> slos;
  for (const lg::Target& t : targets) {
    for (const std::string& n : names) {
      if (n == t.name) return Fail("two targets are named '" + t.name + "'");
    }
    names.push_back(t.name);
    slos.push_back(t.slo_ms > 0 ? t.slo_ms : slo_ms);
  }
  if (!trace.empty() && format.empty()) return Fail("--trace needs --format (" + std::string(wl::SourceFormats()) + ")");
  run.input_seed = rate.seed;
  if (bounds.max_seconds > 0) run.max_wall_s = bounds.max_seconds + run.timeout_s;

  wl::Result<lg::Plan> plan = wl::Fail("");
  if (format.empty()) {
    plan = lg::FixedRatePlan(rate, targets.size(), bounds);
  } else {
    wl::SourceOptions src;
    src.format = format;
    src.path = trace;
    src.functions = functions > 0 ? functions : static_cast<uint32_t>(targets.size());
    src.seed = rate.seed;
    src.parse.time_compression = time_compression;
    src.parse.max_requests = bounds.max_requests;
    if (format == "synthetic") src.synthetic.duration_us = static_cast<int64_t>(rate.duration_s * 1e6 * time_compression);
    plan = lg::TracePlan(src, names, rate.variants, bounds);
  }
  if (!plan.ok()) return Fail(plan.status().message());
  if (plan->arrivals.empty()) return Fail("the plan has no requests (" + plan->description + ")");

  auto info = lg::Discover(targets, wait_ready_s);
  if (!info.ok()) return Fail(info.status().message());
  std::fprintf(stderr, "gshare-loadgen: %s\n", plan->description.c_str());
  const lg::RunResult result = lg::Run(*info, *plan, run);
  const std::vector<lg::Summary> summary = lg::Summarize(*info, slos, result);
  std::fputs(lg::FormatTable(summary).c_str(), stdout);
  for (const std::string& e : result.error_examples) std::fprintf(stderr, "error: %s\n", e.c_str());
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << lg::FormatJson(label, plan->description, summary, result);
    if (!out) return Fail("cannot write " + json_path);
  }
  if (!records_path.empty()) {
    std::ofstream out(records_path);
    out << lg::FormatRecordsCsv(*info, result);
    if (!out) return Fail("cannot write " + records_path);
  }
  const lg::Summary& all = summary.back();
  return all.errors == 0 && all.slo_attainment >= min_slo ? 0 : 1;
}
