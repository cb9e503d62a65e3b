// Grading online policies against the exact optimum on small instances (see exact_report.h).
#include "gshare/sim/exact_report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <utility>

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

namespace {

// Window starts (indices into `eligible`): the densest non-overlapping windows of n eligible
// requests, or (random) non-overlapping windows at seeded random starts.
std::vector<size_t> WindowStarts(const SimWorkload& workload, const std::vector<size_t>& eligible,
                                 size_t n, const ExactOptions& exact) {
  std::vector<size_t> firsts;
  if (eligible.size() < n) return firsts;
  const size_t choices = eligible.size() - n + 1;
  const auto apart = [&](size_t k) {
    for (size_t f : firsts) {
      if (!(k >= f + n || f >= k + n)) return false;
    }
    return true;
  };
  if (exact.random_windows) {
    std::mt19937_64 rng(exact.seed);
    std::uniform_int_distribution<size_t> pick(0, choices - 1);
    for (int tries = 0; tries < 100 * exact.instances &&
                        static_cast<int>(firsts.size()) < exact.instances;
         ++tries) {
      const size_t k = pick(rng);
      if (apart(k)) firsts.push_back(k);
    }
    return firsts;
  }
  std::vector<std::pair<Time, size_t>> spans;
  for (size_t k = 0; k < choices; ++k) {
    spans.emplace_back(workload.requests[eligible[k + n - 1]].arrival -
                           workload.requests[eligible[k]].arrival,
                       k);
  }
  std::sort(spans.begin(), spans.end());
  for (const auto& [span, k] : spans) {
    if (static_cast<int>(firsts.size()) == exact.instances) break;
    if (apart(k)) firsts.push_back(k);
  }
  return firsts;
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
  std::vector<size_t> eligible;  // requests Cut() keeps
  for (size_t i = 0; i < workload.requests.size(); ++i) {
    const SimRequest& r = workload.requests[i];
    const policy::FunctionSpec& f = workload.functions[r.function];
    const Duration cold =
        policy::SwapInCost(f, policy::Residency::kHost, policy::kNoGpu, 0, options.gpus[0]).time;
    if (r.exec + cold <= f.slo) eligible.push_back(i);
  }
  const int most_gpus = static_cast<int>(std::min(options.gpus.size(), n));
  for (size_t k : WindowStarts(workload, eligible, n, exact)) {
    const SimWorkload inst = Cut(workload, eligible[k], n, options.gpus[0]);
    if (inst.requests.size() < n) continue;
    Duration max_slo = 0;
    for (const auto& f : inst.functions) max_slo = std::max(max_slo, f.slo);
    const Duration span = inst.requests.back().arrival + max_slo;
    const Duration step = std::max<Duration>(
        {1000, max_slo / exact.max_choices, span / exact.max_steps});
    std::vector<policy::TimedRequest> timed;
    for (const SimRequest& r : inst.requests) timed.push_back({r.arrival, r.function, r.exec});
    // The fewest GPUs (from exact.gpus) on which the optimum is feasible; without serve_all,
    // exact.gpus (a drop is always feasible).
    policy::ExactSolution opt;
    Status failed;  // the solver's failure, if it failed (not infeasibility)
    int gpus = std::min(exact.gpus, static_cast<int>(options.gpus.size()));
    double solve_seconds = 0;
    for (;; ++gpus) {
      policy::ExactInstance ei = policy::Discretize(inst.functions, timed, gpus, options.gpus[0],
                                                    step, /*lead_in=*/false, exact.relaxed);
      ei.serve_all = exact.serve_all;
      const auto t0 = std::chrono::steady_clock::now();
      auto solved = solver->Solve(ei);
      if (!solved.ok()) {
        failed = solved.status();
        opt = policy::ExactSolution{};
        solve_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        break;
      }
      opt = std::move(*solved);
      solve_seconds += opt.solve_seconds;
      if (opt.feasible || !exact.serve_all || gpus >= most_gpus) break;
    }
    std::fprintf(stderr, "exact: %s window at eligible request %zu: %d GPUs, %s, %.1f s\n",
                 exact.random_windows ? "random" : "dense", k, gpus, opt.feasible ? "solved" : (failed.ok() ? "infeasible" : failed.message().c_str()),
                 solve_seconds);
    if (!failed.ok() || !opt.feasible || opt.cost <= 0 || opt.served == 0) continue;
    SimOptions small = options;
    small.gpus.resize(static_cast<size_t>(gpus));
    small.record_timeline = false;
    small.record_requests = exact.detail;
    if (exact.detail) {
      for (size_t i = 0; i < inst.requests.size(); ++i) {
        const SimRequest& r = inst.requests[i];
        const policy::FunctionSpec& f = inst.functions[r.function];
        std::fprintf(stderr, "exact:   r%zu f%u %s at %.0f ms, exec %.0f ms, slo %.0f ms: optimum gpu %d start %.0f ms\n",
                     i, r.function, f.model.c_str(), static_cast<double>(r.arrival) / 1000,
                     static_cast<double>(r.exec) / 1000, static_cast<double>(f.slo) / 1000,
                     opt.gpu[i], static_cast<double>(opt.start[i] * step) / 1000);
      }
    }
    policy::PolicyConfig config;
    config.gpus = small.gpus;
    const double opt_seconds = static_cast<double>(opt.cost * step) / policy::kUsPerSecond;
    const double opt_eff = static_cast<double>(opt.served) / opt_seconds;
    for (size_t p = 0; p < policies.size(); ++p) {
      auto made = policy::Make(policies[p], config);
      if (!made.ok()) continue;
      const RunResult r = Simulate(inst, small, **made, /*measure_policy_time=*/true);
      if (exact.detail) {
        std::string line;
        for (size_t i = 0; i < inst.requests.size(); ++i) {
          const bool late = r.latencies[i] < 0 || r.latencies[i] > inst.functions[inst.requests[i].function].slo;
          line += fmt::format(" r{}:g{}@{:.0f}+{:.0f}{}", i, r.request_gpu[i],
                              static_cast<double>(r.request_start[i] - inst.requests[i].arrival) / 1000,
                              static_cast<double>(r.latencies[i]) / 1000, late ? "LATE" : "");
        }
        std::fprintf(stderr, "exact:   %s: %.2f GPU-s to last use (optimum %.2f):%s\n", policies[p].c_str(),
                     r.gpu_seconds_to_last_use, opt_seconds, line.c_str());
      }
      const auto eff = [&](double seconds) {
        return seconds > 0 ? static_cast<double>(r.on_time) / seconds : 0.0;
      };
      rows[p].efficiency_ratio += eff(r.gpu_seconds_to_last_use) / opt_eff;
      rows[p].efficiency_ratio_tail += eff(r.gpu_seconds) / opt_eff;
      rows[p].gpu_ratio += r.gpu_seconds_to_last_use > 0 ? opt_seconds / r.gpu_seconds_to_last_use : 0;
      rows[p].on_time += static_cast<double>(r.on_time);
      rows[p].opt_served += opt.served;
      rows[p].gpus += gpus;
      rows[p].all_on_time += r.on_time == r.requests ? 1 : 0;
      rows[p].decision_seconds += r.policy_seconds;
      rows[p].solve_seconds += solve_seconds;
      ++rows[p].instances;
    }
  }
  for (ExactRow& row : rows) {
    if (row.instances == 0) continue;
    row.efficiency_ratio /= row.instances;
    row.efficiency_ratio_tail /= row.instances;
    row.gpu_ratio /= row.instances;
    row.decision_seconds /= row.instances;
    row.solve_seconds /= row.instances;
    row.on_time /= row.instances;
    row.opt_served /= row.instances;
    row.gpus /= row.instances;
  }
  return rows;
}

std::string FormatExactRows(const std::vector<ExactRow>& rows) {
  std::string out = fmt::format("{:<34} {:>9} {:>5} {:>8} {:>9} {:>9} {:>15} {:>7} {:>12} {:>12} {:>9}\n",
                                "policy", "instances", "GPUs", "eff/opt", "w/ tail", "GPU-s opt",
                                "on time/opt", "all ok", "decide (us)", "solve (ms)", "speedup");
  for (const ExactRow& r : rows) {
    out += fmt::format("{:<34} {:>9} {:>5.1f} {:>8.3f} {:>9.3f} {:>9.3f} {:>7.1f}/{:<7.1f} {:>7} {:>12.1f} {:>12.1f} {:>9.0f}\n",
                       r.policy, r.instances, r.gpus, r.efficiency_ratio, r.efficiency_ratio_tail,
                       r.gpu_ratio, r.on_time,
                       r.opt_served, r.all_on_time, r.decision_seconds * 1e6,
                       r.solve_seconds * 1e3,
                       r.decision_seconds > 0 ? r.solve_seconds / r.decision_seconds : 0.0);
  }
  return out;
}

std::string ExactReport(const SimWorkload& workload, const SimOptions& options,
                        const std::vector<std::string>& policies, const ExactOptions& base) {
  std::string solver;
  std::string out;
  for (const bool random : {false, true}) {
    ExactOptions exact = base;
    exact.random_windows = random;
    const auto rows = GradeAgainstExact(workload, options, policies, exact, &solver);
    out += fmt::format(
        "exact ({} solver; {} {} windows of {} requests; every request served, on the fewest GPUs "
        "from {} that allow it): eff/opt = (requests on time per GPU-second, GPU time to each "
        "GPU's last use) / the optimum's; w/ tail: counting the keep-warm tail after the last "
        "request; GPU-s opt = optimum's GPU-seconds / the policy's\n",
        solver, exact.instances, random ? "random" : "densest", exact.requests, exact.gpus);
    out += FormatExactRows(rows);
  }
  return out;
}

}  // namespace gshare::sim
