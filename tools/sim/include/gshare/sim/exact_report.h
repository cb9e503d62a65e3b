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
  int instances = 5;        // the densest non-overlapping windows of the workload
  int requests = 6;         // requests per instance
  int gpus = 2;             // GPUs per instance (at most the node's)
  int max_choices = 16;     // start steps per request: sets the time step ...
  int max_steps = 300;      // ... and so does a bound on the horizon
  // Discretise with relaxed rounding (policy::Discretize): the optimum then bounds every
  // policy; with safe rounding it may serve fewer requests than a policy does.
  bool relaxed = true;
};

struct ExactRow {
  std::string policy;
  double efficiency_ratio = 0;   // mean over instances of policy efficiency / optimum's
  double decision_seconds = 0;   // mean total time inside the policy per instance
  double solve_seconds = 0;      // mean exact solve time per instance
  int instances = 0;             // instances where the optimum was feasible
  double on_time = 0;            // mean requests the policy served on time per instance
  double opt_served = 0;         // mean requests the optimum served per instance
};

std::vector<ExactRow> GradeAgainstExact(const SimWorkload& workload, const SimOptions& options,
                                        const std::vector<std::string>& policies,
                                        const ExactOptions& exact, std::string* solver_name);

// The rows as text, for the terminal.
std::string ExactReport(const SimWorkload& workload, const SimOptions& options,
                        const std::vector<std::string>& policies, const policy::PolicyConfig& config);

}  // namespace gshare::sim
