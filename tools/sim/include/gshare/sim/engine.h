// The discrete-event simulation of one node with G GPUs that drives a policy::Policy exactly as
// the arbiter does: request arrivals, per-function queueing, swap-in/out over each GPU's host
// link (transfers on one link are serialised, one direction at a time), execution (one tenant
// at a time per GPU, optionally in time slices), context memory per resident function, GPUs
// powered on and off as the policy decides, SLO and GPU-time accounting.
//
// The simulator keeps its own state and checks every action against the preconditions of
// policy.h; a violation is counted (and the action skipped), never trusted.
//
// Thread-safety: Simulate() is reentrant; it touches only its arguments.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gshare/policy/policy.h"

namespace gshare::sim {

using policy::Duration;
using policy::FunctionId;
using policy::Time;

struct SimRequest {
  Time arrival = 0;
  FunctionId function = 0;
  Duration exec = 1;  // GPU execution time (the environment knows it; the policy does not)
};

struct SimWorkload {
  std::vector<policy::FunctionSpec> functions;  // FunctionId = index
  std::vector<SimRequest> requests;             // sorted by arrival
  // Instances of one platform function: group[i] is one instance of i's function, the same for
  // all of them (inputs.cc: the first), so group[group[i]] == group[i] (empty: every instance
  // is its own function). Used by SimOptions::warm_routing.
  std::vector<FunctionId> group = {};
};

// GPU `gpu` is unavailable over [from, to): the policy gets GpuUnavailable at `from` and
// GpuAvailable at `to` (an operator's drain and undrain).
struct Outage {
  policy::GpuId gpu = 0;
  Time from = 0;
  Time to = policy::kNever;
};

struct SimOptions {
  // The node's GPUs as they really are (memory, link bandwidth charged for transfers). The
  // policy is told PolicyConfig::gpus, which may differ (the live arbiter tells the policy a
  // default link bandwidth; the policy learns the real one from completed swap-ins).
  std::vector<policy::GpuSpec> gpus;
  bool record_timeline = true;  // keep the (time, active GPUs) steps for plots
  std::vector<Outage> outages;  // need not be sorted; each gpu < gpus.size()
  // Evictions copy what they free to the host over the GPU's link (a swap-out its weights, a
  // deep eviction its whole footprint), as the live arbiter's same-address swap does; the
  // swap-ins issued after one on that GPU start after its copy (the live arbiter frees the
  // memory only when the swap-out is acknowledged). Default false: the host keeps a snapshot of
  // the weights, a swap-out is free and a deep eviction copies only the context (the model of
  // the published tables, docs/scheduling.md). Tell the policy the same
  // (PolicyConfig::swap_out_copies).
  bool swap_out_copies = false;
  // A router that sees which instances are warm (what the live arbiter would expose): each
  // request goes, at its arrival, to an instance of its function (SimWorkload::group) that is
  // idle and resident (no request of its own outstanding, its state on a GPU, no transfer in
  // flight), else idle and parked, else idle, else the one with the fewest outstanding
  // requests; the lowest-numbered among equals, the request's own instance first. Without it
  // each request goes to the instance it names.
  bool warm_routing = false;
  // Record each request's GPU and first grant (RunResult::request_gpu, request_start): for
  // comparing a policy's schedule with the exact optimum's, window by window.
  bool record_requests = false;
  // Co-running: GPUs whose GpuSpec::corun is set run the bursts granted on them at the same
  // time, each at its rate under the contention model (policy/interference.h), recomputed
  // whenever a holder starts or finishes (processor sharing); a GPU's busy time counts once
  // while it has any holder. Functions of different fault domains co-run only with this set
  // (the policy is told the same: PolicyConfig::corun_across_domains).
  bool corun_across_domains = false;
};

struct RunResult {
  std::string policy;
  uint64_t requests = 0;
  uint64_t on_time = 0;      // completed within their function's SLO
  uint64_t completed = 0;
  uint64_t unfinished = 0;   // never completed (counted as SLO misses)
  uint64_t solo_feasible = 0;  // requests whose own execution fits their SLO (the ceiling)
  // Late requests by where their function's state was when they arrived.
  uint64_t late_host = 0, late_parked = 0, late_resident = 0;
  // Late requests by cause (each late request counts once; see MissCause):
  //  execution:  its own execution exceeds the SLO (no policy can make it);
  //  self_queue: the largest delay was waiting for its own instance's earlier requests;
  //  cold_start: ... was a swap-in from the host (restore, or migration from another GPU);
  //  swap_in:    ... was a swap-in of the weights of a parked function;
  //  gpu_queue:  ... was waiting for the GPU (other tenants) or for the policy to place it.
  uint64_t late_execution = 0, late_self_queue = 0, late_cold_start = 0, late_swap_in = 0,
           late_gpu_queue = 0;
  // Requests that a dedicated, always-resident GPU per instance would serve on time (only
  // its own queueing and execution count): the ceiling of any policy under this workload.
  uint64_t dedicated_on_time = 0;
  double slo_attainment = 0; // on_time / requests
  double p50_ms = 0, p99_ms = 0;
  double gpu_seconds = 0;    // sum over GPUs of time active
  // The same, except that a GPU still active at the end counts only until the end of the last
  // burst it ran (its keep-warm tail is left out, as the exact model has none after its
  // horizon). Used to grade short windows against the exact optimum.
  double gpu_seconds_to_last_use = 0;
  double busy_seconds = 0;   // sum of granted execution (a co-run GPU: time with any holder)
  uint64_t corun_grants = 0;       // grants with corun = true
  uint64_t corun_revocations = 0;  // the policy's (Policy::corun_stats)
  int peak_gpus = 0;
  uint64_t swap_bytes = 0;   // bytes over all links, both directions
  // Placement churn: swap-ins issued (and the bytes they moved), those that moved a function
  // off the GPU its state was last on (migrations), and evictions (swap-outs + deep evictions).
  uint64_t swap_ins = 0, swap_in_bytes = 0, migrations = 0, evictions = 0;
  double cost_usd = 0;
  uint64_t events = 0;       // events delivered to the policy
  double policy_seconds = 0; // wall time spent inside Policy::Handle (when measured)
  uint64_t violations = 0;   // actions that broke policy.h's preconditions
  std::string first_violation;
  uint64_t memory_overcommits = 0;  // times a GPU's used memory exceeded its size (must be 0)
  // Functions whose state was still on a GPU when its outage ended (it should have moved off).
  uint64_t outage_residue = 0;
  uint64_t rerouted = 0;  // warm_routing: requests sent to another instance than they named
  Time end_time = 0;
  std::vector<Duration> latencies;  // per request, by index; -1: never completed
  // With SimOptions::record_requests, per request: the GPU that ran it and its first grant
  // (-1: never completed); else empty.
  std::vector<int> request_gpu;
  std::vector<Time> request_start;
  std::vector<std::pair<Time, int>> timeline;      // (time, active GPUs) at every change
};

// Sets r->p50_ms and r->p99_ms from r->latencies (completed requests only).
void SummariseLatencies(RunResult* r);

// Runs `workload` on a node with options.gpus under `policy` (freshly made, not yet Started).
// REQUIRES: every request's function < workload.functions.size(); requests sorted by arrival.
RunResult Simulate(const SimWorkload& workload, const SimOptions& options, policy::Policy& policy,
                   bool measure_policy_time = false);

}  // namespace gshare::sim
