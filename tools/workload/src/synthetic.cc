// Implementation of synthetic.h: the Azure-like generator.
//
// Each non-timer function is a renewal process in "operational time" tau (exponential gaps for
// Poisson functions, balanced two-phase hyper-exponential gaps for bursty ones), mapped to wall
// time through the inverse of the cumulative daily-cycle intensity Lambda(t) (time rescaling),
// so the daily cycle modulates every class the same way. Timers fire every period at a random
// phase with a small jitter. The per-function streams are merged through a min-heap, so the
// output comes out sorted and max_requests stops generation early.
#include "gshare/workload/synthetic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <queue>
#include <string>
#include <vector>

#include "rng.h"

namespace gshare::workload {
namespace {

constexpr double kPi = 3.141592653589793;
constexpr double kMinuteUs = 60e6;

// Cron-like timer periods, in seconds.
constexpr std::array<double, 16> kTimerPeriodsS = {
    1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400};

Status Validate(const SyntheticOptions& o) {
  auto bad = [](const std::string& what) { return Fail("synthetic workload: " + what); };
  if (o.functions == 0) return bad("functions must be at least 1");
  if (o.duration_us <= 0) return bad("duration must be positive");
  if (!std::isfinite(o.log10_rate_mean) || !(o.log10_rate_sd >= 0) || !std::isfinite(o.log10_rate_sd))
    return bad("log10_rate_sd must be >= 0 and both log10 rate parameters finite");
  if (!(o.rate_scale >= 0) || !std::isfinite(o.rate_scale)) return bad("rate_scale must be >= 0");
  if (!(o.max_rate_per_min > 0)) return bad("max_rate_per_min must be positive");
  if (!(o.timer_fraction >= 0) || !(o.bursty_fraction >= 0) ||
      !(o.timer_fraction + o.bursty_fraction <= 1.0))
    return bad("timer_fraction and bursty_fraction must be >= 0 and sum to at most 1");
  if (!(o.bursty_cv_min > 1) || !(o.bursty_cv_max >= o.bursty_cv_min) || !std::isfinite(o.bursty_cv_max))
    return bad("bursty CV range must satisfy 1 < bursty_cv_min <= bursty_cv_max");
  if (o.timer_jitter_us < 0) return bad("timer_jitter_us must be >= 0");
  if (!(o.daily_trough_ratio > 0) || !(o.daily_trough_ratio <= 1))
    return bad("daily_trough_ratio must be in (0, 1]");
  if (o.day_us <= 0) return bad("day_us must be positive");
  return Status::Ok();
}

int64_t NearestTimerPeriodUs(double rate_per_min) {
  const double wanted_s = 60.0 / rate_per_min;
  double best = kTimerPeriodsS[0];
  for (double p : kTimerPeriodsS) {
    if (std::fabs(std::log(p / wanted_s)) < std::fabs(std::log(best / wanted_s))) best = p;
  }
  return static_cast<int64_t>(best * 1e6);
}

// Lambda(t) = t + A (sin(w (t - peak)) + sin(w peak)), the integral of 1 + a cos(w (t - peak)).
class DailyCycle {
 public:
  DailyCycle(double a, int64_t day_us, int64_t peak_us)
      : a_(a), w_(2 * kPi / static_cast<double>(day_us)), peak_(static_cast<double>(peak_us)),
        amplitude_(a / w_), offset_(std::sin(w_ * peak_)) {}

  double Cumulative(double t) const { return t + amplitude_ * (std::sin(w_ * (t - peak_)) + offset_); }
  double Intensity(double t) const { return 1 + a_ * std::cos(w_ * (t - peak_)); }

  // The t with Cumulative(t) == tau: safeguarded Newton inside the bracket
  // [tau - 2A, tau + 2A], which holds the root because |Cumulative(t) - t| <= 2A.
  double Inverse(double tau) const {
    if (a_ == 0) return tau;
    double lo = tau - 2 * amplitude_, hi = tau + 2 * amplitude_;
    double t = tau;
    for (int i = 0; i < 100; ++i) {
      const double f = Cumulative(t) - tau;
      if (std::fabs(f) < 1e-3) break;
      (f > 0 ? hi : lo) = t;
      double next = t - f / Intensity(t);
      if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
      t = next;
    }
    return t;
  }

