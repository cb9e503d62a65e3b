// The discrete-event node simulator (see engine.h).
#include "gshare/sim/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <queue>

#include "fmt/format.h"
#include "gshare/policy/interference.h"

namespace gshare::sim {

namespace {

using policy::Action;
using policy::ActionKind;
using policy::GpuId;
using policy::kNoGpu;
using policy::Residency;

enum class Ev : uint8_t { kRunEnd, kSwapDone };

struct Pending {
  Time at;
  uint64_t seq;
  Ev kind;
  FunctionId f;
  GpuId g;
  policy::SwapKind swap;
  uint64_t bytes;
  Duration took;
  bool burst_done;  // kRunEnd: the burst finished (else its slice expired)
  uint64_t token = 0;  // kRunEnd on a co-run GPU: valid only while it equals FnState::token
  bool operator>(const Pending& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

struct FnState {
  Residency where = Residency::kHost;
  GpuId gpu = kNoGpu;
  GpuId last_gpu = kNoGpu;  // the GPU its state was last on (for counting migrations)
  bool transfer = false;
  bool running = false;
  // Its outstanding requests, oldest first: the request's index, and where the function's
  // state was when it arrived (one deque: a request is queued and finished once).
  struct Queued {
    size_t request;
    Residency arrived_as;
  };
  std::deque<Queued> pending;
  Duration remaining = 0;      // execution left of the head request
  Duration burst_exec = 0;     // execution of the head request so far
  // Where the head request's time went (for the late-request causes).
  Time head_since = 0;         // when it became the head (arrival, or its predecessor's end)
  Time grant_at = -1;          // its first grant; -1 before
  Duration head_cold = 0;      // time it waited for a swap-in from the host / a migration
  Duration head_warm = 0;      // time it waited for a weights-only swap-in (from parked)
  Time swap_issued = 0;        // the swap-in in flight: when issued, and whether cold
  bool swap_cold = false;
  // Running on a GPU marked corun (processor sharing at the contention model's rates):
  double solo_left = 0;        // solo execution left of the head request (us)
  double rate = 1.0;           // its rate now (policy::ContentionRate)
  Time since = 0;              // when solo_left was last advanced
  Time run_start = 0;          // this grant's start (wall time held counts from it)
  Time slice_end = policy::kNever;
  uint64_t token = 0;          // of its one valid pending run end
  bool burst_corun = false;    // some slice of the head request ran beside others
};

struct GpuState {
  bool active = false;
  bool unavailable = false;
  Time activated_at = 0;
  uint64_t used = 0;
  FunctionId tenant = policy::kNoFunction;
  Time link_free = 0;
  Time last_run_end = 0;  // end of the last burst (or slice) it ran
  std::vector<FunctionId> holders;  // corun GPUs: every running function (tenant = the first)
  Time busy_since = 0;              // corun GPUs: since when it has had holders
};

class Engine {
 public:
  Engine(const SimWorkload& w, const SimOptions& o, policy::Policy& p, bool measure)
      : w_(w), o_(o), policy_(p), measure_(measure), fns_(w.functions.size()), gpus_(o.gpus.size()) {
    result_.policy = std::string(p.name());
    result_.requests = w.requests.size();
    result_.latencies.assign(w.requests.size(), -1);
    if (o.record_requests) {
      result_.request_gpu.assign(w.requests.size(), -1);
      result_.request_start.assign(w.requests.size(), -1);
    }
    for (const Outage& out : o.outages) {
      if (out.gpu >= gpus_.size() || out.to <= out.from) continue;
      changes_.push_back({out.from, out.gpu, false});
      if (out.to != policy::kNever) changes_.push_back({out.to, out.gpu, true});
    }
    std::stable_sort(changes_.begin(), changes_.end(),
                     [](const Change& a, const Change& b) { return a.at < b.at; });
  }

  RunResult Run() {
    CountDedicated();
    Deliver(0, policy::Started{});
    shares_.assign(w_.functions.size(), 1.0);
    for (FunctionId f = 0; f < w_.functions.size(); ++f) {
      Deliver(0, policy::FunctionRegistered{f, w_.functions[f]});
      shares_[f] = policy_.ShareFor(f).compute_share;  // the process starts with it (policy.h)
    }
    size_t next = 0;
    uint64_t idle_timers = 0;
    while (true) {
      const Time t_arr = next < w_.requests.size() ? w_.requests[next].arrival : policy::kNever;
      const Time t_ev = heap_.empty() ? policy::kNever : heap_.top().at;
      const Time t_wake = policy_.NextWakeup();
      const Time t_change = next_change_ < changes_.size() ? changes_[next_change_].at : policy::kNever;
      if (t_change != policy::kNever && t_change <= t_arr && t_change <= t_ev && t_change <= t_wake) {
        ChangeAvailability(changes_[next_change_++]);
        continue;
      }
      if (t_arr == policy::kNever && t_ev == policy::kNever && t_change == policy::kNever) {
        // Only timers left: stop once every request is done, or when timers stop helping.
        if (outstanding_ == 0 || t_wake == policy::kNever || ++idle_timers > 10'000) break;
      } else {
        idle_timers = 0;
      }
      if (t_ev <= t_arr && t_ev <= t_wake && t_ev != policy::kNever) {
        const Pending e = heap_.top();
        heap_.pop();
        Complete(e);
      } else if (t_arr <= t_wake && t_arr != policy::kNever) {
        const SimRequest& r = w_.requests[next];
        const FunctionId f = Route(r.function);
        FnState& fn = fns_[f];
        fn.pending.push_back({next, fn.transfer ? Residency::kHost : fn.where});
        if (r.exec <= w_.functions[f].slo) ++result_.solo_feasible;
        if (fn.pending.size() == 1) StartHead(fn, r.arrival, r.exec);
        ++next;
        ++outstanding_;
        now_ = std::max(now_, r.arrival);
        Deliver(r.arrival, policy::BurstStart{f});
      } else {
        Deliver(std::max(now_, t_wake), policy::Timer{});
      }
      if (outstanding_ == 0 && next == w_.requests.size() && heap_.empty()) break;
    }
    Finish();
    return std::move(result_);
  }

 private:
  // The ceiling: each function alone on an always-resident GPU (FIFO, its own queue only).
  void CountDedicated() {
    std::vector<Time> free_at(w_.functions.size(), 0);
    for (const SimRequest& r : w_.requests) {
      const Time end = std::max(free_at[r.function], r.arrival) + r.exec;
      free_at[r.function] = end;
      if (end - r.arrival <= w_.functions[r.function].slo) ++result_.dedicated_on_time;
    }
  }

  struct Change {
    Time at;
    GpuId gpu;
    bool available;
  };

  void ChangeAvailability(const Change& c) {
    now_ = std::max(now_, c.at);
    gpus_[c.gpu].unavailable = !c.available;
    if (!c.available) return Deliver(c.at, policy::GpuUnavailable{c.gpu});
    for (const FnState& fn : fns_) {
      if (fn.where != Residency::kHost && fn.gpu == c.gpu) ++result_.outage_residue;
    }
    Deliver(c.at, policy::GpuAvailable{c.gpu});
  }

  // The instance a request naming `named` goes to (SimOptions::warm_routing).
  FunctionId Route(FunctionId named) {
    if (!o_.warm_routing || named >= w_.group.size()) return named;
    const FunctionId first = w_.group[named];
    if (members_.empty()) {
      members_.resize(w_.functions.size());
      for (FunctionId i = 0; i < w_.group.size(); ++i) members_[w_.group[i]].push_back(i);
    }
    const auto rank = [&](FunctionId i) {
      const FnState& fn = fns_[i];
      const bool idle = fn.pending.empty();
      const bool warm = !fn.transfer && fn.where == Residency::kResident;
      const bool parked = !fn.transfer && fn.where == Residency::kParked;
      const uint64_t tier = idle ? (warm ? 0 : parked ? 1 : 2) : 3;
      return std::make_pair(tier, idle ? 0 : fn.pending.size());
    };
    FunctionId best = named;
    auto best_rank = rank(named);
    for (FunctionId i : members_[first]) {
      const auto r = rank(i);
      if (r < best_rank) {
        best = i;
        best_rank = r;
      }
    }
    if (best != named) ++result_.rerouted;
    return best;
  }

  static void StartHead(FnState& fn, Time now, Duration exec) {
    fn.remaining = exec;
    fn.burst_exec = 0;
    fn.head_since = now;
    fn.grant_at = -1;
    fn.head_cold = 0;
    fn.head_warm = 0;
  }

  // Counts a late request under the largest of its delays (see RunResult).
  void ClassifyLate(const FnState& fn, size_t idx) {
    const SimRequest& r = w_.requests[idx];
    if (r.exec > w_.functions[r.function].slo) {
      ++result_.late_execution;
      return;
    }
    const Duration self = fn.head_since - r.arrival;
    const Duration waited = (fn.grant_at >= 0 ? fn.grant_at : now_) - fn.head_since;
    const Duration queue = waited - fn.head_cold - fn.head_warm;
    const Duration most = std::max({self, fn.head_cold, fn.head_warm, queue});
    if (most == self && self > 0) {
      ++result_.late_self_queue;
    } else if (most == fn.head_cold && most > 0) {
      ++result_.late_cold_start;
    } else if (most == fn.head_warm && most > 0) {
      ++result_.late_swap_in;
    } else {
      ++result_.late_gpu_queue;
    }
  }

  void Deliver(Time at, policy::EventBody body) {
    now_ = std::max(now_, at);
    actions_.clear();
    ++result_.events;
    if (measure_) {
      const auto t0 = std::chrono::steady_clock::now();
      policy_.Handle(policy::Event{now_, std::move(body)}, actions_);
      result_.policy_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else {
      policy_.Handle(policy::Event{now_, std::move(body)}, actions_);
    }
    // Actions may complete at once (a swap-out); their events are queued, not nested: Execute
    // never delivers, so actions_ is not touched while it is read (no copy per event).
    for (const Action& a : actions_) Execute(a);
  }

  void Violation(const std::string& what) {
    if (result_.violations++ == 0) result_.first_violation = fmt::format("t={}us: {}", now_, what);
  }

  void Push(Pending p) {
    p.seq = seq_++;
    heap_.push(p);
  }

  void SetActive(GpuId g, bool on) {
    GpuState& gpu = gpus_[g];
    if (on) {
      gpu.active = true;
      gpu.activated_at = now_;
      gpu.link_free = std::max(gpu.link_free, now_);
      ++active_;
      result_.peak_gpus = std::max(result_.peak_gpus, active_);
    } else {
      gpu.active = false;
      gpu_time_ += now_ - gpu.activated_at;
      --active_;
    }
    if (o_.record_timeline) result_.timeline.emplace_back(now_, active_);
  }

  void AddUsed(GpuId g, uint64_t bytes) {
    gpus_[g].used += bytes;
    if (gpus_[g].used > o_.gpus[g].memory_bytes) ++result_.memory_overcommits;
  }

  // A copy to the host queued on g's link (serialised with its other transfers).
  struct Transfer {
    Time at;  // when it completes
    uint64_t bytes;
    Duration took;
  };
  Transfer CopyOut(GpuId g, const policy::Transfer& t) {
    GpuState& gpu = gpus_[g];
    gpu.link_free = std::max(now_, gpu.link_free) + t.time;
    result_.swap_bytes += t.bytes;
    return {gpu.link_free, t.bytes, t.time};
  }
  Transfer CopyOut(GpuId g, uint64_t bytes) {
    if (bytes == 0) return {now_, 0, 0};
    const auto time = static_cast<Duration>(
        std::ceil(static_cast<double>(bytes) / o_.gpus[g].link_bytes_per_us));
    return CopyOut(g, policy::Transfer{bytes, time});
  }

  void Execute(const Action& a) {
    const bool has_f = a.function < fns_.size();
    const bool has_g = a.gpu < gpus_.size();
    switch (a.kind) {
      case ActionKind::kActivateGpu:
        if (!has_g || gpus_[a.gpu].active || gpus_[a.gpu].unavailable) {
          return Violation(fmt::format("activate gpu {}", a.gpu));
        }
        return SetActive(a.gpu, true);
      case ActionKind::kReleaseGpu: {
        if (!has_g || !gpus_[a.gpu].active || gpus_[a.gpu].used != 0 ||
            gpus_[a.gpu].tenant != policy::kNoFunction) {
          return Violation(fmt::format("release gpu {} (used {})", a.gpu, has_g ? gpus_[a.gpu].used : 0));
        }
        return SetActive(a.gpu, false);
      }
      case ActionKind::kSwapIn: {
        if (!has_f || !has_g || !gpus_[a.gpu].active || gpus_[a.gpu].unavailable ||
            fns_[a.function].transfer ||
            fns_[a.function].where == Residency::kResident) {
          return Violation(fmt::format("swap-in f{} to gpu {}", a.function, a.gpu));
        }
        FnState& fn = fns_[a.function];
        const policy::FunctionSpec& spec = w_.functions[a.function];
        const policy::Transfer t = policy::SwapInCost(spec, fn.where, fn.gpu, a.gpu, o_.gpus[a.gpu]);
        ++result_.swap_ins;
        result_.swap_in_bytes += t.bytes;
        if (fn.last_gpu != kNoGpu && fn.last_gpu != a.gpu) ++result_.migrations;
        fn.last_gpu = a.gpu;
        fn.swap_issued = now_;
        fn.swap_cold = !(fn.where == Residency::kParked && fn.gpu == a.gpu);
        if (fn.where != Residency::kHost) gpus_[fn.gpu].used -= policy::FootprintBytes(spec, fn.where);
        AddUsed(a.gpu, policy::FootprintBytes(spec, Residency::kResident));
        fn.where = Residency::kResident;
        fn.gpu = a.gpu;
        fn.transfer = true;
        GpuState& gpu = gpus_[a.gpu];
        const Time start = std::max(now_, gpu.link_free);
        gpu.link_free = start + t.time;
        result_.swap_bytes += t.bytes;
        Push({gpu.link_free, 0, Ev::kSwapDone, a.function, a.gpu, policy::SwapKind::kIn, t.bytes,
              t.time, false});
        return;
      }
      case ActionKind::kSwapOut: {
        if (!has_f || fns_[a.function].where != Residency::kResident || fns_[a.function].running ||
            fns_[a.function].transfer) {
          return Violation(fmt::format("swap-out f{}", a.function));
        }
        FnState& fn = fns_[a.function];
        ++result_.evictions;
        const uint64_t weights = w_.functions[a.function].weights_bytes;
        gpus_[fn.gpu].used -= weights;
        fn.where = Residency::kParked;
        const Transfer out = CopyOut(fn.gpu, o_.swap_out_copies ? weights : 0);
        Push({out.at, 0, Ev::kSwapDone, a.function, fn.gpu, policy::SwapKind::kOut, out.bytes,
              out.took, false});
        return;
      }
      case ActionKind::kDeepEvict: {
        if (!has_f || fns_[a.function].where == Residency::kHost || fns_[a.function].running ||
            fns_[a.function].transfer) {
          return Violation(fmt::format("deep-evict f{}", a.function));
        }
        FnState& fn = fns_[a.function];
        const policy::FunctionSpec& spec = w_.functions[a.function];
        ++result_.evictions;
        const uint64_t footprint = policy::FootprintBytes(spec, fn.where);
        gpus_[fn.gpu].used -= footprint;
        const Transfer out =
            o_.swap_out_copies ? CopyOut(fn.gpu, footprint)
                               : CopyOut(fn.gpu, policy::DeepEvictCost(spec, fn.where, o_.gpus[fn.gpu]));
        Push({out.at, 0, Ev::kSwapDone, a.function, fn.gpu, policy::SwapKind::kDeepEvict,
              out.bytes, out.took, false});
        fn.where = Residency::kHost;
        fn.gpu = kNoGpu;
        fn.transfer = true;
        return;
      }
      case ActionKind::kGrant: {
        if (has_g && o_.gpus[a.gpu].corun) return GrantCorun(a);
        if (a.corun) return Violation(fmt::format("co-run grant f{} on gpu {} not marked corun", a.function, a.gpu));
        if (!has_f || !has_g || fns_[a.function].where != Residency::kResident ||
            fns_[a.function].gpu != a.gpu || fns_[a.function].transfer ||
            fns_[a.function].pending.empty() || fns_[a.function].running ||
            gpus_[a.gpu].tenant != policy::kNoFunction || gpus_[a.gpu].unavailable) {
          return Violation(fmt::format("grant f{} on gpu {}", a.function, a.gpu));
        }
        FnState& fn = fns_[a.function];
        fn.running = true;
        if (fn.grant_at < 0) fn.grant_at = now_;
        gpus_[a.gpu].tenant = a.function;
        const bool whole = a.slice <= 0 || a.slice >= fn.remaining;
        const Duration run = whole ? fn.remaining : a.slice;
        Push({now_ + run, 0, Ev::kRunEnd, a.function, a.gpu, policy::SwapKind::kIn, 0, run, whole});
        return;
      }
      case ActionKind::kPreempt:
      case ActionKind::kKeepResident:
        return;  // bursts here are short; a preempt takes effect at the slice end
    }
  }

  // A grant on a GPU marked corun: f joins the GPU's holders (a co-run grant) or becomes its
  // only one; every holder then progresses at its contention-model rate (Reschedule).
  void GrantCorun(const Action& a) {
    const bool has_f = a.function < fns_.size();
    GpuState& gpu = gpus_[a.gpu];
    bool ok = has_f && fns_[a.function].where == Residency::kResident && fns_[a.function].gpu == a.gpu &&
              !fns_[a.function].transfer && !fns_[a.function].pending.empty() && !fns_[a.function].running &&
              !gpu.unavailable && (a.corun ? !gpu.holders.empty() : gpu.holders.empty()) &&
              gpu.holders.size() + 1 <= o_.gpus[a.gpu].max_clients;
    for (FunctionId h : gpu.holders) {
      if (has_f && !o_.corun_across_domains &&
          w_.functions[h].fault_domain != w_.functions[a.function].fault_domain) {
        ok = false;
      }
    }
    if (!ok) return Violation(fmt::format("{}grant f{} on gpu {}", a.corun ? "co-run " : "", a.function, a.gpu));
    FnState& fn = fns_[a.function];
    fn.running = true;
    if (fn.grant_at < 0) fn.grant_at = now_;
    fn.solo_left = static_cast<double>(fn.remaining);
    fn.since = now_;
    fn.run_start = now_;
    fn.slice_end = a.slice > 0 ? now_ + a.slice : policy::kNever;
    if (gpu.holders.empty()) gpu.busy_since = now_;
    gpu.holders.push_back(a.function);
    gpu.tenant = gpu.holders.front();
    if (a.corun) ++result_.corun_grants;
    if (gpu.holders.size() > 1) {
      for (FunctionId h : gpu.holders) fns_[h].burst_corun = true;
    }
    Reschedule(a.gpu);
  }

  // Processor sharing: advance every holder of g at its old rate, give each its new rate for
  // the current set, and schedule its run end (burst done, or slice end) at that rate.
  void Reschedule(GpuId g) {
    GpuState& gpu = gpus_[g];
    std::vector<policy::Corunner> set;
    for (FunctionId h : gpu.holders) {
      FnState& fn = fns_[h];
      fn.solo_left -= static_cast<double>(now_ - fn.since) * fn.rate;
      fn.since = now_;
      set.push_back(policy::CorunnerOf(w_.functions[h], shares_[h]));
    }
    for (size_t i = 0; i < gpu.holders.size(); ++i) {
      const FunctionId h = gpu.holders[i];
      FnState& fn = fns_[h];
      fn.rate = policy::ContentionRate(set, i);
      const Time done = now_ + static_cast<Duration>(std::ceil(std::max(0.0, fn.solo_left) / fn.rate - 1e-9));
      const Time at = std::min(done, fn.slice_end);
      Push({at, 0, Ev::kRunEnd, h, g, policy::SwapKind::kIn, 0, 0, done <= fn.slice_end, ++fn.token});
    }
  }

  void CompleteCorun(const Pending& e) {
    FnState& fn = fns_[e.f];
    if (e.token != fn.token || !fn.running) return;  // superseded by a Reschedule
    GpuState& gpu = gpus_[e.g];
    fn.solo_left -= static_cast<double>(now_ - fn.since) * fn.rate;
    fn.since = now_;
    fn.running = false;
    std::erase(gpu.holders, e.f);
    gpu.tenant = gpu.holders.empty() ? policy::kNoFunction : gpu.holders.front();
    gpu.last_run_end = e.at;
    if (gpu.holders.empty()) busy_time_ += now_ - gpu.busy_since;
    fn.burst_exec += now_ - fn.run_start;  // wall time held: stretched by the co-runners
    const bool done = e.burst_done || fn.solo_left < 0.5;
    fn.remaining = done ? 0 : std::max<Duration>(1, static_cast<Duration>(std::ceil(fn.solo_left)));
    Reschedule(e.g);  // the others speed up
    if (!done) return Deliver(e.at, policy::SliceExpired{e.f, e.g});
    const bool corun = fn.burst_corun;
    fn.burst_corun = false;
    FinishHead(e.f, e.g, corun);
  }

  void Complete(const Pending& e) {
    now_ = std::max(now_, e.at);
    if (e.kind == Ev::kRunEnd && o_.gpus[e.g].corun) return CompleteCorun(e);
    FnState& fn = fns_[e.f];
    if (e.kind == Ev::kSwapDone) {
      if (e.swap != policy::SwapKind::kOut) fn.transfer = false;
      if (e.swap == policy::SwapKind::kIn && !fn.pending.empty() && fn.grant_at < 0) {
        const Duration waited = e.at - std::max(fn.swap_issued, fn.head_since);
        if (waited > 0) (fn.swap_cold ? fn.head_cold : fn.head_warm) += waited;
      }
      return Deliver(e.at, policy::SwapDone{e.f, e.g, e.swap, e.bytes, e.took});
    }
    fn.running = false;
    gpus_[e.g].tenant = policy::kNoFunction;
    gpus_[e.g].last_run_end = e.at;
    busy_time_ += e.took;
    fn.remaining -= e.took;
    fn.burst_exec += e.took;
    if (!e.burst_done) return Deliver(e.at, policy::SliceExpired{e.f, e.g});
    FinishHead(e.f, e.g, false);
  }

  // The head request of f finished on g: latency, SLO, causes; then BurstEnd.
  void FinishHead(FunctionId f, GpuId g, bool corun) {
    FnState& fn = fns_[f];
    const Pending e{now_, 0, Ev::kRunEnd, f, g, policy::SwapKind::kIn, 0, 0, true};
    const size_t idx = fn.pending.front().request;
    const Residency was = fn.pending.front().arrived_as;
    fn.pending.pop_front();
    const Duration latency = now_ - w_.requests[idx].arrival;
    ++result_.completed;
    --outstanding_;
    if (latency <= w_.functions[e.f].slo) {
      ++result_.on_time;
    } else {
      (was == Residency::kHost ? result_.late_host
                               : was == Residency::kParked ? result_.late_parked : result_.late_resident)++;
      ClassifyLate(fn, idx);
    }
    result_.latencies[idx] = latency;
    if (o_.record_requests) {
      result_.request_gpu[idx] = static_cast<int>(e.g);
      result_.request_start[idx] = fn.grant_at;
    }
    const Duration used = fn.burst_exec;
    if (!fn.pending.empty()) StartHead(fn, now_, w_.requests[fn.pending.front().request].exec);
    Deliver(e.at, policy::BurstEnd{e.f, e.g, used, corun});
  }

  void Finish() {
    Duration tails = 0;
    for (GpuId g = 0; g < gpus_.size(); ++g) {
      if (!gpus_[g].active) continue;
      gpu_time_ += now_ - gpus_[g].activated_at;
      tails += now_ - std::max(gpus_[g].activated_at, gpus_[g].last_run_end);
    }
    result_.gpu_seconds_to_last_use = static_cast<double>(gpu_time_ - tails) / policy::kUsPerSecond;
    result_.end_time = now_;
    result_.unfinished = result_.requests - result_.completed;
    result_.slo_attainment =
        result_.requests ? static_cast<double>(result_.on_time) / static_cast<double>(result_.requests) : 1.0;
    result_.gpu_seconds = static_cast<double>(gpu_time_) / policy::kUsPerSecond;
    result_.busy_seconds = static_cast<double>(busy_time_) / policy::kUsPerSecond;
    const double price = o_.gpus.empty() ? 0.0 : o_.gpus[0].price_per_hour;
    result_.cost_usd = policy::GpuCostUsd(gpu_time_, price);
    result_.corun_revocations = policy_.corun_stats().revocations;
    SummariseLatencies(&result_);
  }

  const SimWorkload& w_;
  const SimOptions& o_;
  policy::Policy& policy_;
  bool measure_;
  std::vector<FnState> fns_;
  std::vector<GpuState> gpus_;
  std::vector<double> shares_;  // each function's compute share (Policy::ShareFor)
  std::vector<std::vector<FunctionId>> members_;  // warm_routing: each group's instances
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> heap_;
  std::vector<Change> changes_;  // GPU availability changes from options.outages, by time
  size_t next_change_ = 0;
  policy::ActionList actions_;
  RunResult result_;
  Time now_ = 0;
  uint64_t seq_ = 0;
  uint64_t outstanding_ = 0;
  int active_ = 0;
  Duration gpu_time_ = 0;
  Duration busy_time_ = 0;
};

}  // namespace

void SummariseLatencies(RunResult* r) {
  std::vector<Duration> sorted;
  sorted.reserve(r->latencies.size());
  for (Duration d : r->latencies) {
    if (d >= 0) sorted.push_back(d);
  }
  if (sorted.empty()) return;
  const auto at = [&](double q) {
    const size_t k = std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())));
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(k), sorted.end());
    return static_cast<double>(sorted[k]) / 1000.0;
  };
  r->p50_ms = at(0.50);
  r->p99_ms = at(0.99);
}

RunResult Simulate(const SimWorkload& workload, const SimOptions& options, policy::Policy& policy,
                   bool measure_policy_time) {
  Engine engine(workload, options, policy, measure_policy_time);
  return engine.Run();
}

}  // namespace gshare::sim
