// The exact offline scheduler used to grade the online policies on small instances, never in
// the live loop. The model is discretised in time steps:
//  - request r of function f is either served on time — it starts on GPU g at step s with
//    arrival_r <= s and s + exec_r <= deadline_r — or dropped (counted as late);
//  - a GPU runs one request at a time;
//  - f must be resident on g while its request runs; becoming resident takes load_f steps of
//    loading from the host (a full restore, as the simulator charges it: SwapInCost);
//  - loads onto one GPU are serialised on its link, one at a time, as in the simulator; a load
//    may start any time from step 0 (the solver is clairvoyant: a lower bound on the online
//    policies' cost; it has no parked state, which a policy may use to swap in faster);
//  - while loading or resident, f holds bytes_f of g's memory (<= memory per GPU);
//  - a GPU is active at a step if any function is loading or resident on it;
//  - objective: serve as many requests as possible, then minimise active GPU-steps
//    (lexicographic: a dropped request costs more than every GPU-step of the instance); or,
//    with `serve_all` (what a FaaS platform must do, and how the online policies are graded),
//    serve every request on time and minimise active GPU-steps (infeasible when impossible).
// Backends: brute force (tiny instances, always available) and an integer program solved with
// CBC (coinor-libcbc-dev; only when built with GSHARE_HAVE_CBC).
//
// Thread-safety: solvers hold no state between Solve() calls; distinct solvers are independent.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gshare/common/status.h"
#include "gshare/policy/types.h"

namespace gshare::policy {

struct ExactFunction {
  uint64_t bytes = 0;  // memory while loading or resident
  int load = 0;        // steps to load from the host
};

struct ExactRequest {
  int function = 0;
  int arrival = 0;   // first step it may start
  int deadline = 0;  // it must end by this step
  int exec = 1;      // steps of execution (>= 1)
};

struct ExactInstance {
  std::vector<ExactFunction> functions;
  std::vector<ExactRequest> requests;
  int gpus = 1;
  uint64_t gpu_memory = 0;
  int horizon = 0;     // steps 0..horizon-1 (>= every deadline)
  Duration step = 1000;
  bool serve_all = false;  // no request may be dropped (see the objective above)
};

struct ExactSolution {
  bool feasible = false;        // a solution was found (always without serve_all)
  int64_t cost = 0;             // active GPU-steps
  int served = 0;               // requests served on time
  std::vector<int> gpu, start;  // per request; gpu -1: dropped
  double solve_seconds = 0;
};

class ExactSolver {
 public:
  virtual ~ExactSolver() = default;
  virtual const char* name() const = 0;
  // Minimises the active GPU-steps of `instance`. REQUIRES: a well-formed instance (every
  // function index valid, exec >= 1, deadlines <= horizon). Infeasibility is a solution
  // (feasible false); a non-OK Status is a backend failure whose message says what failed:
  // kTimeout (CBC stopped at its time limit without a proven optimum) or kMalformed (CBC's
  // solution breaks the model).
  virtual Result<ExactSolution> Solve(const ExactInstance& instance) = 0;
};

// Always available; exponential: meant for instances of up to about 6 requests.
std::unique_ptr<ExactSolver> MakeBruteForceSolver();
// The CBC integer program; nullptr when gshare was built without CBC.
std::unique_ptr<ExactSolver> MakeCbcSolver();

// One request of a continuous-time workload for Discretize().
struct TimedRequest {
  Time arrival = 0;
  FunctionId function = 0;
  Duration exec = 1;
};

// Builds an instance from continuous times: arrivals round up, deadlines (arrival + slo) round
// down, execution and load times (SwapInCost from the host on `gpu`) round up, all in steps of
// `step` microseconds relative to the first arrival. With `lead_in`, times start after a
// lead-in of the longest load, so the optimum may load before the first request arrives;
// without it, optimum and online policies start from the same cold state. With `relaxed`, the
// rounding goes the other way (arrivals, execution and load times down, deadlines up), so any
// continuous-time schedule fits the grid and the optimum is a bound on every policy: at least
// as many requests on time, at no more GPU time for them.
ExactInstance Discretize(const std::vector<FunctionSpec>& functions,
                         const std::vector<TimedRequest>& requests, int gpus, const GpuSpec& gpu,
                         Duration step, bool lead_in = false, bool relaxed = false);

// The active GPU-steps of a given assignment (gpu[r], start[r]; gpu[r] = -1 drops r), choosing
// optimally for each function whether to stay resident between its uses on a GPU and in which
// order the loads of one GPU use its link; -1 if the assignment breaks a constraint.
// Exponential in the gaps between uses and in the loads per GPU; used by the brute-force solver
// and by tests to check other backends' answers.
int64_t EvaluateAssignment(const ExactInstance& instance, const std::vector<int>& gpu,
                           const std::vector<int>& start);

}  // namespace gshare::policy