 private:
  double a_, w_, peak_, amplitude_, offset_;
};

struct Stream {
  internal::Rng rng;
  double tau = 0;      // operational time of the last arrival (non-timers)
  int64_t fired = 0;   // firings so far (timers)
  double phase_us = 0; // timers
  int64_t jitter_us = 0;
};

struct Pending {
  int64_t arrival_us;
  uint32_t function;
  bool operator>(const Pending& o) const {
    return arrival_us != o.arrival_us ? arrival_us > o.arrival_us : function > o.function;
  }
};

std::vector<SyntheticFunction> DrawFunctions(const SyntheticOptions& o) {
  internal::Rng rng(o.seed, 0);
  std::vector<SyntheticFunction> out(o.functions);
  const double log_cv_min = std::log(o.bursty_cv_min), log_cv_max = std::log(o.bursty_cv_max);
  for (SyntheticFunction& f : out) {
    // Draw every value for every function so that one function's kind never shifts the
    // random numbers of the next.
    const double z = rng.Normal();
    const double kind_u = rng.Uniform();
    const double cv_u = rng.Uniform();
    f.rate_per_min = std::min(o.max_rate_per_min,
                              std::pow(10.0, o.log10_rate_mean + o.log10_rate_sd * z) * o.rate_scale);
    if (kind_u < o.timer_fraction) {
      f.kind = ArrivalKind::kTimer;
      f.gap_cv = 0;
      if (f.rate_per_min > 0) f.period_us = NearestTimerPeriodUs(f.rate_per_min);
    } else if (kind_u < o.timer_fraction + o.bursty_fraction) {
      f.kind = ArrivalKind::kBursty;
      f.gap_cv = std::exp(log_cv_min + cv_u * (log_cv_max - log_cv_min));
    } else {
      f.kind = ArrivalKind::kPoisson;
      f.gap_cv = 1;
    }
  }
  return out;
}

// Next gap in operational time: exponential, or a balanced-means two-phase hyper-exponential
// with the function's CV (p = (1 + sqrt((c^2 - 1) / (c^2 + 1))) / 2, branch means m/(2p) and
// m/(2(1-p))).
double NextGap(const SyntheticFunction& f, internal::Rng* rng) {
  const double mean = kMinuteUs / f.rate_per_min;
  if (f.kind != ArrivalKind::kBursty) return rng->Exponential(mean);
  const double c2 = f.gap_cv * f.gap_cv;
  const double p = 0.5 * (1 + std::sqrt((c2 - 1) / (c2 + 1)));
  const bool first = rng->Uniform() < p;
  return rng->Exponential(first ? mean / (2 * p) : mean / (2 * (1 - p)));
}

// The next arrival of function f at or after the previous one, or -1 past the end.
int64_t Advance(const SyntheticFunction& f, const DailyCycle& cycle, int64_t duration_us,
                Stream* s) {
  if (!(f.rate_per_min > 0)) return -1;
  double t = 0;
  if (f.kind == ArrivalKind::kTimer) {
    t = s->phase_us + static_cast<double>(s->fired++) * static_cast<double>(f.period_us) +
        s->rng.Uniform() * static_cast<double>(s->jitter_us);
  } else {
    s->tau += NextGap(f, &s->rng);
    t = cycle.Inverse(s->tau);
  }
  if (!(t < static_cast<double>(duration_us))) return -1;
  return static_cast<int64_t>(std::floor(std::max(t, 0.0)));
}

}  // namespace

Result<SyntheticTrace> GenerateSynthetic(const SyntheticOptions& options) {
  if (Status bad = Validate(options); !bad.ok()) return bad;
  SyntheticTrace out;
  out.parameters = DrawFunctions(options);
  const double r = options.daily_trough_ratio;
  const DailyCycle cycle((1 - r) / (1 + r), options.day_us, options.daily_peak_us);

  Trace& trace = out.trace;
  double expected = 0;
  std::vector<Stream> streams;
  streams.reserve(options.functions);
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> heap;
  for (uint32_t f = 0; f < options.functions; ++f) {
    const SyntheticFunction& p = out.parameters[f];
    char name[32];
    std::snprintf(name, sizeof name, "fn-%04u", f);
    trace.functions.push_back(FunctionInfo{name, p.kind, {}});
    Stream s{internal::Rng(options.seed, uint64_t{f} + 1)};
    if (p.kind == ArrivalKind::kTimer && p.period_us > 0) {
      s.phase_us = s.rng.Uniform() * static_cast<double>(p.period_us);
      s.jitter_us = std::min(options.timer_jitter_us, p.period_us / 2);
    }
    streams.push_back(s);
    const int64_t first = Advance(p, cycle, options.duration_us, &streams.back());
    if (first >= 0) heap.push({first, f});
    expected += p.rate_per_min * static_cast<double>(options.duration_us) / kMinuteUs;
  }
  double reserve = std::min(expected * 1.05, 5e7);
  if (options.max_requests != 0) reserve = std::min(reserve, static_cast<double>(options.max_requests));
  trace.invocations.reserve(static_cast<size_t>(reserve));

  while (!heap.empty()) {
    if (options.max_requests != 0 && trace.invocations.size() >= options.max_requests) break;
    const Pending next = heap.top();
    heap.pop();
    Invocation inv;
    inv.arrival_us = next.arrival_us;
    inv.function = next.function;
    trace.invocations.push_back(inv);
    const int64_t after = Advance(out.parameters[next.function], cycle, options.duration_us,
                                  &streams[next.function]);
    if (after >= 0) heap.push({std::max(after, next.arrival_us), next.function});
  }
  char summary[200];
  std::snprintf(summary, sizeof summary,
                "synthetic Azure-like workload: %zu requests, %u functions, %.0f s, seed %llu",
                trace.invocations.size(), options.functions,
                static_cast<double>(options.duration_us) / 1e6,
                static_cast<unsigned long long>(options.seed));
  trace.description = summary;
  return out;
}

}  // namespace gshare::workload
