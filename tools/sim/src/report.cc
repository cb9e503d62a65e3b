// Table and JSON output of gshare-sim (see report.h).
#include "gshare/sim/report.h"

#include <algorithm>

#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace gshare::sim {

std::string FormatTable(const std::vector<RunResult>& runs) {
  std::string out = fmt::format("{:<34} {:>9} {:>8} {:>9} {:>10} {:>11} {:>5} {:>11} {:>9} {:>6}\n",
                                "policy", "requests", "SLO %", "p50 ms", "p99 ms", "GPU-s",
                                "peak", "swap GiB", "cost $", "viol");
  for (const RunResult& r : runs) {
    out += fmt::format("{:<34} {:>9} {:>8.3f} {:>9.2f} {:>10.2f} {:>11.1f} {:>5} {:>11.2f} {:>9.3f} {:>6}\n",
                       r.policy, r.requests, 100.0 * r.slo_attainment, r.p50_ms, r.p99_ms,
                       r.gpu_seconds, r.peak_gpus,
                       static_cast<double>(r.swap_bytes) / (1024.0 * 1024 * 1024), r.cost_usd,
                       r.violations);
  }
  return out;
}

std::string FormatMissCauses(const std::vector<RunResult>& runs) {
  if (runs.empty()) return "";
  const RunResult& first = runs.front();
  std::string out = fmt::format(
      "late requests by cause (% of all requests); ceiling = on time with a dedicated resident "
      "GPU per instance: {:.3f}%\n",
      first.requests ? 100.0 * static_cast<double>(first.dedicated_on_time) / static_cast<double>(first.requests) : 100.0);
  out += fmt::format("{:<34} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "policy", "late %",
                     "execution", "own queue", "cold start", "swap-in", "GPU queue");
  for (const RunResult& r : runs) {
    const double n = r.requests ? static_cast<double>(r.requests) / 100.0 : 1.0;
    const auto pct = [n](uint64_t v) { return static_cast<double>(v) / n; };
    out += fmt::format("{:<34} {:>9.3f} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f}\n", r.policy,
                       pct(r.requests - r.on_time), pct(r.late_execution), pct(r.late_self_queue),
                       pct(r.late_cold_start), pct(r.late_swap_in), pct(r.late_gpu_queue));
  }
  return out;
}

std::string FormatChurn(const std::vector<RunResult>& runs) {
  std::string out = fmt::format("{:<34} {:>9} {:>12} {:>10} {:>10}\n", "placement churn", "swap-ins",
                                "swap-in GiB", "migrations", "evictions");
  for (const RunResult& r : runs) {
    out += fmt::format("{:<34} {:>9} {:>12.2f} {:>10} {:>10}\n", r.policy, r.swap_ins,
                       static_cast<double>(r.swap_in_bytes) / (1024.0 * 1024 * 1024), r.migrations,
                       r.evictions);
  }
  return out;
}

namespace {
double Ceiling(const RunResult& r) {
  return r.requests ? static_cast<double>(r.dedicated_on_time) / static_cast<double>(r.requests) : 1.0;
}
double BusyShare(const RunResult& r) { return r.gpu_seconds > 0 ? r.busy_seconds / r.gpu_seconds : 0.0; }
double OverBound(const RunResult& r, const WorkloadBounds& b) {
  return b.lower_bound_seconds > 0 ? r.gpu_seconds / b.lower_bound_seconds : 0.0;
}
nlohmann::json BoundsJson(const WorkloadBounds& b) {
  return {{"lower_bound_gpu_seconds", b.lower_bound_seconds},
          {"busy_seconds", b.busy_seconds},
          {"memory_seconds", b.memory_seconds},
          {"hold_seconds", b.hold_seconds},
          {"unswappable_functions", b.unswappable_functions}};
}

nlohmann::json RunJson(const RunResult& r, const WorkloadBounds* bounds) {
  nlohmann::json run = {{"policy", r.policy},
                        {"requests", r.requests},
                        {"slo_attainment", r.slo_attainment},
                        {"p50_ms", r.p50_ms},
                        {"p99_ms", r.p99_ms},
                        {"gpu_seconds", r.gpu_seconds},
                        {"peak_gpus", r.peak_gpus},
                        {"swap_bytes", r.swap_bytes},
                        {"swap_ins", r.swap_ins},
                        {"swap_in_bytes", r.swap_in_bytes},
                        {"migrations", r.migrations},
                        {"evictions", r.evictions},
                        {"cost_usd", r.cost_usd},
                        {"completed", r.completed},
                        {"unfinished", r.unfinished},
                        {"solo_feasible", r.solo_feasible},
                        {"late_host", r.late_host},
                        {"late_parked", r.late_parked},
                        {"late_resident", r.late_resident},
                        {"late_causes", {{"execution", r.late_execution},
                                         {"self_queue", r.late_self_queue},
                                         {"cold_start", r.late_cold_start},
                                         {"swap_in", r.late_swap_in},
                                         {"gpu_queue", r.late_gpu_queue}}},
                        {"dedicated_attainment", Ceiling(r)},
                        {"busy_seconds", r.busy_seconds},
                        {"events", r.events},
                        {"rerouted", r.rerouted},
                        {"violations", r.violations},
                        {"memory_overcommits", r.memory_overcommits},
                        {"end_s", static_cast<double>(r.end_time) / 1e6}};
  if (!r.first_violation.empty()) run["first_violation"] = r.first_violation;
  if (r.corun_grants > 0 || r.corun_revocations > 0) {  // co-run GPUs only: other runs unchanged
    run["corun_grants"] = r.corun_grants;
    run["corun_revocations"] = r.corun_revocations;
  }
  if (bounds != nullptr) {
    run["ceiling_gap_points"] = 100.0 * (r.slo_attainment - Ceiling(r));
    run["busy_share"] = BusyShare(r);
    run["lower_bound_gpu_seconds"] = bounds->lower_bound_seconds;
    run["gpu_time_over_bound"] = OverBound(r, *bounds);
  }
  return run;
}
}  // namespace

