// Bounded policy memory: with registration churn (issue 16 item 6, policy side; policy.h
// protocol item 5) every policy releases a function's state at FunctionGone, so with ids reused
// its entries stay bounded by the live functions, and a reused id starts fresh — nothing of the
// previous owner (wakeups, queue entries) acts on the new one; and without churn, a flood of
// bursts leaves no superseded wakeups behind (issue 21).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <set>
#include <string>

#include "driver.h"
#include "mini_node.h"

namespace gshare::policy::testing {
namespace {

// Answers every timed action at once (swaps take no time; a grant's burst ends at once unless
// its function is to die mid-burst) and checks that no action names a gone function.
class InstantNode {
 public:
  explicit InstantNode(Driver& d) : d_(d) {}

  void Send(Time t, EventBody body) {
    std::deque<EventBody> queue{std::move(body)};
    while (!queue.empty()) {
      const EventBody e = queue.front();
      queue.pop_front();
      for (const Action& a : d_.Send(t, e)) {
        if (a.function != kNoFunction && a.kind != ActionKind::kKeepResident) {
          EXPECT_TRUE(live_.count(a.function))
              << ActionKindName(a.kind) << " names gone function " << a.function << " at " << t;
        }
        switch (a.kind) {
          case ActionKind::kSwapIn:
            queue.push_back(SwapDone{a.function, a.gpu, SwapKind::kIn, 1'000'000, 1'000});
            break;
          case ActionKind::kSwapOut:
            queue.push_back(SwapDone{a.function, a.gpu, SwapKind::kOut, 0, 0});
            break;
          case ActionKind::kDeepEvict:
            queue.push_back(SwapDone{a.function, a.gpu, SwapKind::kDeepEvict, 1'000, 1'000});
            break;
          case ActionKind::kGrant:
            if (!dies_running_.count(a.function)) queue.push_back(BurstEnd{a.function, a.gpu, 1'000});
            break;
          default:
            break;
        }
      }
    }
  }
  void Register(Time t, FunctionId f, const FunctionSpec& spec, bool dies_running) {
    live_.insert(f);
    if (dies_running) dies_running_.insert(f);
    Send(t, FunctionRegistered{f, spec});
  }
  void Gone(Time t, FunctionId f) {
    live_.erase(f);
    dies_running_.erase(f);
    Send(t, FunctionGone{f});
  }

 private:
  Driver& d_;
  std::set<FunctionId> live_;
  std::set<FunctionId> dies_running_;
};

// 100,000 functions come and go, 8 live at a time on the ids 0..7; a third die mid-burst. The
// policy's entries stay a small multiple of the live functions (before, every gone function
// left its idle wakeup — for 10 s, 60 s or 15 min — and keepalive its place in the waiters).
TEST(Churn, EntriesStayBoundedWhenIdsAreReused) {
  constexpr FunctionId kLive = 8;
  constexpr int kFunctions = 100'000;
  for (const std::string& name : PolicyNames()) {
    SCOPED_TRACE(name);
    Driver d(name, 2);
    InstantNode node(d);
    size_t most = 0;
    Time t = 1;
    for (int i = 0; i < kFunctions; ++i, t += 1'000) {
      const FunctionId f = static_cast<FunctionId>(i) % kLive;
      if (i >= static_cast<int>(kLive)) node.Gone(t, f);
      node.Register(t, f, Fn(50 + 10 * (i % 5), 1'000 + 500 * (i % 7), 50'000), i % 3 == 0);
      node.Send(t, BurstStart{f});
      if (d.policy->NextWakeup() <= t) node.Send(t, Timer{});
      most = std::max(most, d.policy->tracked_entries());
    }
    EXPECT_LE(most, 200u) << "at the end: " << d.policy->tracked_entries();
  }
}

// Two functions flood the node with 40,000 short bursts each (one every millisecond, each done
// before the next) and never leave. Every burst re-arms a wakeup (fifo's idle eviction 60 s
// later, keepalive's expiry, the slack scheduler's idle step); only the latest of a function
// and tag counts, so the heap stays bounded by the live functions (before: fifo kept one per
// burst, 40,000 after 40,000 bursts, as the arbiter's policy_entries showed under a flood).
TEST(Churn, FloodOfBurstsLeavesNoSupersededWakeups) {
  for (const std::string& name : PolicyNames()) {
    SCOPED_TRACE(name);
    Driver d(name, 2);
    InstantNode node(d);
    node.Register(1, 0, Fn(50, 200, 50'000), false);
    node.Register(1, 1, Fn(80, 300, 20'000), false);
    size_t most = 0;
    for (Time t = 2; t < 40'000 * 1'000; t += 1'000) {
      node.Send(t, BurstStart{static_cast<FunctionId>((t / 1'000) % 2)});
      node.Send(t + 500, BurstStart{static_cast<FunctionId>(1 - (t / 1'000) % 2)});
      if (d.policy->NextWakeup() <= t + 500) node.Send(t + 500, Timer{});
      most = std::max(most, d.policy->tracked_entries());
    }
    EXPECT_LE(most, 64u) << "at the end: " << d.policy->tracked_entries();
  }
}

// The same history on two policies; afterwards a new function registers on the gone id (p1)
// or on a never-used id (p2). Their actions must be the same, id for id: in particular the old
// owner's prefetch (it ran every 20 s) does not load the new one, and no action names the
// gone function.
TEST(Churn, ReusedIdStartsFresh) {
  for (const std::string& name : PolicyNames()) {
    SCOPED_TRACE(name);
    PolicyConfig config;
    config.gpus.assign(2, SmallGpu());
    config.keepalive_ttl = 30 * kUsPerSecond;
    Driver d1(name, config), d2(name, config);
    MiniNode n1(d1, 2, 1'000), n2(d2, 2, 1'000);
    const FunctionId fresh[2] = {0, 1};
    MiniNode* nodes[2] = {&n1, &n2};
    for (MiniNode* n : nodes) {
      n->Register(1, 5, Fn(100, 2'000, 50'000));
      n->Register(1, 0, Fn(200, 20'000, 100'000));
      for (int k = 0; k < 10; ++k) n->RequestAt(5, (1 + 7 * k) * kUsPerSecond, 2'000);
      for (int k = 0; k < 5; ++k) n->RequestAt(0, (1 + 20 * k) * kUsPerSecond, 20'000);
      n->RunUntil(82 * kUsPerSecond);
      n->Gone(n->now(), 0);
    }
    const size_t mark1 = n1.log().size(), mark2 = n2.log().size();
    for (int i = 0; i < 2; ++i) {
      MiniNode& n = *nodes[i];
      n.RunUntil(83 * kUsPerSecond);
      n.Register(n.now(), fresh[i], Fn(50, 3'000, 30'000));
      for (int k = 0; k < 4; ++k) n.RequestAt(fresh[i], (110 + 10 * k) * kUsPerSecond, 3'000);
      n.RunUntil(200 * kUsPerSecond);
    }
    std::vector<std::string> a1, a2;
    for (size_t i = mark1; i < n1.log().size(); ++i) {
      const auto& [at, a] = n1.log()[i];
      const FunctionId f = a.function == 0 ? 1 : a.function;  // p1's new owner is p2's 1
      a1.push_back(std::to_string(at) + " " + ActionKindName(a.kind) + " f" + std::to_string(f) +
                   " g" + std::to_string(a.gpu));
    }
    for (size_t i = mark2; i < n2.log().size(); ++i) {
      const auto& [at, a] = n2.log()[i];
      EXPECT_NE(a.function, 0u) << ActionKindName(a.kind) << " names the gone function at " << at;
      a2.push_back(std::to_string(at) + " " + ActionKindName(a.kind) + " f" +
                   std::to_string(a.function) + " g" + std::to_string(a.gpu));
    }
    EXPECT_EQ(a1, a2);
    EXPECT_EQ(n1.stats(0).completed, 4);
    EXPECT_EQ(n2.stats(1).completed, 4);
  }
}

}  // namespace
}  // namespace gshare::policy::testing
