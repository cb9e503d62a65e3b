// Grading online policies against the exact optimum on small instances (see exact_report.h).
#include "gshare/sim/exact_report.h"

#include <algorithm>
#include <map>

#include "fmt/format.h"

namespace gshare::sim {

namespace {

// The first `n` requests from `first` on that can meet their SLO even from a cold start (host
// restore + execution within it: otherwise the optimum drops them while an online policy must
// still serve them late, and the comparison measures that rather than scheduling), with their
// functions renumbered and times rebased.
SimWorkload Cut(const SimWorkload& w, size_t first, size_t n, const policy::GpuSpec& gpu) {
  SimWorkload out;
  std::map<FunctionId, FunctionId> ids;
  const Time t0 = w.requests[first].arrival;
  for (size_t i = first; out.requests.size() < n && i < w.requests.size(); ++i) {
    const SimRequest& r = w.requests[i];
    const policy::FunctionSpec& f = w.functions[r.function];
    if (r.exec + policy::SwapInCost(f, policy::Residency::kHost, policy::kNoGpu, 0, gpu).time > f.slo) {
      continue;
    }
    auto [it, fresh] = ids.emplace(r.function, static_cast<FunctionId>(out.functions.size()));
    if (fresh) out.functions.push_back(w.functions[r.function]);
    out.requests.push_back({r.arrival - t0, it->second, r.exec});
  }
  return out;
}

}  // namespace

std::vector<ExactRow> GradeAgainstExact(const SimWorkload& workload, const SimOptions& options,
                                        const std::vector<std::string>& policies,
                                        const ExactOptions& exact, std::string* solver_name) {
  std::vector<ExactRow> rows(policies.size());
  for (size_t p = 0; p < policies.size(); ++p) rows[p].policy = policies[p];
  auto solver = policy::MakeCbcSolver();
  if (!solver) solver = policy::MakeBruteForceSolver();
  if (solver_name) *solver_name = solver->name();
  const size_t n = static_cast<size_t>(exact.requests);
  if (workload.requests.size() < n || options.gpus.empty()) return rows;
  SimOptions small = options;
  small.gpus.resize(static_cast<size_t>(std::min<int>(exact.gpus, static_cast<int>(options.gpus.size()))));
  small.record_timeline = false;
  policy::PolicyConfig config;
  config.gpus = small.gpus;
  // The densest windows of n consecutive requests (smallest time span), non-overlapping: bursts
  // are where sharing decisions matter, and short spans keep the time grid small.
  std::vector<size_t> eligible;  // requests Cut() keeps
  for (size_t i = 0; i < workload.requests.size(); ++i) {
    const SimRequest& r = workload.requests[i];
    const policy::FunctionSpec& f = workload.functions[r.function];
    const Duration cold =
        policy::SwapInCost(f, policy::Residency::kHost, policy::kNoGpu, 0, options.gpus[0]).time;
    if (r.exec + cold <= f.slo) eligible.push_back(i);
  }
  std::vector<std::pair<Time, size_t>> spans;
  for (size_t k = 0; k + n <= eligible.size(); ++k) {
    spans.emplace_back(workload.requests[eligible[k + n - 1]].arrival -
                           workload.requests[eligible[k]].arrival,
                       eligible[k]);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<size_t> firsts;
  for (const auto& [span, i] : spans) {
    if (static_cast<int>(firsts.size()) == exact.instances) break;
    bool apart = true;
    for (size_t f : firsts) apart &= (i >= f + n || f >= i + n);
    if (apart) firsts.push_back(i);
  }
  for (size_t first : firsts) {
    const SimWorkload inst = Cut(workload, first, n, options.gpus[0]);
    if (inst.requests.size() < n) continue;
    Duration max_slo = 0;
    for (const auto& f : inst.functions) max_slo = std::max(max_slo, f.slo);
    const Duration span = inst.requests.back().arrival + max_slo;
    const Duration step = std::max<Duration>(
        {1000, max_slo / exact.max_choices, span / exact.max_steps});
    std::vector<policy::TimedRequest> timed;
    for (const SimRequest& r : inst.requests) timed.push_back({r.arrival, r.function, r.exec});
    const policy::ExactInstance ei = policy::Discretize(inst.functions, timed,
                                                        static_cast<int>(small.gpus.size()),
                                                        small.gpus[0], step, /*lead_in=*/false,
                                                        exact.relaxed);
    const policy::ExactSolution opt = solver->Solve(ei);
    if (!opt.feasible || opt.cost <= 0 || opt.served == 0) continue;
    const double opt_eff = static_cast<double>(opt.served) /
                           (static_cast<double>(opt.cost * step) / policy::kUsPerSecond);
    for (size_t p = 0; p < policies.size(); ++p) {
      auto made = policy::Make(policies[p], config);
      if (!made.ok()) continue;
      const RunResult r = Simulate(inst, small, *made.policy, /*measure_policy_time=*/true);
      const double eff = r.gpu_seconds > 0 ? static_cast<double>(r.on_time) / r.gpu_seconds : 0;
      rows[p].efficiency_ratio += eff / opt_eff;
      rows[p].on_time += static_cast<double>(r.on_time);
      rows[p].opt_served += opt.served;
      rows[p].decision_seconds += r.policy_seconds;
      rows[p].solve_seconds += opt.solve_seconds;
      ++rows[p].instances;
    }
  }
  for (ExactRow& row : rows) {
    if (row.instances == 0) continue;
    row.efficiency_ratio /= row.instances;
    row.decision_seconds /= row.instances;
    row.solve_seconds /= row.instances;
    row.on_time /= row.instances;
    row.opt_served /= row.instances;
  }
  return rows;
}

std::string ExactReport(const SimWorkload& workload, const SimOptions& options,
                        const std::vector<std::string>& policies, const policy::PolicyConfig& /*config*/) {
  std::string solver;
  const ExactOptions exact;
  const auto rows = GradeAgainstExact(workload, options, policies, exact, &solver);
  std::string out = fmt::format(
      "exact ({} solver; {} instances of {} requests on {} GPUs): cost efficiency = requests on "
      "time per GPU-second, relative to the optimum\n",
      solver, exact.instances, exact.requests, exact.gpus);
  out += fmt::format("{:<34} {:>10} {:>10} {:>15} {:>14} {:>12} {:>9}\n", "policy", "instances",
                     "eff/opt", "on time/opt", "decide (us)", "solve (ms)", "speedup");
  for (const ExactRow& r : rows) {
    out += fmt::format("{:<34} {:>10} {:>10.3f} {:>7.1f}/{:<7.1f} {:>14.1f} {:>12.1f} {:>9.0f}\n",
                       r.policy, r.instances, r.efficiency_ratio, r.on_time, r.opt_served,
                       r.decision_seconds * 1e6,
                       r.solve_seconds * 1e3,
                       r.decision_seconds > 0 ? r.solve_seconds / r.decision_seconds : 0.0);
  }
  return out;
}

}  // namespace gshare::sim
