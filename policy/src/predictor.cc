// Online execution-time, inter-arrival and bandwidth predictors (see predictor.h).
#include "gshare/policy/predictor.h"

#include <algorithm>
#include <cmath>

namespace gshare::policy {

ExecPredictor::ExecPredictor(const FunctionSpec& prior)
    : prior_p50_(std::max<Duration>(1, prior.exec_p50)),
      prior_p90_(std::max<Duration>(1, std::max(prior.exec_p50, prior.exec_p90))) {
  prior_q50_ = PriorQuantile(0.5);
  prior_q90_ = PriorQuantile(0.9);
  prior_q95_ = PriorQuantile(0.95);
  prior_q99_ = PriorQuantile(0.99);
}

void ExecPredictor::Observe(Duration exec) {
  exec = std::max<Duration>(1, exec);
  const int n = samples();
  auto begin = sorted_.begin();
  auto end = begin + n;
  if (n == kWindow) {  // drop the sample leaving the window from the sorted copy
    const Duration old = window_[static_cast<size_t>(count_ % kWindow)];
    auto it = std::lower_bound(begin, end, old);
    std::move(it + 1, end, it);
    --end;
  }
  auto pos = std::upper_bound(begin, end, exec);
  std::move_backward(pos, end, end + 1);
  *pos = exec;
  window_[static_cast<size_t>(count_ % kWindow)] = exec;
  ++count_;
}

Duration ExecPredictor::PriorQuantile(double q) const {
  // Log-normal through p50 and p90: z(0.9) = 1.2816; the inverse normal CDF by a rational
  // approximation (Abramowitz-Stegun 26.2.23, |error| < 4.5e-4).
  const double mu = std::log(static_cast<double>(prior_p50_));
  const double sigma =
      std::log(static_cast<double>(prior_p90_) / static_cast<double>(prior_p50_)) / 1.2816;
  const double p = std::clamp(q, 0.5, 0.9999);
  const double t = std::sqrt(-2.0 * std::log(1.0 - p));
  const double z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) /
                           (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
  return std::max<Duration>(1, static_cast<Duration>(std::exp(mu + sigma * z)));
}

Duration ExecPredictor::Quantile(double q) const {
  const int n = samples();
  if (n < kMinSamples) {
    if (q == 0.5) return prior_q50_;
    if (q == 0.9) return prior_q90_;
    if (q == 0.95) return prior_q95_;
    if (q == 0.99) return prior_q99_;
    return PriorQuantile(q);
  }
  const int k = std::clamp(static_cast<int>(std::ceil(q * n)) - 1, 0, n - 1);
  return sorted_[static_cast<size_t>(k)];
}

double ExecPredictor::ExpectedExcess(Duration s) const {
  const int n = samples();
  if (n < kMinSamples) {  // the prior, as four steps: (0, .5] at p50, (.5, .9] at p90, ...
    const auto over = [s](Duration q) { return static_cast<double>(std::max<Duration>(0, q - s)); };
    return 0.5 * over(prior_q50_) + 0.4 * over(prior_q90_) + 0.05 * over(prior_q95_) +
           0.05 * over(prior_q99_);
  }
  double sum = 0;
  for (int i = n - 1; i >= 0 && sorted_[static_cast<size_t>(i)] > s; --i) {
    sum += static_cast<double>(sorted_[static_cast<size_t>(i)] - s);
  }
  return sum / n;
}

Duration ExecPredictor::Predict(const PaddingRule& rule) const {
  const double v = static_cast<double>(Quantile(rule.quantile)) * (1.0 + rule.pad);
  return std::max<Duration>(1, static_cast<Duration>(std::ceil(v)));
}

void ArrivalPredictor::Observe(Time arrival) {
  if (last_ >= 0) {
    Duration& slot = gaps_[static_cast<size_t>(count_ % kWindow)];
    if (count_ >= kWindow) sum_ -= slot;  // the gap leaving the window
    slot = std::max<Duration>(0, arrival - last_);
    sum_ += slot;
    ++count_;
  }
  last_ = arrival;
}

double ArrivalPredictor::MeanGap() const {
  const int n = gaps();
  if (n == 0) return 0;
  // The integer sum is exact, as the double sum of the window's gaps was (below 2^53 us).
  return static_cast<double>(sum_) / n;
}

double ArrivalPredictor::GapCv() const {
  const int n = gaps();
  if (n < 2) return 0;
  const double mean = MeanGap();
  if (mean <= 0) return 0;
  double ss = 0;
  for (int i = 0; i < n; ++i) {
    const double d = static_cast<double>(gaps_[static_cast<size_t>(i)]) - mean;
    ss += d * d;
  }
  return std::sqrt(ss / n) / mean;
}

bool ArrivalPredictor::Periodic(double max_cv) const {
  return gaps() >= kWindow / 2 && GapCv() < max_cv;
}

Time ArrivalPredictor::NextArrival() const {
  if (gaps() == 0) return kNever;
  return last_ + static_cast<Duration>(MeanGap());
}

void BandwidthPredictor::Observe(uint64_t bytes, Duration link_time) {
  if (bytes == 0 || link_time <= 0) return;
  const double sample = static_cast<double>(bytes) / static_cast<double>(link_time);
  // The first measurement replaces the configured prior (which may be a default far from this
  // link: the live arbiter's 24 GB/s against simcuda's ~2 GB/s); later ones are averaged.
  bytes_per_us_ = observed_ ? 0.8 * bytes_per_us_ + 0.2 * sample : sample;
  observed_ = true;
}

LinkBandwidths::LinkBandwidths(const std::vector<double>& priors) {
  links_.reserve(priors.size());
  for (double prior : priors) {
    links_.emplace_back(prior);
    speeds_.insert(prior);
  }
}

void LinkBandwidths::Observe(size_t link, uint64_t bytes, Duration link_time) {
  BandwidthPredictor& b = links_[link];
  speeds_.erase(speeds_.find(b.bytes_per_us()));
  b.Observe(bytes, link_time);
  speeds_.insert(b.bytes_per_us());
}

}  // namespace gshare::policy
