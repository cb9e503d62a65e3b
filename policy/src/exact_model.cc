// The exact model's shared pieces: discretisation of a continuous workload and the evaluation
// of one assignment with optimal keep/reload choices (see exact.h).
#include <algorithm>
#include <cmath>

#include "gshare/policy/exact.h"

namespace gshare::policy {

namespace {
int CeilSteps(Duration d, Duration step) { return static_cast<int>((d + step - 1) / step); }
int FloorSteps(Duration d, Duration step) { return static_cast<int>(d / step); }
}  // namespace

ExactInstance Discretize(const std::vector<FunctionSpec>& functions,
                         const std::vector<TimedRequest>& requests, int gpus, const GpuSpec& gpu,
                         Duration step, bool lead_in) {
  ExactInstance in;
  in.gpus = gpus;
  in.gpu_memory = gpu.memory_bytes;
  in.step = step;
  for (const FunctionSpec& f : functions) {
    const Transfer t = SwapInCost(f, Residency::kHost, kNoGpu, 0, gpu);
    in.functions.push_back({FootprintBytes(f, Residency::kResident), std::max(1, CeilSteps(t.time, step))});
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
    e.arrival = lead + CeilSteps(r.arrival - t0, step);
    e.deadline = lead + FloorSteps(r.arrival - t0 + functions[r.function].slo, step);
    e.exec = std::max(1, CeilSteps(r.exec, step));
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
    std::vector<int64_t> mem(static_cast<size_t>(in.horizon) + 1);
    std::vector<int> cover(static_cast<size_t>(in.horizon) + 1);
    for (uint32_t mask = 0; mask < (1u << gaps.size()); ++mask) {
      std::fill(mem.begin(), mem.end(), 0);
      std::fill(cover.begin(), cover.end(), 0);
      auto add = [&](int f, int from, int to) {
        for (int t = from; t < to; ++t) {
          mem[static_cast<size_t>(t)] += static_cast<int64_t>(in.functions[static_cast<size_t>(f)].bytes);
          ++cover[static_cast<size_t>(t)];
        }
      };
      size_t gi = 0;
      int from = 0;
      for (size_t i = 0; i < uses.size(); ++i) {
        const int load = in.functions[static_cast<size_t>(uses[i].f)].load;
        const bool first = i == 0 || uses[i - 1].f != uses[i].f;
        bool reload = false;
        if (!first && gi < gaps.size() && gaps[gi] == i) reload = (mask >> gi++) & 1u;
        if (first || reload) {
          if (!first) add(uses[i].f, from, uses[i - 1].e);
          from = uses[i].s - load;
        }
        const bool last = i + 1 == uses.size() || uses[i + 1].f != uses[i].f;
        if (last) add(uses[i].f, from, uses[i].e);
      }
      int64_t active = 0;
      bool fits = true;
      for (size_t t = 0; t < cover.size(); ++t) {
        if (cover[t] > 0) ++active;
        if (mem[t] > static_cast<int64_t>(in.gpu_memory)) fits = false;
      }
      if (fits && (best < 0 || active < best)) best = active;
    }
    if (best < 0) return -1;
    total += best;
  }
  return total;
}

}  // namespace gshare::policy