std::string FormatLimits(const std::vector<RunResult>& runs, const WorkloadBounds& b) {
  std::string out = fmt::format(
      "against the limits: GPU time lower bound {:.1f} GPU-s = max(busy {:.1f}, memory {:.1f} "
      "of which {:.1f} held between requests; {} functions cannot always be restored in time)\n",
      b.lower_bound_seconds, b.busy_seconds, b.memory_seconds, b.hold_seconds, b.unswappable_functions);
  out += fmt::format("{:<34} {:>13} {:>8} {:>11} {:>10}\n", "policy", "SLO - ceiling", "busy %",
                     "GPU-s", "x bound");
  for (const RunResult& r : runs) {
    out += fmt::format("{:<34} {:>13.3f} {:>8.2f} {:>11.1f} {:>10.2f}\n", r.policy,
                       100.0 * (r.slo_attainment - Ceiling(r)), 100.0 * BusyShare(r), r.gpu_seconds,
                       OverBound(r, b));
  }
  return out;
}

std::string FormatJson(const std::vector<RunResult>& runs, const std::string& description,
                       const WorkloadBounds* bounds) {
  nlohmann::json j;
  j["workload"] = description;
  if (bounds != nullptr) j["bounds"] = BoundsJson(*bounds);
  j["runs"] = nlohmann::json::array();
  for (const RunResult& r : runs) j["runs"].push_back(RunJson(r, bounds));
  return j.dump(2) + "\n";
}

std::string FormatClusterTable(const std::vector<ClusterResult>& results, const WorkloadBounds& b) {
  std::string out = fmt::format("{:<34} {:<16} {:>8} {:>13} {:>11} {:>8} {:>9} {:>6} {:>7} {:>6}\n",
                                "policy", "placement", "SLO %", "SLO - ceiling", "GPU-s", "busy %",
                                "x bound", "nodes", "unsched", "viol");
  for (const ClusterResult& c : results) {
    const RunResult& r = c.total;
    out += fmt::format("{:<34} {:<16} {:>8.3f} {:>13.3f} {:>11.1f} {:>8.2f} {:>9.2f} {:>6} {:>7} {:>6}\n",
                       r.policy, NodeScoreName(c.score), 100.0 * r.slo_attainment,
                       100.0 * (r.slo_attainment - Ceiling(r)), r.gpu_seconds, 100.0 * BusyShare(r),
                       OverBound(r, b), c.nodes_used, c.unschedulable_instances, r.violations);
  }
  return out;
}

std::string FormatClusterJson(const std::vector<ClusterResult>& results, const std::string& description,
                              int nodes, const WorkloadBounds& b) {
  nlohmann::json j;
  j["workload"] = description;
  j["nodes"] = nodes;
  j["bounds"] = BoundsJson(b);
  j["cluster"] = nlohmann::json::array();
  for (const ClusterResult& c : results) {
    nlohmann::json run = RunJson(c.total, &b);
    run["score"] = NodeScoreName(c.score);
    run["nodes_used"] = c.nodes_used;
    run["unschedulable_instances"] = c.unschedulable_instances;
    run["unschedulable_requests"] = c.unschedulable_requests;
    run["node_gpu_seconds_max"] =
        c.node_gpu_seconds.empty() ? 0.0 : *std::max_element(c.node_gpu_seconds.begin(), c.node_gpu_seconds.end());
    j["cluster"].push_back(std::move(run));
  }
  return j.dump(2) + "\n";
}

}  // namespace gshare::sim
