// The demo's summary: the text printed at the end and the JSON report.
#include "gshare/demo/report.h"

#include <fmt/format.h>

#include "gshare/common/units.h"

namespace gshare::demo {
namespace {

uint64_t U(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<uint64_t>() : 0;
}
double D(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

nlohmann::json RunJson(const RunOutcome& o) {
  nlohmann::json run = o.run;
  run["policy"] = o.label;
  run["gpu_seconds"] = o.gpu_seconds;
  run["peak_gpus"] = o.peak_gpus;
  run["swap_bytes"] = o.swap_bytes;
  run["gpus"] = o.gpus;
  run["window_s"] = o.window_s;
  run["description"] = o.description;
  run["problems"] = o.problems;
  return run;
}

std::string RunLine(const RunOutcome& o) {
  const nlohmann::json& j = o.run;
  return fmt::format("{:<22}{:>9}{:>8}{:>7}{:>9.2f}%{:>9.1f}{:>9.1f}{:>13.1f}{:>7}\n",
                     fmt::format("{} ({} GPUs)", o.label, o.gpus), U(j, "requests"),
                     U(j, "errors"), U(j, "wrong_results"), 100.0 * D(j, "slo_attainment"),
                     D(j, "p50_ms"), D(j, "p99_ms"), o.gpu_seconds, o.peak_gpus);
}

}  // namespace

double GpuSecondsRatio(const DemoReport& r) {
  const double dedicated = static_cast<double>(r.functions.size()) * r.gshare.window_s;
  return dedicated > 0 ? r.gshare.gpu_seconds / dedicated : 0;
}

uint64_t TotalErrors(const DemoReport& r) {
  uint64_t e = U(r.gshare.run, "errors");
  if (r.dedicated) e += U(r.dedicated->run, "errors");
  if (r.corun) e += U(r.corun->run, "errors");
  return e;
}

namespace {

nlohmann::json UsageJson(const GpuUsage& u) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuUsage::Gpu& g : u.gpus) {
    gpus.push_back({{"ordinal", g.ordinal}, {"occupied_s", g.occupied_s}, {"busy_s", g.busy_s},
                    {"peak_resident", g.peak_resident}});
  }
  return {{"window_s", u.window_s}, {"occupied_gpu_seconds", u.occupied_gpu_seconds},
          {"busy_gpu_seconds", u.busy_gpu_seconds}, {"peak_gpus", u.peak_gpus},
          {"grants", u.grants}, {"preemptions", u.preemptions}, {"gpus", gpus}};
}

double BusyShare(const GpuUsage& u) {
  return u.occupied_gpu_seconds > 0 ? u.busy_gpu_seconds / u.occupied_gpu_seconds : 0.0;
}

// --corun: the time-only and co-run runs of this invocation side by side, with the baseline.
std::string CorunTable(const DemoReport& r) {
  const RunOutcome& t = r.gshare;
  const RunOutcome& c = *r.corun;
  const RunOutcome* d = r.dedicated ? &*r.dedicated : nullptr;
  std::string out = fmt::format("\nco-running (same fleet, same load; {}):\n", r.corun_setup.value("note", ""));
  out += fmt::format("  {:<30}{:>14}{:>14}{:>14}\n", "", "time-only", "co-run", "dedicated");
  auto row = [&](const char* name, const std::string& a, const std::string& b, const std::string& e) {
    out += fmt::format("  {:<30}{:>14}{:>14}{:>14}\n", name, a, b, e);
  };
  auto num = [](double v, int prec) { return fmt::format("{:.{}f}", v, prec); };
  auto pct = [](double v) { return fmt::format("{:.2f}%", 100 * v); };
  row("GPUs", std::to_string(t.gpus), std::to_string(c.gpus), d ? std::to_string(d->gpus) : "-");
  row("requests", std::to_string(U(t.run, "requests")), std::to_string(U(c.run, "requests")),
      d ? std::to_string(U(d->run, "requests")) : "-");
  row("errors", std::to_string(U(t.run, "errors")), std::to_string(U(c.run, "errors")),
      d ? std::to_string(U(d->run, "errors")) : "-");
  row("GPU-seconds held", num(t.gpu_seconds, 1), num(c.gpu_seconds, 1), d ? num(d->gpu_seconds, 1) : "-");
  row("GPU-seconds busy", num(r.usage.busy_gpu_seconds, 1), num(r.corun_usage.busy_gpu_seconds, 1), "-");
  row("busy share of held", pct(BusyShare(r.usage)), pct(BusyShare(r.corun_usage)), "-");
  row("SLO met", pct(D(t.run, "slo_attainment")), pct(D(c.run, "slo_attainment")),
      d ? pct(D(d->run, "slo_attainment")) : "-");
  row("p50 ms", num(D(t.run, "p50_ms"), 1), num(D(c.run, "p50_ms"), 1), d ? num(D(d->run, "p50_ms"), 1) : "-");
  row("p99 ms", num(D(t.run, "p99_ms"), 1), num(D(c.run, "p99_ms"), 1), d ? num(D(d->run, "p99_ms"), 1) : "-");
  row("token grants (ring)", std::to_string(r.usage.grants), std::to_string(r.corun_usage.grants), "-");
  row("co-run grants (corun_joins)", std::to_string(U(r.arbiter, "corun_joins")),
      std::to_string(U(r.corun_arbiter, "corun_joins")), "-");
  row("co-run refusals", std::to_string(U(r.arbiter, "corun_refusals")),
      std::to_string(U(r.corun_arbiter, "corun_refusals")), "-");
  row("co-run revocations", std::to_string(U(r.arbiter, "corun_revocations")),
      std::to_string(U(r.corun_arbiter, "corun_revocations")), "-");
  row("preemptions (ring)", std::to_string(r.usage.preemptions), std::to_string(r.corun_usage.preemptions), "-");
  return out;
}

}  // namespace

