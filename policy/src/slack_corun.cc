// The slack scheduler's co-running under MPS (issue 20): who may join a GPU's holders at
// dispatch, placement that counts on co-running (corun_pack), the predicted rates of a set, and
// revocation of a co-run burst that threatened its SLO (docs/scheduling.md, "Co-running").
#include "slack_scheduler.h"

#include <algorithm>

namespace gshare::policy::internal {

bool SlackScheduler::SameDomain(FunctionId a, FunctionId b) const {
  return config_.corun_across_domains || fns_[a].spec.fault_domain == fns_[b].spec.fault_domain;
}

bool SlackScheduler::CorunFits(Time now, FunctionId f, GpuId g,
                               const std::vector<FunctionId>& holders, Time start) const {
  if (holders.empty() || fns_[f].pending.empty()) return false;
  // Back-offs follow revocations, which a set that slows none of its members never causes
  // (OnCorunBurstEnd): such a set co-runs regardless (corun_pack only).
  std::vector<FunctionId> everyone = holders;
  everyone.push_back(f);
  const bool harmless = opt_.corun_pack && Harmless(everyone);
  if (!harmless && corun_.GpuBackedOff(g, now)) return false;
  // A function whose demand is unknown fills the GPU (FunctionSpec's default): it never
  // co-runs, neither joining nor as the holder others would join (beside one, a small joiner
  // looked as if it paid, and the arbiter, which refuses holders that are not MPS clients,
  // was asked again and again).
  if (fns_[f].spec.compute_demand >= 1.0) return false;
  for (FunctionId h : holders)
    if (fns_[h].spec.compute_demand >= 1.0) return false;
  // Under aggressive, only functions it has learned (Learned) co-run: before, a utilisation
  // and a typical burst taken from priors let sets co-run in a workload's first minutes that
  // were then revoked, and the back-offs moved later placements (the trace: +1.26% GPU time).
  if (!opt_.corun_pack) {
    if (!Learned(f)) return false;
    for (FunctionId h : holders)
      if (!Learned(h)) return false;
  }
  if (holders.size() + 1 > gpus_[g].spec.max_clients) return false;
  std::vector<Corunner> set{corun_.Of(f, fns_[f].spec)};
  for (FunctionId h : holders) {
    if (h == f || !SameDomain(f, h) || (!harmless && corun_.BackedOff(f, h, now))) return false;
    set.push_back(corun_.Of(h, fns_[h].spec));
  }
  double rates = 0;
  std::vector<double> bound(set.size()), means(set.size());
  for (size_t i = 0; i < set.size(); ++i) {
    const Slowdown s = corun_.predictor().Predict(QueryAmong(set, i));
    rates += 1.0 / s.mean;
    means[i] = s.mean;
    bound[i] = s.Bound(kCorunSd);
  }
  if (rates < kCorunPays) return false;
  if (Utilisation(f) * means[0] > kCorunMaxLoad) return false;
  const Fn& fn = fns_[f];
  // f's whole backlog, each burst slowed at the bound, meets the last one's deadline.
  const double f_work = static_cast<double>(Predict(f)) * static_cast<double>(fn.pending.size());
  // Under corun_pack, unless it would miss that deadline waiting for the GPU too, and
  // co-running (at the mean) ends its backlog no later than waiting would: refusing then
  // only makes it later, and its queue grows behind the holder's burst.
  if (start + static_cast<Time>(f_work * bound[0]) > fn.pending.back() + fn.spec.slo - kMargin) {
    const Time waited = TenantEnd(now, g) + static_cast<Time>(f_work);
    if (!opt_.corun_pack || waited <= fn.pending.back() + fn.spec.slo - kMargin ||
        start + static_cast<Time>(f_work * means[0]) > waited) {
      return false;
    }
  }
  for (size_t i = 0; i < holders.size(); ++i) {
    const Fn& h = fns_[holders[i]];
    if (!h.running) continue;
    if (Utilisation(holders[i]) * means[i + 1] > kCorunMaxLoad) return false;
    // Its burst's rest and the bursts queued behind it (a holder that cannot make its
    // deadline even alone is not held against f).
    const double left = std::max(0.0, static_cast<double>(h.grant_pred) - corun_.DoneAt(holders[i], now)) +
                        static_cast<double>(Predict(holders[i])) * static_cast<double>(h.pending.size() - 1);
    const Time last = h.pending.back() + h.spec.slo;
    if (now + static_cast<Time>(left) > last) continue;
    if (now + static_cast<Time>(left * bound[i + 1]) > last - kMargin) return false;
  }
  return true;
}

bool SlackScheduler::Learned(FunctionId f) const {
  return fns_[f].exec.samples() >= ExecPredictor::kMinSamples && fns_[f].arrivals.gaps() > 0;
}

bool SlackScheduler::CorunPacks(Time now, FunctionId f, GpuId g) const {
  if (!opt_.corun_pack || !CorunGpu(g) || corun_.GpuBackedOff(g, now)) return false;
  const Gpu& gpu = gpus_[g];
  if (gpu.members.size() + 1 > gpu.spec.max_clients) return false;
  auto known = [&](FunctionId m) {
    return fns_[m].spec.compute_demand < 1.0 && fns_[m].arrivals.gaps() > 0;
  };
  if (!known(f)) return false;
  std::vector<FunctionId> set{f};
  bool untypical = false;  // some member's typical burst does not fit in the other's slack
  for (FunctionId m : gpu.members) {
    if (m == f) continue;
    if (!known(m) || !SameDomain(f, m)) return false;
    untypical = untypical || !TypicalFits(f, m);
    for (FunctionId o : set) {
      if (corun_.BackedOff(o, m, now)) return false;
    }
    set.push_back(m);
  }
  if (set.size() < 2 || (untypical && !Harmless(set))) return false;
  // And the set's mean load (mean burst / mean gap), were dispatch to time-slice it, stays
  // below saturation: without this bound, held-out seed 5 ran one queue away (SLO 48.4%).
  double load = 0;
  for (FunctionId m : set) load += fns_[m].exec.ExpectedExcess(0) / fns_[m].arrivals.MeanGap();
  if (load > (untypical ? kMaxUtil : 1.0)) return false;
  std::vector<PackMember> pack;
  for (FunctionId m : set) {
    pack.push_back({corun_.Of(m, fns_[m].spec), Utilisation(m), Predict(m), fns_[m].spec.slo});
  }
  return corun_.Packs(pack, kCorunSd, kMaxUtil, kMargin);
}

bool SlackScheduler::Harmless(const std::vector<FunctionId>& set) const {
  std::vector<Corunner> all;
  for (FunctionId m : set) all.push_back(corun_.Of(m, fns_[m].spec));
  return SlowsNone(corun_.predictor(), all, kHarmless);
}

bool SlackScheduler::MayCorun(Time now, FunctionId f, GpuId g) {
  if (!CorunGpu(g) || !Usable(g)) return false;
  return CorunFits(now, f, g, Holders(g), now);
}

void SlackScheduler::OnCorunChange(Time now, GpuId g, FunctionId joined) {
  const std::vector<FunctionId> holders = Holders(g);
  for (FunctionId h : holders) {
    if (h == joined) {
      corun_.Start(h, now);
    } else {
      corun_.Advance(h, now);
    }
  }
  std::vector<Corunner> set;
  for (FunctionId h : holders) set.push_back(corun_.Of(h, fns_[h].spec));
  for (size_t i = 0; i < holders.size(); ++i) {
    const CorunQuery q = QueryAmong(set, i);
    corun_.SetRate(holders[i], 1.0 / corun_.predictor().Predict(q).mean);
    if (holders[i] == joined) {
      std::vector<FunctionId> others;
      for (FunctionId h : holders) {
        if (h != joined) others.push_back(h);
      }
      corun_.Joined(joined, q, others);
    } else {
      corun_.SetChanged(holders[i], joined == kNoFunction ? std::vector<FunctionId>{}
                                                          : std::vector<FunctionId>{joined});
    }
  }
  if (joined != kNoFunction) ++corun_.stats().grants;
  Gpu& gpu = gpus_[g];
  if (gpu.tenant != kNoFunction && fns_[gpu.tenant].running) {
    const Fn& t = fns_[gpu.tenant];
    const double left = std::max(0.0, static_cast<double>(t.grant_pred) - corun_.done(gpu.tenant));
    gpu.tenant_end = now + static_cast<Duration>(left / corun_.rate(gpu.tenant));
  }
}

void SlackScheduler::OnCorunBurstEnd(Time now, FunctionId f, GpuId g, const BurstEnd& e) {
  corun_.Advance(f, now);
  if (!e.corun) return corun_.EndBurst(f);  // it ran alone after all (policy_base.cc)
  const Fn& fn = fns_[f];
  const double observed = static_cast<double>(e.gpu_time) / static_cast<double>(std::max<Duration>(1, Typical(f)));
  if (corun_.clean(f)) corun_.predictor().Observe(corun_.query(f), observed);
  if (!fn.pending.empty() && !corun_.partners(f).empty()) {
    const Duration latency = now - fn.pending.front();
    // What co-running added to the burst: its time held beyond a typical solo burst.
    const double stretch = static_cast<double>(e.gpu_time - Typical(f));
    if (static_cast<double>(latency) > kCorunThreat * static_cast<double>(fn.spec.slo) &&
        stretch > kCorunCost * static_cast<double>(fn.spec.slo) && ModelBlames(f)) {
      corun_.Revoke(f, g, now, /*gpu_too=*/latency > fn.spec.slo);
    }
  }
  corun_.EndBurst(f);
}

bool SlackScheduler::ModelBlames(FunctionId f) const {
  if (!opt_.corun_pack) return true;
  std::vector<Corunner> set{corun_.Of(f, fns_[f].spec)};
  for (FunctionId p : corun_.partners(f)) set.push_back(corun_.Of(p, fns_[p].spec));
  const double added = static_cast<double>(Typical(f)) * (corun_.predictor().Predict(QueryAmong(set, 0)).mean - 1.0);
  return added > 0.5 * kCorunCost * static_cast<double>(fns_[f].spec.slo);
}

}  // namespace gshare::policy::internal
