// gshare-demo: the README's first command. Starts gshare-arbiter and a dozen unmodified sample
// inference servers under libgshare.so on two simulated GPUs (or real ones with --real-gpu),
// replays a time-compressed Azure LLM trace against them with gshare-loadgen, then runs the
// same load on the dedicated-GPU baseline, stops everything and prints the summary (latency,
// SLO attainment, errors, GPU-seconds held vs dedicated, swaps). See docs/demo.md.
// Exit status: 0 every request answered correctly and --min-slo met; 1 otherwise or a run
// failed; 2 bad options; 130 interrupted.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "gshare/common/units.h"
#include "gshare/demo/child_process.h"
#include "gshare/demo/plot.h"
#include "gshare/demo/runs.h"

namespace dm = gshare::demo;

namespace {

std::atomic<bool> g_interrupted{false};

void OnSignal(int) { g_interrupted.store(true); }

void Say(const std::string& line) {
  std::time_t now = std::time(nullptr);
  char stamp[16];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", std::localtime(&now));
  std::fprintf(stderr, "[demo %s] %s\n", stamp, line.c_str());
}

int Fail(const std::string& message, int status = 1) {
  std::fprintf(stderr, "gshare-demo: %s\n", message.c_str());
  return status;
}

// Records a recorded-trace conversion by gshare-trace when it was built (engineer "trace").
std::string MaybePerfettoTrace(const dm::Environment& env, const std::string& ring, std::string* note) {
  const std::string tool = env.bin_dir + "/gshare-trace";
  if (access(tool.c_str(), X_OK) != 0) {
    *note = "(not written: build/bin/gshare-trace is not built)";
    return "";
  }
  const std::string out = env.run_dir + "/trace.perfetto.json";
  auto child = dm::ChildProcess::Spawn({{tool, "dump", "--ring", ring, "-o", out},
                                        dm::CurrentEnvironment(), env.run_dir + "/gshare-trace.log",
                                        env.run_dir + "/gshare-trace.log"});
  if (child.ok()) {
    const auto status = child->Wait(std::chrono::seconds(120));
    if (status && *status == 0 && access(out.c_str(), R_OK) == 0) return out;
    if (!status) child->Stop(std::chrono::seconds(1));
  }
  *note = "(gshare-trace failed; see " + env.run_dir + "/gshare-trace.log)";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gshare-demo: unmodified GPU inference functions sharing two GPUs through gshare, "
               "against the dedicated-GPU baseline (docs/demo.md)"};
  dm::DemoOptions o;
  app.add_option("--mix", o.mix, "functions per sample kind")->capture_default_str();
  app.add_option("--quota", o.quotas, "vGPU quota per kind (GSHARE_VGPU_MEMORY)")->capture_default_str();
  app.add_option("--slo", o.slos_ms, "SLO per kind, ms")->capture_default_str();
  app.add_option("--gpus", o.gpus, "GPUs shared by the functions")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--gpu-memory", o.gpu_memory,
                 "memory of each simulated GPU (with --real-gpu: the part of each real GPU the "
                 "arbiter manages)")
      ->capture_default_str();
  app.add_option("--simcuda-memory", o.simcuda_memory,
                 "size of each simcuda device when larger than --gpu-memory (the arbiter is then told "
                 "--gpu-memory; '' = off)")
      ->capture_default_str();
  app.add_option("--format", o.format, "trace format (gshare-loadgen --format)")->capture_default_str();
  app.add_option("--trace", o.trace, "trace file (default: the format's shipped trace)");
  app.add_option("--trace-seconds", o.trace_seconds, "seconds of trace replayed")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--time-compression", o.time_compression, "trace seconds per wall-clock second")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--concurrency", o.concurrency, "gshare-loadgen workers")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--time-scale", o.time_scale, "SIMCUDA_TIME_SCALE (real seconds per simulated second)")->capture_default_str();
  app.add_option("--policy", o.policy, "gshare-arbiter --policy")->capture_default_str();
  app.add_option("--slice", o.slice, "gshare-arbiter --slice")->capture_default_str();
  app.add_option("--preempt-grace", o.preempt_grace, "gshare-arbiter --preempt-grace")->capture_default_str();
  app.add_option("--arbiter-option", o.arbiter_options,
                 "KEY=VALUE passed to gshare-arbiter as --KEY VALUE (repeatable; e.g. preempt_grace=1s)");
  app.add_flag("!--no-baseline", o.baseline, "skip the dedicated-GPU baseline run");
  app.add_flag("--corun", o.corun,
               "also run the gshare fleet with co-running (simcuda's MPS daemons; one GPU marked, "
               "see docs/demo.md) on the same load and report it beside the time-only run");
  app.add_flag("--quick", o.quick, "the short CI demo (6 functions whose quotas fit, 40 s of trace at 2x)");
  app.add_flag("--real-gpu", o.real_gpu,
               "use the real CUDA driver instead of simcuda (GPUs 0..--gpus-1; default SLOs "
               "cnn=100,bert=100,llm=1000; with --quick the arbiter manages 1536MiB of each)");
  app.add_option("--run-dir", o.run_dir, "directory for logs and results (default: a fresh one in $TMPDIR)");
  app.add_option("--json", o.json_path, "also write the JSON report here");
  app.add_option("--build-dir", o.build_dir, "gshare build directory (default: the one gshare-demo is in)");
  app.add_option("--min-slo", o.min_slo, "exit 1 when the gshare run's SLO attainment is below this")->check(CLI::Range(0.0, 1.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (o.quick) {
    // --quick changes only what was not given explicitly.
    dm::DemoOptions q = o;
    dm::ApplyQuick(q);
    if (app.count("--mix") == 0) o.mix = q.mix;
    if (app.count("--gpu-memory") == 0) o.gpu_memory = q.gpu_memory;
    if (app.count("--simcuda-memory") == 0) o.simcuda_memory = q.simcuda_memory;
    if (app.count("--trace-seconds") == 0) o.trace_seconds = q.trace_seconds;
    if (app.count("--time-compression") == 0) o.time_compression = q.time_compression;
  }
  if (o.real_gpu) {
    // Likewise --real-gpu: real-GPU SLOs and, with --quick, an arbiter GPU smaller than the quotas.
    dm::DemoOptions r = o;
    dm::ApplyRealGpu(r);
    if (app.count("--slo") == 0) o.slos_ms = r.slos_ms;
    if (app.count("--gpu-memory") == 0) o.gpu_memory = r.gpu_memory;
  }
  auto functions = dm::BuildFunctions(o.mix, o.quotas, o.slos_ms);
  if (!functions.ok()) return Fail(functions.status().message(), 2);
  const auto gpu_bytes = gshare::ParseByteSize(o.gpu_memory);
  if (!gpu_bytes.ok() || *gpu_bytes == 0) return Fail("--gpu-memory: not a size: " + o.gpu_memory, 2);

  dm::Environment env;
  env.options = o;
  std::error_code ec;
  if (o.build_dir.empty()) {
    o.build_dir = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().parent_path().string();
  }
  env.bin_dir = o.build_dir + "/bin";
  env.lib_dir = o.build_dir + "/lib";
  env.simcuda_lib_dir = o.build_dir + "/simcuda-lib";
  for (const std::string& need : {env.bin_dir + "/gshare-arbiter", env.bin_dir + "/gshare-loadgen",
                                  env.lib_dir + "/libgshare.so", env.bin_dir + "/sample-cnn"}) {
    if (access(need.c_str(), R_OK) != 0) return Fail("missing " + need + " (build it first; scripts/demo.sh does)", 2);
  }
  if (!o.real_gpu && access((env.simcuda_lib_dir + "/libcuda.so.1").c_str(), R_OK) != 0)
    return Fail("missing " + env.simcuda_lib_dir + "/libcuda.so.1 (build target simcuda)", 2);
  if (o.run_dir.empty()) {
    const char* tmp = getenv("TMPDIR");
    char stamp[32];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
    o.run_dir = fmt::format("{}/gshare-demo-{}-{}", tmp != nullptr && *tmp ? tmp : "/tmp", stamp, getpid());
  }
  std::filesystem::create_directories(o.run_dir, ec);
  if (ec) return Fail("cannot create " + o.run_dir + ": " + ec.message(), 2);
  o.run_dir = std::filesystem::canonical(o.run_dir).string();
  env.options = o;
  env.run_dir = o.run_dir;
  env.interrupted = &g_interrupted;
  env.say = &Say;

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  uint64_t quota_sum = 0;
  for (const auto& f : *functions) quota_sum += f.quota_bytes;
  dm::DemoReport report;
  report.functions = *functions;
  report.gpu_memory_bytes = *gpu_bytes;
  report.run_dir = o.run_dir;
  report.headline = fmt::format(
      "{} functions ({}) on {} {} GPUs of {}: quotas sum {} = {:.2f}x the GPUs' memory; "
      "SLOs ms {}; SIMCUDA_TIME_SCALE {}; policy {}, slice {}, preempt grace {}{}",
      functions->size(), o.mix, o.gpus, o.real_gpu ? "real" : "simulated", gshare::FormatByteSize(*gpu_bytes),
      gshare::FormatByteSize(quota_sum), static_cast<double>(quota_sum) / (static_cast<double>(*gpu_bytes) * o.gpus),
      o.slos_ms, o.real_gpu ? "n/a" : o.time_scale, o.policy, o.slice, o.preempt_grace,
      o.simcuda_memory.empty() || o.real_gpu
          ? ""
          : fmt::format("\nnote: simcuda devices are {} each; the arbiter manages {} of each "
                        "(--simcuda-memory)",
                        o.simcuda_memory, gshare::FormatByteSize(*gpu_bytes)));
  Say(report.headline);
  Say("run directory " + o.run_dir);

  auto shared = dm::RunShared(env, *functions);
  if (g_interrupted) return Fail("interrupted; everything it started was stopped", 130);
  if (!shared.ok()) return Fail("gshare run failed: " + shared.status().message());
  report.gshare = std::move(shared->outcome);
  report.usage = shared->usage;
  report.arbiter = shared->arbiter_summary;
  Say(fmt::format("gshare run done: {} requests, {} errors", report.gshare.run.value("requests", 0),
                  report.gshare.run.value("errors", 0)));
  report.trace_path = MaybePerfettoTrace(env, shared->event_ring_path, &report.trace_note);
  if (o.corun) {
    auto setup = dm::MakeCorunSetup(*functions, o.gpus);
    if (!setup.ok()) return Fail(setup.status().message(), 2);
    nlohmann::json kinds = nlohmann::json::object();
    std::string shares;
    for (const auto& [kind, k] : setup->kinds) {
      kinds[kind] = {{"model", k.model}, {"share", k.share}, {"demand", k.demand}};
      shares += fmt::format("{}{} {}% ({})", shares.empty() ? "" : ", ", kind, k.share, k.demand);
    }
    std::string marked;
    for (uint32_t g : setup->gpus) marked += (marked.empty() ? "" : ",") + std::to_string(g);
    report.corun_setup = {{"corun_gpus", setup->gpus}, {"kinds", kinds},
                          {"note", fmt::format("co-run GPU {} of {}; MPS shares {}", marked, o.gpus, shares)}};
    Say("co-run run: " + report.corun_setup["note"].get<std::string>());
    auto corun = dm::RunShared(env, *functions, &*setup);
    if (g_interrupted) return Fail("interrupted; everything it started was stopped", 130);
    if (!corun.ok()) return Fail("gshare co-run run failed: " + corun.status().message());
    report.corun = std::move(corun->outcome);
    report.corun_usage = corun->usage;
    report.corun_arbiter = corun->arbiter_summary;
    Say(fmt::format("gshare co-run run done: {} requests, {} errors, {} co-run grants",
                    report.corun->run.value("requests", 0), report.corun->run.value("errors", 0),
                    report.corun_arbiter.value("corun_joins", 0)));
  }
  if (o.baseline) {
    auto dedicated = dm::RunDedicated(env, *functions);
    if (g_interrupted) return Fail("interrupted; everything it started was stopped", 130);
    if (!dedicated.ok()) return Fail("dedicated baseline failed: " + dedicated.status().message());
    report.dedicated = std::move(*dedicated);
  }

  std::vector<dm::PlotSeries> series = {{"gshare (" + std::to_string(o.gpus) + " GPUs)",
                                         dm::SortedOkLatencies(report.gshare.records)}};
  if (report.dedicated)
    series.push_back({"dedicated (" + std::to_string(report.dedicated->gpus) + " GPUs)",
                      dm::SortedOkLatencies(report.dedicated->records)});
  if (report.corun)
    series.push_back({"gshare co-run (" + std::to_string(o.gpus) + " GPUs)",
                      dm::SortedOkLatencies(report.corun->records)});
  auto plot = dm::PlotLatencyCdf(o.run_dir, series, "gshare demo: request latency CDF");
  if (plot.ok()) report.plot_path = *plot;
  else Say(plot.status().message());
  report.json_path = o.run_dir + "/report.json";
  const std::string json = dm::ReportJson(report).dump(2) + "\n";
  std::ofstream(report.json_path) << json;
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << json;
    if (!out) return Fail("cannot write " + o.json_path);
    report.json_path += " and " + o.json_path;
  }
  std::fputs(dm::ReportText(report).c_str(), stdout);
  std::fflush(stdout);
  const bool problems = !report.gshare.problems.empty() || (report.dedicated && !report.dedicated->problems.empty()) ||
                        (report.corun && !report.corun->problems.empty());
  const double attainment = report.gshare.run.value("slo_attainment", 0.0);
  return dm::TotalErrors(report) == 0 && !problems && attainment >= o.min_slo ? 0 : 1;
}