nlohmann::json ReportJson(const DemoReport& r) {
  nlohmann::json runs = nlohmann::json::array({RunJson(r.gshare)});
  if (r.dedicated) runs.push_back(RunJson(*r.dedicated));
  if (r.corun) runs.push_back(RunJson(*r.corun));
  nlohmann::json functions = nlohmann::json::array();
  for (const FunctionSpec& f : r.functions) {
    functions.push_back({{"name", f.name}, {"kind", f.kind}, {"seed", f.seed},
                         {"quota_bytes", f.quota_bytes}, {"slo_ms", f.slo_ms}});
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuUsage::Gpu& g : r.usage.gpus) {
    gpus.push_back({{"ordinal", g.ordinal}, {"occupied_s", g.occupied_s}, {"busy_s", g.busy_s},
                    {"peak_resident", g.peak_resident}});
  }
  const GpuUsage& u = r.usage;
  nlohmann::json j = {{"workload", r.gshare.workload},
          {"runs", runs},
          {"headline", r.headline},
          {"functions", functions},
          {"gpu_memory_bytes", r.gpu_memory_bytes},
          {"gpu_seconds_ratio", GpuSecondsRatio(r)},
          {"dedicated_gpu_seconds_same_window", static_cast<double>(r.functions.size()) * r.gshare.window_s},
          {"swaps", {{"swap_outs", u.swap_outs}, {"swap_ins", u.swap_ins},
                     {"swap_out_bytes", u.swap_out_bytes}, {"swap_in_bytes", u.swap_in_bytes},
                     {"swap_out_s", u.swap_out_s}, {"swap_in_s", u.swap_in_s}}},
          {"gpu_usage", {{"window_s", u.window_s}, {"occupied_gpu_seconds", u.occupied_gpu_seconds},
                         {"busy_gpu_seconds", u.busy_gpu_seconds}, {"peak_gpus", u.peak_gpus},
                         {"grants", u.grants}, {"preemptions", u.preemptions}, {"gpus", gpus}}},
          {"arbiter_summary", r.arbiter},
          {"files", {{"run_dir", r.run_dir}, {"json", r.json_path}, {"plot", r.plot_path},
                     {"perfetto_trace", r.trace_path}}}};
  if (r.corun) {
    j["corun"] = {{"setup", r.corun_setup}, {"gpu_usage", UsageJson(r.corun_usage)},
                  {"arbiter_summary", r.corun_arbiter},
                  {"corun_joins", U(r.corun_arbiter, "corun_joins")},
                  {"corun_refusals", U(r.corun_arbiter, "corun_refusals")},
                  {"corun_revocations", U(r.corun_arbiter, "corun_revocations")},
                  {"busy_share", BusyShare(r.corun_usage)},
                  {"time_only_busy_share", BusyShare(r.usage)}};
  }
  return j;
}

