// The contention model and the interference predictor (interference.h). The learned part is
// dlib's kernel ridge regression; nothing here is hand-written learning code beyond assembling
// features and a running error.
#include "gshare/policy/interference.h"

#include <algorithm>
#include <cmath>

#include <dlib/svm.h>

namespace gshare::policy {

Corunner CorunnerOf(const FunctionSpec& spec, double share) {
  return Corunner{share, spec.compute_demand, spec.bandwidth_demand};
}

namespace {
double Demand(double d) { return std::clamp(d, kMinDemand, 1.0); }
double Share(double s) { return std::clamp(s, kMinDemand, 1.0); }
double Bandwidth(double b) { return std::clamp(b, 0.0, 1.0); }
double Effective(const Corunner& c) { return std::min(Demand(c.compute), Share(c.share)); }
}  // namespace

double ContentionSlowdown(std::span<const Corunner> set, size_t i) {
  return 1.0 / ContentionRate(set, i);
}

double ContentionRate(std::span<const Corunner> set, size_t i) {
  double overflow = 0;  // A = sum_j min(d_j, s_j)
  for (const Corunner& c : set) overflow += Effective(c);
  overflow = std::max(1.0, overflow);
  auto rho = [&](const Corunner& c) { return (Effective(c) / overflow) / Demand(c.compute); };
  double traffic = 0;  // U = sum_j b_j * rho_j: memory traffic at those rates, in units of peak
  for (const Corunner& c : set) traffic += Bandwidth(c.bandwidth) * rho(c);
  return rho(set[i]) / std::max(1.0, traffic);
}

double CorunQuery::Prior() const {
  std::vector<Corunner> set;
  set.reserve(others.size() + 1);
  set.push_back(self);
  set.insert(set.end(), others.begin(), others.end());
  return ContentionSlowdown(set, 0);
}

namespace {
constexpr long kFeatures = 6;
using Sample = dlib::matrix<double, kFeatures, 1>;
using Kernel = dlib::radial_basis_kernel<Sample>;
constexpr double kGamma = 2.0;     // RBF width on features of order 1
constexpr double kLambda = 0.05;   // ridge regularisation (fixed: no leave-one-out search)
// Basis vectors of the empirical kernel map: 32 refits in ~0.5 ms and predicts in ~0.2 us
// (96, the whole window, took ~120 ms per refit).
constexpr unsigned long kMaxBasis = 32;
// Observations are floored here only to keep their logarithm finite.
constexpr double kMinObserved = 0.01;

// The query's features, each of order 1: its share, compute and bandwidth demands, the others'
// summed effective compute and bandwidth, and their count / 8.
Sample Features(const CorunQuery& q) {
  double compute = 0;
  double bandwidth = 0;
  for (const Corunner& c : q.others) {
    compute += Effective(c);
    bandwidth += Bandwidth(c.bandwidth);
  }
  Sample x;
  x(0) = Share(q.self.share);
  x(1) = Demand(q.self.compute);
  x(2) = Bandwidth(q.self.bandwidth);
  x(3) = compute;
  x(4) = bandwidth;
  x(5) = static_cast<double>(q.others.size()) / 8.0;
  return x;
}
}  // namespace

struct InterferencePredictor::Model {
  std::vector<Sample> samples;  // ring of the last kWindow observations
  std::vector<double> targets;  // log(observed / prior), same positions
  size_t next = 0;
  bool fitted = false;
  dlib::decision_function<Kernel> df;

  double Correction(const Sample& x) const {
    if (!fitted) return 0.0;
    return std::clamp(df(x), -kMaxLogCorrection, kMaxLogCorrection);
  }
};

InterferencePredictor::InterferencePredictor() : model_(std::make_unique<Model>()) {}
InterferencePredictor::~InterferencePredictor() = default;
InterferencePredictor::InterferencePredictor(InterferencePredictor&&) noexcept = default;
InterferencePredictor& InterferencePredictor::operator=(InterferencePredictor&&) noexcept = default;

double InterferencePredictor::log_sd() const { return std::sqrt(sq_error_); }

Slowdown InterferencePredictor::Predict(const CorunQuery& query) const {
  const double prior = query.Prior();
  const double mean = std::max(1.0, prior * std::exp(model_->Correction(Features(query))));
  // A log-normal error of sd s around the mean: stddev ~ mean * s for small s.
  return Slowdown{mean, mean * log_sd()};
}

void InterferencePredictor::Observe(const CorunQuery& query, double observed) {
  observed = std::max(kMinObserved, observed);
  const Sample x = Features(query);
  const double prior = query.Prior();
  // Prequential error: the current model's miss on this observation, before learning from it.
  const double predicted = std::max(1.0, prior * std::exp(model_->Correction(x)));
  const double err = std::log(observed / predicted);
  sq_error_ = (1 - kErrorWeight) * sq_error_ + kErrorWeight * err * err;
  const double target = std::log(observed / prior);
  if (model_->samples.size() < kWindow) {
    model_->samples.push_back(x);
    model_->targets.push_back(target);
  } else {
    model_->samples[model_->next] = x;
    model_->targets[model_->next] = target;
    model_->next = (model_->next + 1) % kWindow;
  }
  ++observed_;
  if (++since_refit_ >= kRefitEvery && model_->samples.size() >= kMinSamples) Refit();
}

void InterferencePredictor::Refit() {
  since_refit_ = 0;
  ++refits_;
  dlib::krr_trainer<Kernel> trainer;
  trainer.set_kernel(Kernel(kGamma));
  trainer.set_lambda(kLambda);
  trainer.set_max_basis_size(kMaxBasis);
  model_->df = trainer.train(model_->samples, model_->targets);
  model_->fitted = true;
}

CorunQuery QueryAmong(std::span<const Corunner> set, size_t i) {
  CorunQuery q;
  q.self = set[i];
  for (size_t j = 0; j < set.size(); ++j) {
    if (j != i) q.others.push_back(set[j]);
  }
  return q;
}

bool SlowsNone(const InterferencePredictor& predictor, std::span<const Corunner> set, double limit) {
  for (size_t i = 0; i < set.size(); ++i) {
    const CorunQuery q = QueryAmong(set, i);
    if (q.Prior() > limit || predictor.Predict(q).mean > limit) return false;
  }
  return true;
}

}  // namespace gshare::policy
