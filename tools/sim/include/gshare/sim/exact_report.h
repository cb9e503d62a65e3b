// gshare-sim --exact: cuts small instances out of a workload, solves each exactly (CBC when
// built with it, brute force otherwise), simulates every policy on
// the same instance, and reports each policy's cost efficiency (requests on time per GPU-second)
// relative to the optimum's, and the decision times.
//
// Thread-safety: reentrant.
#pragma once

#include <string>
#include <vector>

#include "gshare/policy/exact.h"
#include "gshare/policy/policy.h"
#include "gshare/sim/engine.h"

namespace gshare::sim {

struct ExactOptions {
  int instances = 5;        // windows graded (non-overlapping)
  int requests = 6;         // requests per instance
  int gpus = 2;             // GPUs per instance (at most the node's); see serve_all
  // The optimum must serve every request on time, as the online policies must (a FaaS
  // platform cannot drop requests): each window gets the fewest GPUs, from `gpus` up, on which
  // that is possible, and the policies run on as many. Without it the optimum may drop
  // requests at no cost while the policies still pay GPU time for serving them late.
  bool serve_all = true;
  // Which windows: the densest (smallest time span; bursts, where sharing decisions matter
  // most) or, with random_windows, starting at random eligible requests (seeded:
  // representative of the workload, models mixed).
  bool random_windows = false;
  uint64_t seed = 1;
  int max_choices = 10;     // start steps per request: sets the time step ...
  int max_steps = 150;      // ... and so does a bound on the horizon
  // Discretise with relaxed rounding (policy::Discretize): the optimum then bounds every
  // policy; with safe rounding it may serve fewer requests than a policy does.
  bool relaxed = true;
  // Print every window's schedules on stderr: per request its model, arrival, execution and
  // SLO; the optimum's GPU and start; each policy's GPU, start and latency (late marked): to
  // compare, window by window, what the optimum does with what a policy does.
  bool detail = false;
};

struct ExactRow {
  std::string policy;
  // Mean over instances of the policy's efficiency / the optimum's, the policy's GPU time
  // counted to each GPU's last use (RunResult::gpu_seconds_to_last_use: the keep-warm tail
  // after the window's last request is left out, as the optimum has none) ...
  double efficiency_ratio = 0;
  double efficiency_ratio_tail = 0;  // ... and with that tail counted
  double decision_seconds = 0;   // mean total time inside the policy per instance
  double solve_seconds = 0;      // mean exact solve time per instance
  int instances = 0;             // instances where the optimum was feasible
  double on_time = 0;            // mean requests the policy served on time per instance
  double opt_served = 0;         // mean requests the optimum served per instance
  double gpu_ratio = 0;          // mean of optimum's GPU-seconds / policy's (to last use)
  double gpus = 0;               // mean GPUs per instance
  int all_on_time = 0;           // instances where the policy served every request on time
};

std::vector<ExactRow> GradeAgainstExact(const SimWorkload& workload, const SimOptions& options,
                                        const std::vector<std::string>& policies,
                                        const ExactOptions& exact, std::string* solver_name);

// The rows as text (one table), for the terminal.
std::string FormatExactRows(const std::vector<ExactRow>& rows);

// Both gradings as text (densest and random windows, every request served), for the terminal.
std::string ExactReport(const SimWorkload& workload, const SimOptions& options,
                        const std::vector<std::string>& policies, const ExactOptions& base);

}  // namespace gshare::sim