std::string ReportText(const DemoReport& r) {
  std::string out = "\n== gshare demo: summary ==\n" + r.headline + "\n";
  out += fmt::format("load: {}\n\n", r.gshare.workload);
  out += fmt::format("{:<22}{:>9}{:>8}{:>7}{:>10}{:>9}{:>9}{:>13}{:>7}\n", "run", "requests",
                     "errors", "wrong", "SLO met", "p50 ms", "p99 ms", "GPU-seconds", "peak");
  out += RunLine(r.gshare);
  if (r.dedicated) out += RunLine(*r.dedicated);
  if (r.corun) out += RunLine(*r.corun);
  if (r.dedicated && r.dedicated->gpus < r.functions.size())
    out += fmt::format("note: baseline = {}\n", r.dedicated->description);
  out += "\nper kind (gshare run";
  out += r.dedicated ? " | dedicated run):\n" : "):\n";
  const auto g = StatsByKind(r.functions, r.gshare.records);
  const auto d = r.dedicated ? StatsByKind(r.functions, r.dedicated->records) : std::vector<KindStats>{};
  for (size_t i = 0; i < g.size(); ++i) {
    out += fmt::format("  {:<5} SLO {:>6.0f} ms  {:>5} req  {:>7.2f}% met  p50 {:>7.1f}  p99 {:>7.1f}",
                       g[i].kind, g[i].slo_ms, g[i].requests, 100 * g[i].slo_attainment,
                       g[i].p50_ms, g[i].p99_ms);
    if (i < d.size()) {
      out += fmt::format("  | {:>7.2f}% met  p50 {:>7.1f}  p99 {:>7.1f}", 100 * d[i].slo_attainment,
                         d[i].p50_ms, d[i].p99_ms);
    }
    out += "\n";
  }
  const double dedicated_s = static_cast<double>(r.functions.size()) * r.gshare.window_s;
  out += fmt::format("\nGPU-seconds held: gshare {:.1f} vs dedicated {:.1f} ({} functions x {:.1f} s) "
                     "= {:.1f}%\n",
                     r.gshare.gpu_seconds, dedicated_s, r.functions.size(), r.gshare.window_s,
                     100 * GpuSecondsRatio(r));
  const GpuUsage& u = r.usage;
  out += fmt::format("GPU-seconds busy (a function held the token): {:.1f} ({:.1f}% of held); "
                     "grants {}, preemptions {}\n",
                     u.busy_gpu_seconds,
                     u.occupied_gpu_seconds > 0 ? 100 * u.busy_gpu_seconds / u.occupied_gpu_seconds : 0.0,
                     u.grants, u.preemptions);
  out += fmt::format("swaps: {} out ({}, {:.2f} s), {} in ({}, {:.2f} s); arbiter totals: {} out, {} in\n",
                     u.swap_outs, FormatByteSize(u.swap_out_bytes), u.swap_out_s, u.swap_ins,
                     FormatByteSize(u.swap_in_bytes), u.swap_in_s, U(r.arbiter, "swap_outs"),
                     U(r.arbiter, "swap_ins"));
  if (r.corun) out += CorunTable(r);
  for (const RunOutcome* o : {&r.gshare, r.dedicated ? &*r.dedicated : nullptr, r.corun ? &*r.corun : nullptr}) {
    if (o == nullptr) continue;
    for (const std::string& p : o->problems) out += fmt::format("PROBLEM ({}): {}\n", o->label, p);
  }
  out += fmt::format("\nJSON report:     {}\n", r.json_path);
  out += fmt::format("latency plot:    {}\n", r.plot_path.empty() ? "(not written: gnuplot failed or is missing)" : r.plot_path);
  out += fmt::format("Perfetto trace:  {}\n", r.trace_path.empty() ? r.trace_note : r.trace_path);
  out += fmt::format("logs, ring, raw: {}\n", r.run_dir);
  return out;
}

}  // namespace gshare::demo
