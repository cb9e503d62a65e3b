// The exact model's shared pieces: discretisation of a continuous workload and the evaluation
// of one assignment with optimal keep/reload choices (see exact.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gshare/policy/exact.h"

namespace gshare::policy {

namespace {
int CeilSteps(Duration d, Duration step) { return static_cast<int>((d + step - 1) / step); }
int FloorSteps(Duration d, Duration step) { return static_cast<int>(d / step); }

// A span during which one function's state is on a GPU: loaded over [load_start, need) (after
// `release`: step 0, or the end of its previous use there) and resident until `end`.
struct Segment {
  int f, release, need, end, load, load_start;
};

// Active steps of one GPU holding `segs` (with load_start set), or -1 if memory overflows.
int64_t SegmentCost(const ExactInstance& in, const std::vector<Segment>& segs) {
  std::vector<int64_t> mem(static_cast<size_t>(in.horizon) + 1, 0);
  std::vector<int> cover(mem.size(), 0);
  for (const Segment& s : segs) {
    for (int t = s.load_start; t < s.end; ++t) {
      mem[static_cast<size_t>(t)] += static_cast<int64_t>(in.functions[static_cast<size_t>(s.f)].bytes);
      ++cover[static_cast<size_t>(t)];
    }
  }
  int64_t active = 0;
  for (size_t t = 0; t < cover.size(); ++t) {
    if (mem[t] > static_cast<int64_t>(in.gpu_memory)) return -1;
    if (cover[t] > 0) ++active;
  }
  return active;
}

// The loads of one GPU share its link: one at a time. Loading later only shrinks a segment
// (less memory held, fewer active steps), so for a given order of the loads the best schedule
// places them backwards, each as late as its need and its successor allow; the best order is
// found by trying them all (a handful of loads per GPU). Just-in-time loads that do not overlap
// are optimal at once. Returns the fewest active steps, or -1 if no order is feasible.
int64_t BestLoadOrder(const ExactInstance& in, std::vector<Segment>& segs) {
  std::vector<size_t> order(segs.size());
  for (size_t i = 0; i < segs.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return segs[a].need != segs[b].need ? segs[a].need < segs[b].need : a < b;
  });
  int64_t best = -1;
  do {
    int next_start = std::numeric_limits<int>::max();
    bool ok = true;
    for (size_t k = order.size(); k-- > 0;) {
      Segment& s = segs[order[k]];
      s.load_start = std::min(s.need, next_start) - s.load;
      if (s.load_start < s.release) {
        ok = false;
        break;
      }
      next_start = s.load_start;
    }
    if (!ok) continue;
    bool just_in_time = true;
    for (const Segment& s : segs) just_in_time &= s.load_start == s.need - s.load;
    const int64_t cost = SegmentCost(in, segs);
    if (just_in_time) return cost;  // every load as late as it can be: nothing beats it
    if (cost >= 0 && (best < 0 || cost < best)) best = cost;
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}
}  // namespace

ExactInstance Discretize(const std::vector<FunctionSpec>& functions,
                         const std::vector<TimedRequest>& requests, int gpus, const GpuSpec& gpu,
                         Duration step, bool lead_in, bool relaxed) {
  // Safe rounding makes every discrete schedule feasible in continuous time; relaxed rounding
  // makes every continuous schedule representable (so the optimum bounds any policy).
  const auto up = [&](Duration d) { return relaxed ? FloorSteps(d, step) : CeilSteps(d, step); };
  const auto down = [&](Duration d) { return relaxed ? CeilSteps(d, step) : FloorSteps(d, step); };
  ExactInstance in;
  in.gpus = gpus;
  in.gpu_memory = gpu.memory_bytes;
  in.step = step;
  for (const FunctionSpec& f : functions) {
    const Transfer t = SwapInCost(f, Residency::kHost, kNoGpu, 0, gpu);
    in.functions.push_back({FootprintBytes(f, Residency::kResident), std::max(1, up(t.time))});
  }
  // Lead-in: the clairvoyant solver may load before the first arrival.
  int lead = 0;
  if (lead_in) {
    for (const ExactFunction& f : in.functions) lead = std::max(lead, f.load);
  }
  const Time t0 = requests.empty() ? 0 : requests.front().arrival;
  for (const TimedRequest& r : requests) {
    ExactRequest e;
    e.function = static_cast<int>(r.function);
    e.arrival = lead + up(r.arrival - t0);
    e.deadline = lead + down(r.arrival - t0 + functions[r.function].slo);
    e.exec = std::max(1, up(r.exec));
    in.requests.push_back(e);
    in.horizon = std::max(in.horizon, e.deadline);
  }
  return in;
}

int64_t EvaluateAssignment(const ExactInstance& in, const std::vector<int>& gpu,
                           const std::vector<int>& start) {
  const size_t n = in.requests.size();
  if (gpu.size() != n || start.size() != n) return -1;
  for (size_t r = 0; r < n; ++r) {
    const ExactRequest& q = in.requests[r];
    if (gpu[r] == -1) continue;  // dropped
    if (gpu[r] < 0 || gpu[r] >= in.gpus || start[r] < q.arrival || start[r] + q.exec > q.deadline) {
      return -1;
    }
  }
  int64_t total = 0;
  for (int g = 0; g < in.gpus; ++g) {
    std::vector<size_t> on;
    for (size_t r = 0; r < n; ++r) {
      if (gpu[r] == g) on.push_back(r);
    }
    if (on.empty()) continue;
    std::sort(on.begin(), on.end(), [&](size_t a, size_t b) { return start[a] < start[b]; });
    for (size_t i = 1; i < on.size(); ++i) {
      if (start[on[i]] < start[on[i - 1]] + in.requests[on[i - 1]].exec) return -1;  // overlap
    }
    // Uses per function, in time order; gaps between consecutive uses are the choices.
    struct Use {
      int f, s, e;
    };
    std::vector<Use> uses;
    for (size_t r : on) {
      uses.push_back({in.requests[r].function, start[r], start[r] + in.requests[r].exec});
    }
    std::stable_sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.f < b.f; });
    std::vector<size_t> gaps;  // index i: gap between uses[i-1] and uses[i] of the same function
    for (size_t i = 0; i < uses.size(); ++i) {
      const bool first = i == 0 || uses[i - 1].f != uses[i].f;
      const int load = in.functions[static_cast<size_t>(uses[i].f)].load;
      if (first) {
        if (uses[i].s - load < 0) return -1;
      } else if (uses[i].s - load >= uses[i - 1].e) {
        gaps.push_back(i);  // reloading is possible; otherwise staying resident is forced
      }
    }
    if (gaps.size() > 20) return -1;  // beyond what this evaluator is for
    int64_t best = -1;
    std::vector<Segment> segs;
    for (uint32_t mask = 0; mask < (1u << gaps.size()); ++mask) {
      // Resident segments: each begins with a load that must end by its first use.
      segs.clear();
      size_t gi = 0;
      for (size_t i = 0; i < uses.size(); ++i) {
        const int f = uses[i].f;
        const bool first = i == 0 || uses[i - 1].f != f;
        bool reload = false;
        if (!first && gi < gaps.size() && gaps[gi] == i) reload = (mask >> gi++) & 1u;
        if (first || reload) {
          segs.push_back({f, first ? 0 : uses[i - 1].e, uses[i].s, uses[i].e,
                          in.functions[static_cast<size_t>(f)].load, 0});
        } else {
          segs.back().end = uses[i].e;
        }
      }
      const int64_t cost = BestLoadOrder(in, segs);
      if (cost >= 0 && (best < 0 || cost < best)) best = cost;
    }
    if (best < 0) return -1;
    total += best;
  }
  return total;
}

}  // namespace gshare::policy
