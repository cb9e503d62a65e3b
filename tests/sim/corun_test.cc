// gshare-sim's co-running (SimOptions, GpuSpec::corun): bursts on a GPU marked corun progress
// at the contention model's rates, recomputed when a co-runner starts or finishes (processor
// sharing), the GPU's busy time counts once, and co-run grants are checked (GPU marked, one
// fault domain). Driven by a scripted policy so that the timeline is known exactly.
#include <gtest/gtest.h>

#include "gshare/sim/engine.h"

namespace gshare::sim {
namespace {

using namespace gshare::policy;

// Activates GPU 0, swaps every arriving function in, and grants it when it lands: exclusively
// when the GPU has no holder, else co-run (`corun`), else queued until the GPU is free.
class Scripted final : public Policy {
 public:
  explicit Scripted(bool corun) : corun_(corun) {}
  std::string_view name() const override { return "scripted"; }
  Time NextWakeup() const override { return kNever; }
  size_t tracked_entries() const override { return 0; }
  void Handle(const Event& e, ActionList& out) override {
    if (const auto* b = std::get_if<BurstStart>(&e.body)) {
      if (!active_) out.push_back(Action{ActionKind::kActivateGpu, kNoFunction, 0});
      active_ = true;
      out.push_back(Action{ActionKind::kSwapIn, b->function, 0});
    } else if (const auto* s = std::get_if<SwapDone>(&e.body)) {
      if (holders_ == 0 || corun_) {
        out.push_back(Action{ActionKind::kGrant, s->function, 0, 0, false, holders_ > 0});
        ++holders_;
      } else {
        waiting_.push_back(s->function);
      }
    } else if (const auto* end = std::get_if<BurstEnd>(&e.body)) {
      --holders_;
      ends_.push_back(*end);
      ends_at_.push_back(e.now);
      if (holders_ == 0 && !waiting_.empty()) {
        out.push_back(Action{ActionKind::kGrant, waiting_.front(), 0});
        waiting_.erase(waiting_.begin());
        ++holders_;
      }
    }
  }
  std::vector<BurstEnd> ends_;
  std::vector<Time> ends_at_;

 private:
  bool corun_;
  bool active_ = false;
  int holders_ = 0;
  std::vector<FunctionId> waiting_;
};

FunctionSpec Fn(double d, uint32_t domain = 0) {
  FunctionSpec f;
  f.weights_bytes = 1000;  // 1 us on the 1000 B/us link
  f.exec_p50 = f.exec_p90 = 10'000;
  f.slo = 100'000;
  f.compute_demand = d;
  f.bandwidth_demand = 0;
  f.fault_domain = domain;
  return f;
}

SimOptions Options(bool corun) {
  SimOptions o;
  GpuSpec g;
  g.link_bytes_per_us = 1000.0;
  g.restore_overhead = 0;
  g.corun = corun;
  o.gpus = {g};
  return o;
}

TEST(SimCorun, ProcessorSharingOnAHandBuiltPair) {
  // Two functions that each need 0.8 of the GPU: together each runs at 1 / 1.6 = 0.625.
  SimWorkload w{{Fn(0.8), Fn(0.8)}, {{0, 0, 10'000}, {0, 1, 10'000}}};
  Scripted p(/*corun=*/true);
  const RunResult r = Simulate(w, Options(true), p);
  ASSERT_EQ(r.violations, 0u) << r.first_violation;
  ASSERT_EQ(p.ends_.size(), 2u);
  // f0 lands at 1 us and runs alone until f1 lands at 2 us; then both at 0.625: f0's 9,999 us
  // left take 15,998.4 us (ends ~16,000); f1 has done 9,999 by then and runs its last 1 us alone.
  EXPECT_NEAR(static_cast<double>(p.ends_at_[0]), 16'000.4, 1.5);
  EXPECT_NEAR(static_cast<double>(p.ends_at_[1]), 16'001.4, 1.5);
  EXPECT_TRUE(p.ends_[0].corun);
  EXPECT_TRUE(p.ends_[1].corun);
  // gpu_time is the wall time each held the GPU.
  EXPECT_NEAR(static_cast<double>(p.ends_[0].gpu_time), 15'999.4, 1.5);
  EXPECT_NEAR(static_cast<double>(p.ends_[1].gpu_time), 15'999.4, 1.5);
  // Busy once per GPU: from 1 us to the last end, not the sum of both bursts.
  EXPECT_NEAR(r.busy_seconds * 1e6, 16'000.4, 2.0);
  EXPECT_EQ(r.corun_grants, 1u);

  // The same pair time-sliced: one after the other, 10 ms each.
  Scripted t(/*corun=*/false);
  const RunResult s = Simulate(w, Options(true), t);
  ASSERT_EQ(s.violations, 0u) << s.first_violation;
  EXPECT_EQ(t.ends_at_[0], 10'001);
  EXPECT_EQ(t.ends_at_[1], 20'001);
  EXPECT_FALSE(t.ends_[0].corun);
}

TEST(SimCorun, CoRunGrantsAreChecked) {
  SimWorkload w{{Fn(0.3), Fn(0.3)}, {{0, 0, 10'000}, {0, 1, 10'000}}};
  Scripted unmarked(/*corun=*/true);
  EXPECT_GT(Simulate(w, Options(false), unmarked).violations, 0u);  // GPU not marked corun
  SimWorkload domains{{Fn(0.3, 1), Fn(0.3, 2)}, {{0, 0, 10'000}, {0, 1, 10'000}}};
  Scripted across(/*corun=*/true);
  EXPECT_GT(Simulate(domains, Options(true), across).violations, 0u);  // two fault domains
  SimOptions wide = Options(true);
  wide.corun_across_domains = true;
  Scripted allowed(/*corun=*/true);
  EXPECT_EQ(Simulate(domains, wide, allowed).violations, 0u);
}

}  // namespace
}  // namespace gshare::sim
