// The Azure-like synthetic workload generator (docs/workloads.md, "synthetic"): per-function
// rates with log10(invocations per minute) ~ Normal(-1.56, 1.77) (which reproduces the Azure
// Functions 2019 popularity: 45% of functions invoked at most hourly, 81% at most once a minute,
// the top 18.6% carrying ~99.6% of invocations), 16% timers (periodic), 40% bursty (inter-
// arrival CV > 1, hyper-exponential gaps), the rest Poisson, all non-timer arrivals modulated
// by a daily cycle whose trough is 50% of its peak. Seeded and deterministic: the same options
// give the identical trace on every run (no std:: distributions are used, so the standard
// library cannot change it; only a different libm's last-bit rounding could).
//
// Thread-safety: reentrant; the generator keeps no global state.
#pragma once

#include <cstdint>

#include "gshare/workload/result.h"
#include "gshare/workload/trace.h"

namespace gshare::workload {

struct SyntheticOptions {
  uint32_t functions = 100;             // >= 1; named "fn-0000", "fn-0001", ...
  int64_t duration_us = 3'600'000'000;  // length of the trace (> 0); default one hour
  uint64_t seed = 1;

  // Popularity: log10(mean invocations per minute) ~ Normal(log10_rate_mean, log10_rate_sd),
  // then multiplied by rate_scale and clamped to [0, max_rate_per_min].
  double log10_rate_mean = -1.56;
  double log10_rate_sd = 1.77;
  double rate_scale = 1.0;
  double max_rate_per_min = 6000.0;     // 100 per second: no single function floods the trace

  // Arrival classes (fractions of functions; the rest are Poisson).
  double timer_fraction = 0.16;
  double bursty_fraction = 0.40;
  // Bursty functions draw their inter-arrival CV log-uniformly from [min, max] (> 1).
  double bursty_cv_min = 1.5;
  double bursty_cv_max = 4.0;
  // Timers fire with a period of 1 / rate rounded to the nearest "cron-like" period (1 s, 5 s,
  // 10 s, 15 s, 30 s, 1 min, 2 min, 5 min, 10 min, 15 min, 30 min, 1 h, 2 h, 6 h, 12 h, 24 h),
  // at a random phase, each firing jittered by up to timer_jitter_us (uniform, >= 0).
  int64_t timer_jitter_us = 100'000;

  // Daily cycle for non-timer functions: rate(t) = mean_rate * (1 + a cos(2 pi (t - peak) /
  // day)) with a chosen so that trough / peak = daily_trough_ratio (in (0, 1]; 1 disables it).
  double daily_trough_ratio = 0.5;
  int64_t day_us = 86'400'000'000;      // period of the cycle (> 0); shrink it to compress days
  int64_t daily_peak_us = 50'400'000'000;  // time of the peak within the day (14:00)

  // Stop after this many invocations (the earliest ones); 0: no limit.
  uint64_t max_requests = 0;
};

// Per-function parameters the generator drew (exposed for tests and reports).
struct SyntheticFunction {
  ArrivalKind kind = ArrivalKind::kPoisson;
  double rate_per_min = 0;   // mean over a whole day
  double gap_cv = 1;         // target inter-arrival CV (timers: 0; Poisson: 1)
  int64_t period_us = 0;     // timers only
};

struct SyntheticTrace {
  Trace trace;                                // kinds are set in trace.functions[i].kind
  std::vector<SyntheticFunction> parameters;  // one per function, same order
};

// Generates the workload. Errors only for invalid options (named in the message).
// Cost: O(invocations log invocations) time, O(invocations) memory.
Result<SyntheticTrace> GenerateSynthetic(const SyntheticOptions& options);

}  // namespace gshare::workload
