// Test helper: a tiny node that drives a Policy in fixed time steps the way the live arbiter
// does — swaps complete after a fixed time, a grant runs its function's oldest request, and a
// holder whose slice ran out yields (SliceExpired) only when another function waits for work;
// otherwise its slice is renewed. Functions send requests either at given times or in a closed
// loop (the next one a gap after the previous one completed). Records grants, completions and
// latencies per function, and every action with its time (to compare two runs).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "driver.h"

namespace gshare::policy::testing {

class MiniNode {
 public:
  struct Stats {
    int grants = 0;
    int completed = 0;
    Duration max_latency = 0;
    std::vector<Duration> latencies;
  };
  struct Logged {
    Time at;
    Action action;
  };

  MiniNode(Driver& driver, size_t gpus, Duration step = 100, Duration swap_time = 1000)
      : d_(driver), holder_(gpus, kNoFunction), slice_end_(gpus, 0), step_(step),
        swap_time_(swap_time) {}

  void Register(Time at, FunctionId f, const FunctionSpec& spec, GpuId state_on = kNoGpu) {
    Apply(at, d_.Send(at, FunctionRegistered{f, spec, state_on}));
    fns_[f].live = true;
  }
  // Delivers `body` (e.g. MemoryPressure, GpuUnavailable) now and applies the actions.
  void Inject(EventBody body) { Apply(now_, d_.Send(now_, std::move(body))); }
  void Gone(Time at, FunctionId f) {
    F& fn = fns_[f];
    for (GpuId g = 0; g < holder_.size(); ++g) {
      if (holder_[g] == f) holder_[g] = kNoFunction;
    }
    swaps_.erase(std::remove_if(swaps_.begin(), swaps_.end(), [f](const Swap& s) { return s.f == f; }),
                 swaps_.end());
    fn = F{};
    Apply(at, d_.Send(at, FunctionGone{f}));
  }
  // One request of `work` arriving at `at`.
  void RequestAt(FunctionId f, Time at, Duration work) { fns_[f].arrivals.push_back({at, work}); }
  // Requests of `work` from `first` on, each `gap` after the previous one completed.
  void ClosedLoop(FunctionId f, Time first, Duration work, Duration gap) {
    F& fn = fns_[f];
    fn.loop = true;
    fn.loop_work = work;
    fn.loop_gap = gap;
    fn.arrivals.push_back({first, work});
  }

  // Steps from the current time to `end`.
  void RunUntil(Time end) {
    for (; now_ <= end; now_ += step_) Step(now_);
  }
  Time now() const { return now_; }

  const Stats& stats(FunctionId f) { return fns_[f].stats; }
  const std::vector<Logged>& log() const { return log_; }

 private:
  struct Req {
    Time arrival;
    Duration work;
  };
  struct F {
    bool live = false;
    std::deque<Req> arrivals;  // not yet arrived, in time order
    std::deque<Req> requests;  // arrived, oldest first (remaining work in `work`)
    Duration done_in_front = 0;  // work done on requests.front()
    bool loop = false;
    Duration loop_work = 0, loop_gap = 0;
    bool holding = false;
    GpuId gpu = kNoGpu;
    Stats stats;
  };
  struct Swap {
    FunctionId f;
    GpuId g;
    SwapKind kind;
    Time done;
  };

  void Step(Time t) {
    for (auto& [f, fn] : fns_) {
      while (fn.live && !fn.arrivals.empty() && fn.arrivals.front().arrival <= t) {
        fn.requests.push_back(fn.arrivals.front());
        fn.arrivals.pop_front();
        Apply(t, d_.Send(t, BurstStart{f}));
      }
    }
    for (size_t i = 0; i < swaps_.size();) {
      if (swaps_[i].done <= t) {
        const Swap s = swaps_[i];
        swaps_.erase(swaps_.begin() + static_cast<long>(i));
        Apply(t, d_.Send(t, SwapDone{s.f, s.g, s.kind, 1'000'000, swap_time_}));
      } else {
        ++i;
      }
    }
    for (GpuId g = 0; g < holder_.size(); ++g) {
      const FunctionId f = holder_[g];
      if (f == kNoFunction) continue;
      F& fn = fns_[f];
      fn.done_in_front += step_;
      const Req& front = fn.requests.front();
      if (fn.done_in_front >= front.work) {
        const Duration latency = t - front.arrival;
        fn.stats.latencies.push_back(latency);
        fn.stats.max_latency = std::max(fn.stats.max_latency, latency);
        ++fn.stats.completed;
        const Duration work = front.work;
        fn.requests.pop_front();
        fn.done_in_front = 0;
        fn.holding = false;
        holder_[g] = kNoFunction;
        if (fn.loop) fn.arrivals.push_back({t + fn.loop_gap, fn.loop_work});
        Apply(t, d_.Send(t, BurstEnd{f, g, work}));
      } else if (t >= slice_end_[g]) {
        if (SomeoneElseWaits(f)) {
          fn.holding = false;
          holder_[g] = kNoFunction;
          Apply(t, d_.Send(t, SliceExpired{f, g}));
        } else {
          slice_end_[g] = t + slice_;
        }
      }
    }
    if (d_.policy->NextWakeup() <= t) Apply(t, d_.Send(t, Timer{}));
  }

  bool SomeoneElseWaits(FunctionId holder) const {
    for (const auto& [f, fn] : fns_) {
      if (f != holder && fn.live && !fn.holding && !fn.requests.empty()) return true;
    }
    return false;
  }

  void Apply(Time t, const ActionList& actions) {
    for (const Action& a : actions) {
      log_.push_back({t, a});
      switch (a.kind) {
        case ActionKind::kSwapIn:
          swaps_.push_back({a.function, a.gpu, SwapKind::kIn, t + swap_time_});
          break;
        case ActionKind::kSwapOut:
          swaps_.push_back({a.function, a.gpu, SwapKind::kOut, t});
          break;
        case ActionKind::kDeepEvict:
          swaps_.push_back({a.function, a.gpu, SwapKind::kDeepEvict, t + swap_time_});
          break;
        case ActionKind::kGrant: {
          F& fn = fns_[a.function];
          EXPECT_EQ(holder_[a.gpu], kNoFunction) << "grant on a held GPU at " << t;
          EXPECT_FALSE(fn.requests.empty()) << "grant without a request at " << t;
          holder_[a.gpu] = a.function;
          fn.holding = true;
          fn.gpu = a.gpu;
          ++fn.stats.grants;
          slice_ = a.slice;
          slice_end_[a.gpu] = a.slice > 0 ? t + a.slice : kNever;
          break;
        }
        case ActionKind::kPreempt:
          slice_end_[a.gpu] = t;
          break;
        default:
          break;
      }
    }
  }

  Driver& d_;
  std::map<FunctionId, F> fns_;
  std::vector<FunctionId> holder_;
  std::vector<Time> slice_end_;
  std::vector<Swap> swaps_;
  std::vector<Logged> log_;
  Duration step_;
  Duration swap_time_;
  Duration slice_ = 0;
  Time now_ = 1;
};

}  // namespace gshare::policy::testing
