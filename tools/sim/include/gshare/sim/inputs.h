// Turns gshare-sim's workload options into a SimWorkload: reads a trace (azure-llm,
// azure-functions, csv) or generates a synthetic one with gshare_workload, gives each function
// a catalog model (seeded), samples each request's execution time, derives each function's
// SLO (max(floor, factor x p90 of its requests' execution times), the reference's rule), and
// splits busy functions into instances.
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>

#include "gshare/common/status.h"
#include "gshare/sim/engine.h"

namespace gshare::sim {

struct InputOptions {
  std::string trace;           // file; empty with `synthetic`
  std::string format = "azure-llm";  // azure-llm | azure-functions | csv
  bool synthetic = false;
  std::string catalog;         // TOML file; empty: the built-in default catalog
  uint32_t functions = 100;    // azure-llm: functions the requests are spread over; synthetic: count;
                               // azure-functions: keep the most-invoked N (0: all)
  double duration_s = 3600;    // synthetic trace length
  double time_compression = 1; // divide trace times by this
  uint64_t max_requests = 0;   // 0: all
  double slo_factor = 1.5;
  double slo_floor_ms = 10;
  uint64_t seed = 1;
  double rate_scale = 1.0;     // synthetic: multiply every function's rate
  // A function whose offered load (execution time per second of trace) exceeds this is served
  // by several instances, as a FaaS autoscaler would; each is a separate vGPU.
  double max_instance_load = 0.5;
  // How the platform's router spreads a function's requests over its instances:
  //   "round-robin": in turn, whether or not the instance is busy;
  //   "idle-first": to the lowest-numbered instance that is idle at arrival (judged from the
  //                 requests' own execution times, as if each instance ran alone), else to the
  //                 one that frees first — a FaaS router that prefers warm idle instances;
  //   "warm-first": round-robin as named in the workload, re-routed at arrival by the
  //                 simulator to a warm idle instance (SimOptions::warm_routing, which the
  //                 caller sets: a router that sees where the policy keeps each instance).
  std::string routing = "round-robin";
  // Give each function the catalog model named like it, instead of drawing models: the model
  // whose name equals the function's, else the one named like the function without a trailing
  // "-N" ("cnn-3" runs "cnn"). A function without such a model is an error. For scenarios that
  // replay a known deployment (tools/sim/scenarios/demo).
  bool models_by_name = false;
};

struct Inputs {
  SimWorkload workload;
  std::string description;  // for reports
};

// The inputs, or why not: a bad option (kInvalidArgument), or the gshare_workload status of a
// trace or catalog that cannot be read or parsed; its message() is for a person.
Result<Inputs> LoadInputs(const InputOptions& options);

}  // namespace gshare::sim
