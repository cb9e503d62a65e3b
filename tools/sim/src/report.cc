// Table and JSON output of gshare-sim (see report.h).
#include "gshare/sim/report.h"

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

std::string FormatJson(const std::vector<RunResult>& runs, const std::string& description) {
  nlohmann::json j;
  j["workload"] = description;
  j["runs"] = nlohmann::json::array();
  for (const RunResult& r : runs) {
    j["runs"].push_back({{"policy", r.policy},
                         {"requests", r.requests},
                         {"slo_attainment", r.slo_attainment},
                         {"p50_ms", r.p50_ms},
                         {"p99_ms", r.p99_ms},
                         {"gpu_seconds", r.gpu_seconds},
                         {"peak_gpus", r.peak_gpus},
                         {"swap_bytes", r.swap_bytes},
                         {"cost_usd", r.cost_usd},
                         {"completed", r.completed},
                         {"unfinished", r.unfinished},
                         {"solo_feasible", r.solo_feasible},
                         {"late_host", r.late_host},
                         {"late_parked", r.late_parked},
                         {"late_resident", r.late_resident},
                         {"busy_seconds", r.busy_seconds},
                         {"events", r.events},
                         {"violations", r.violations},
                         {"memory_overcommits", r.memory_overcommits},
                         {"end_s", static_cast<double>(r.end_time) / 1e6}});
    if (!r.first_violation.empty()) j["runs"].back()["first_violation"] = r.first_violation;
  }
  return j.dump(2) + "\n";
}

}  // namespace gshare::sim
