// CorunBook (corun.h): share classes, co-run progress, labels and back-offs.
#include "corun.h"

#include <algorithm>
#include <cmath>

namespace gshare::policy::internal {

ShareClass CorunBook::ShareOf(const FunctionSpec& spec) {
  const double d = std::clamp(spec.compute_demand, kMinDemand, 1.0);
  return ShareClass{std::min(1.0, std::ceil(d * 4.0 - 1e-9) / 4.0), 0};
}

void CorunBook::Register(FunctionId f, const FunctionSpec& spec) {
  if (fns_.size() <= f) fns_.resize(static_cast<size_t>(f) + 1);
  fns_[f] = Fn{};
  fns_[f].share = ShareOf(spec).compute_share;
}

void CorunBook::Forget(FunctionId f) {
  if (f >= fns_.size()) return;
  fns_[f] = Fn{};
  for (Fn& fn : fns_) {
    std::erase_if(fn.backoff, [f](const auto& b) { return b.first == f; });
    std::erase(fn.partners, f);
  }
}

void CorunBook::Start(FunctionId f, Time now) {
  Fn& fn = fns_[f];
  fn.done = 0;
  fn.rate = 1.0;
  fn.since = now;
}

void CorunBook::Advance(FunctionId f, Time now) {
  Fn& fn = fns_[f];
  fn.done += static_cast<double>(now - fn.since) * fn.rate;
  fn.since = now;
}

void CorunBook::Joined(FunctionId f, CorunQuery query, const std::vector<FunctionId>& partners) {
  Fn& fn = fns_[f];
  fn.clean = true;
  fn.query = std::move(query);
  fn.partners = partners;
}

void CorunBook::SetChanged(FunctionId f, const std::vector<FunctionId>& partners) {
  Fn& fn = fns_[f];
  fn.clean = false;
  for (FunctionId p : partners) {
    if (std::find(fn.partners.begin(), fn.partners.end(), p) == fn.partners.end()) fn.partners.push_back(p);
  }
}

void CorunBook::EndBurst(FunctionId f) {
  Fn& fn = fns_[f];
  fn.clean = false;
  fn.partners.clear();
  fn.query = CorunQuery{};
}

bool CorunBook::BackedOff(FunctionId a, FunctionId b, Time now) const {
  for (const auto& [p, until] : fns_[a].backoff) {
    if (p == b && now < until) return true;
  }
  return false;
}

void CorunBook::Revoke(FunctionId f, GpuId g, Time now, bool gpu_too) {
  Fn& fn = fns_[f];
  const int shift = std::min(fn.revoked++, 5);
  const Time until = now + std::min(kMaxBackoff, kPairBackoff << shift);
  auto put = [&](FunctionId a, FunctionId b) {
    auto& list = fns_[a].backoff;
    std::erase_if(list, [&](const auto& x) { return x.first == b || x.second <= now; });
    list.emplace_back(b, until);
  };
  for (FunctionId p : fn.partners) {
    if (p >= fns_.size()) continue;
    put(f, p);
    put(p, f);
  }
  if (gpu_too) gpu_backoff_[g] = std::max(gpu_backoff_[g], now + kGpuBackoff);
  ++stats_.revocations;
}

bool CorunBook::Packs(std::span<const PackMember> set, double k, double max_load,
                      Duration margin) const {
  std::vector<Corunner> all;
  all.reserve(set.size());
  for (const PackMember& m : set) all.push_back(m.corunner);
  for (size_t i = 0; i < set.size(); ++i) {
    const Slowdown s = predictor_.Predict(QueryAmong(all, i));
    if (1.0 / s.mean < kPackRate || set[i].utilisation * s.mean > max_load) return false;
    if (static_cast<double>(set[i].exec) * s.Bound(k) > static_cast<double>(set[i].slo - margin)) {
      return false;
    }
  }
  return true;
}

size_t CorunBook::entries() const {
  size_t n = 0;
  for (const Fn& fn : fns_) n += fn.backoff.size();
  return n;
}

}  // namespace gshare::policy::internal
