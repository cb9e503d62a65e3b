// PolicyBase: the bookkeeping every policy shares — its own model of the node (per-function
// residency, outstanding bursts, predictors; per-GPU memory, tenant, ready queue, link), event
// dispatch, action emission that keeps the model consistent with what the environment will do,
// eviction (least recently used, or cheapest victims first), and a wakeup heap. Concrete
// policies (keepalive.cc, proxy_swap.cc, fifo.cc, slack_scheduler.cc) decide only where and
// when functions go, through the hooks below.
//
// Invariants (between Handle() calls):
//  1. Gpu::used == sum of FootprintBytes over functions whose state is on that GPU (a swap-in
//     in flight counts at its target), and used <= memory for every GPU.
//  2. A function is in at most one place: a GPU's ready queue (queued), a policy's own wait
//     structure (waiting), running as a GPU's tenant, or reserved as a GPU's tenant while its
//     swap-in completes (Gpu::tenant == f && !running).
//  3. A GPU's ready queue holds only functions with outstanding bursts.
//  4. A function pinned to its GPU (FunctionSpec::pinned) with state on a GPU stays there,
//     resident: it is never a victim (Evictable), never swapped out, deep-evicted or moved
//     (SwapOut, DeepEvict and SwapIn assert it), and while its GPU is unavailable it is held
//     rather than moved. One whose state the environment keeps on a GPU
//     (FunctionRegistered::state_on) goes only there, for every policy: at registration when
//     it fits (AdoptPinned), else with its first burst (PlacePinned). One that is also
//     FunctionSpec::pinned_parkable may be parked there as a victim of memory pressure
//     (MakeRoom: EvictVictim parks it where others are deep-evicted) and comes back there only
//     (PlacePinned); it is still never deep-evicted or moved.
//
// Thread-safety: none (see policy.h).
#pragma once

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "gshare/policy/policy.h"
#include "gshare/policy/predictor.h"

namespace gshare::policy::internal {

class PolicyBase : public Policy {
 public:
  PolicyBase(std::string name, const PolicyConfig& config);
  std::string_view name() const override { return name_; }
  void Handle(const Event& event, ActionList& out) final;
  Time NextWakeup() const override;
  size_t tracked_entries() const final {
    return fns_.size() + wakes_.size() + held_.size() + OwnEntries();
  }

 protected:
  struct Fn {
    FunctionSpec spec;
    bool registered = false;
    Residency where = Residency::kHost;
    GpuId gpu = kNoGpu;       // GPU holding its state (kParked/kResident), else kNoGpu
    bool transfer = false;    // swap-in or deep eviction in flight
    bool running = false;     // granted and executing
    bool queued = false;      // in gpus_[gpu].ready
    bool waiting = false;     // held in the concrete policy's own queue
    bool pinned = false;      // KeepResident: evicted by MakeRoom only as a last resort
                              // (a soft pin; spec.pinned is the hard one: Movable)
    bool held = false;        // waiting (with `waiting` set) until some GPU is available
    std::deque<Time> pending; // arrival times of outstanding bursts, oldest first
    Time last_use = 0;        // last arrival or burst end (LRU key)
    Time grant_time = 0;
    Duration grant_pred = 0;
    size_t member_pos = 0;    // index in gpus_[gpu].members
    bool swap_from_parked = false;     // the swap-in in flight moves weights only
    GpuId evicting_from = kNoGpu;      // GPU a deep eviction in flight is leaving
    int retries = 0;                   // placements that found no GPU in a row
    // The GPU its state was last on (kNoGpu: never placed). After a deep eviction the live
    // arbiter keeps the vGPU there until the memory is needed, so coming back is cheapest.
    GpuId last_gpu = kNoGpu;
    // FunctionRegistered::state_on until the function is first placed (kNoGpu: none).
    GpuId state_on = kNoGpu;
    Time idle_wake = kNever;           // a policy's pending idle wakeup (policy scratch)
    // Its current burst held a GPU and gave it back with work left (SliceExpired): a re-grant,
    // ranked by the holding bound (slack_scheduler.cc PickReady). Cleared when the burst ends.
    bool yielded = false;
    Time queued_at = 0;                // when it last entered a ready queue (Enqueue)
    // Its current burst ran co-run (a co-run grant, or a holder a co-run grant joined). Such a
    // burst's GPU time is stretched by its co-runners: the execution-time predictor does not
    // learn from it (OnCorunBurstEnd sees it instead). Cleared when the burst ends.
    bool corun = false;
    ExecPredictor exec;
    ArrivalPredictor arrivals;
    Time deadline() const { return pending.empty() ? kNever : pending.front() + spec.slo; }
    bool idle() const { return pending.empty() && !running && !transfer; }
  };
  struct Gpu {
    GpuSpec spec;
    bool active = false;
    bool available = true;            // false between GpuUnavailable and GpuAvailable
    uint64_t used = 0;
    FunctionId tenant = kNoFunction;  // running, or reserved while its swap-in completes
    std::deque<std::pair<FunctionId, Duration>> ready;  // with the predicted execution
    Duration ready_work = 0;          // predicted execution of the bursts in `ready`
    Time tenant_end = 0;              // predicted end of the tenant's burst
    Time link_free = 0;               // when the link finishes the transfers issued so far
    std::vector<FunctionId> members;  // functions with state here (including in-flight swap-ins)
    // Holders besides `tenant` (co-running, spec.corun GPUs only): functions granted with
    // Grant corun = true whose burst has not ended. Non-empty only while `tenant` runs; when the
    // tenant's burst ends the first of them becomes the tenant.
    std::vector<FunctionId> corunners;
    uint32_t evictions_in_flight = 0;
    Time activated_at = 0;
    uint64_t free() const { return spec.memory_bytes - used; }
    bool empty() const {
      return members.empty() && tenant == kNoFunction && ready.empty() && evictions_in_flight == 0;
    }
  };
  enum class Evict : uint8_t { kDeep, kParkFirst };

  // ---- hooks for concrete policies ----
  // f has an outstanding burst, is not on any GPU's tenant/ready, not waiting, not in transfer,
  // and is not kResident. Decide: swap it in somewhere, or hold it (set waiting, wake later).
  virtual void Place(Time now, FunctionId f) = 0;
  // f is resident and idle and a burst arrived: return true after moving it elsewhere (its
  // GPU is too busy to meet the deadline), false to queue it where it is (the default).
  virtual bool Relocate(Time /*now*/, FunctionId /*f*/) { return false; }
  // The policy's predicted execution time of f's next burst.
  virtual Duration Predict(FunctionId f) const = 0;
  virtual void OnStarted(Time /*now*/) {}
  virtual void OnRegistered(Time /*now*/, FunctionId /*f*/) {}
  virtual void OnArrival(Time /*now*/, FunctionId /*f*/) {}
  virtual void OnBurstDone(Time /*now*/, FunctionId /*f*/, GpuId /*g*/) {}
  virtual void OnGpuEmpty(Time /*now*/, GpuId /*g*/) {}
  virtual void OnGpuIdle(Time /*now*/, GpuId /*g*/) {}
  // g became unavailable (its functions are being moved off by the base) / available again.
  virtual void OnGpuUnavailable(Time /*now*/, GpuId /*g*/) {}
  virtual void OnGpuAvailable(Time /*now*/, GpuId /*g*/) {}
  virtual void OnWake(Time /*now*/, FunctionId /*f*/, uint32_t /*tag*/) {}
  // f is gone (FunctionGone): drop it from the concrete policy's own structures. Called before
  // the base forgets it (its Fn is still as it was).
  virtual void OnGone(Time /*now*/, FunctionId /*f*/) {}
  // f was just granted g (its burst predicted to end at gpus_[g].tenant_end).
  virtual void OnGranted(Time /*now*/, FunctionId /*f*/, GpuId /*g*/) {}
  // A resident function with nothing to do after a swap-in (a prefetch landed).
  virtual void OnPrefetched(Time /*now*/, FunctionId /*f*/) {}
  // Co-running (spec.corun GPUs only): whether ready f (resident on g, not running) may be
  // granted now beside g's running holders (Holders(g), at least one). Default: never.
  virtual bool MayCorun(Time /*now*/, FunctionId /*f*/, GpuId /*g*/) { return false; }
  // g's set of holders changed (`joined` was just granted co-run, or kNoFunction: one left)
  // while co-running; called after the base's bookkeeping.
  virtual void OnCorunChange(Time /*now*/, GpuId /*g*/, FunctionId /*joined*/) {}
  // A burst granted or joined co-run ended (before the base forgets its co-run state; f still
  // counts among g's holders). e.corun false: it ran alone after all (the live arbiter deferred
  // the co-run grant until the GPU was free): nothing to learn from or judge.
  virtual void OnCorunBurstEnd(Time /*now*/, FunctionId /*f*/, GpuId /*g*/, const BurstEnd& /*e*/) {}
  // Which entry of g's ready queue runs next (default 0: FIFO). REQUIRES: ready non-empty.
  virtual size_t PickReady(Time now, GpuId g) const;
  // Entries of the concrete policy's own per-function queues (tracked_entries()).
  virtual size_t OwnEntries() const { return 0; }
  // How load-at-dispatch (Dispatch) makes room.
  virtual Evict evict_mode() const { return Evict::kDeep; }

  // ---- actions (emit and update the model) ----
  void Activate(Time now, GpuId g);
  void Release(GpuId g);
  // REQUIRES: the SwapIn preconditions of policy.h. Returns the predicted completion time.
  Time SwapIn(Time now, FunctionId f, GpuId g);
  void SwapOut(Time now, FunctionId f);
  void DeepEvict(Time now, FunctionId f);
  // Puts f (with an outstanding burst) at the back of g's ready queue; dispatches if g is free.
  // f need not be resident on g: Dispatch() then loads it first (load-at-dispatch style).
  void Enqueue(Time now, FunctionId f, GpuId g);
  // Takes queued f out of g's ready queue (REQUIRES: f is in it).
  void Unqueue(FunctionId f, GpuId g);
  // Frees at least `need` bytes on g by evicting idle functions (kDeep: deep-evict; kParkFirst:
  // swap out resident ones, then deep-evict parked ones), pinned ones only as a last resort.
  // Victims: least recently used first, or with cost_aware_eviction_ the cheapest set that
  // covers the need (CheapestVictims). Evicts nothing unless the goal is reachable. Returns
  // whether free() >= need.
  bool MakeRoom(Time now, GpuId g, uint64_t need, Evict mode);
  // What making `need` bytes free on g would cost: the sum of the victims' EvictionCost (0 when
  // it fits already), or a negative value when MakeRoom could not reach it — or, without
  // `pinned_too`, not without evicting a pinned function.
  double RoomCost(Time now, GpuId g, uint64_t need, Evict mode, bool pinned_too = true) const;
  // Expected bytes per second that evicting f (freeing `bytes`) would have to bring back: its
  // bytes times its reuse rate, 1 / max(mean inter-arrival gap, time idle) (a function idle
  // for longer than its usual gap is less likely to be wanted soon; without a known gap, the
  // time idle but at least a second).
  virtual double EvictionCost(Time now, FunctionId f, uint64_t bytes) const;
  // With config_.swap_out_copies, how long the copy-out of the victims MakeRoom(now, g, need,
  // mode) would pick takes on g's link (0 when it fits already, or without copies).
  Duration RoomTime(Time now, GpuId g, uint64_t need, Evict mode) const;
  // Link time of evicting f (as SwapOut when `park`, else as DeepEvict).
  Duration EvictTime(FunctionId f, bool park) const;
  // Bytes MakeRoom could free on g (free + evictable).
  uint64_t Reclaimable(GpuId g, Evict mode) const;
  // Bytes f needs on g to become resident (less what it already holds there).
  uint64_t Need(FunctionId f, GpuId g) const;
  // Placement preference of g for f, lower is better: 0 where f's state is or was last, 1
  // where it fits in free memory without evicting anyone, 2 where room must be made.
  int Affinity(FunctionId f, GpuId g) const;
  void Pin(FunctionId f, bool pin);
  // FunctionSpec::pinned: the GPU f may only be on (its state's GPU, else the state_on hint of
  // its registration), or kNoGpu when it may go anywhere.
  GpuId PinnedTo(FunctionId f) const;
  // Whether f's state may leave its GPU (swap-out, deep eviction, a move): not pinned, or
  // nothing on a GPU yet.
  bool Movable(FunctionId f) const;
  // Whether f may be swapped out where it is (SwapOut: parked): Movable, or pinned_parkable.
  bool Parkable(FunctionId f) const;
  // What taking f as a victim frees: its footprint (deep eviction), or its weights when it may
  // only be parked (pinned_parkable).
  uint64_t VictimBytes(FunctionId f) const;
  // Frees f's memory for MakeRoom: deep-evicts it, or parks it when it may not leave its GPU.
  void EvictVictim(Time now, FunctionId f);
  // Whether f may be swapped in onto g (PinnedTo allows it).
  bool MayGo(FunctionId f, GpuId g) const {
    const GpuId pin = PinnedTo(f);
    return pin == kNoGpu || pin == g;
  }
  // A wakeup for function f (kNoFunction: none): OnWake(t, f, tag), unless a later WakeAt(.., f,
  // tag) superseded it (only the latest wakeup of a function and tag fires) or f is gone by
  // then. REQUIRES: tag < kWakeTags.
  void WakeAt(Time t, FunctionId f, uint32_t tag);
  // A wakeup keyed by GPU g instead (OnWake(t, g, tag)); the latest per GPU and tag fires.
  void WakeGpuAt(Time t, GpuId g, uint32_t tag);
  // The pending WakeGpuAt(.., g, tag), if any, will not fire.
  void CancelGpuWake(GpuId g, uint32_t tag);
  // f (with an outstanding burst, not placed) waits until a GPU becomes available; the base
  // places it then. For policies that find every GPU unavailable.
  void Hold(FunctionId f);

  // ---- queries ----
  // Predicted transfer time of bringing f to kResident on g, on an idle link.
  Duration SwapTime(FunctionId f, GpuId g) const;
  Duration SwapTime(FunctionId f, GpuId g, const Transfer& t) const;
  // A lower bound on SwapTime(f, g) for every GPU g that does not hold f's state: the smallest
  // restore overhead plus the copy over the fastest link. When even this misses a deadline,
  // only f's own GPU can meet it, and a placement scan need look at no other.
  Duration MinSwapElsewhere(FunctionId f) const;
  // g's host link's learned bandwidth (bytes per microsecond).
  double LinkSpeed(GpuId g) const { return links_[g].bytes_per_us(); }
  // When g could start f's burst if f were swapped in now and queued behind g's work (with
  // `link_delay` more on g's link first: the victims' copy-out, RoomTime).
  Time PredictedStart(Time now, FunctionId f, GpuId g, Duration link_delay = 0) const;
  // g's running functions: the tenant (when running) and its co-runners.
  std::vector<FunctionId> Holders(GpuId g) const;
  // When g's current tenant and ready queue are predicted to be done.
  Time GpuFreeAt(Time now, GpuId g) const;
  // When g's tenant is predicted to end: its predicted end, or with overrun_estimate_ and a
  // running tenant past it, now + the time it has run so far; `now` without a tenant.
  Time TenantEnd(Time now, GpuId g) const;
  int ActiveGpus() const { return active_count_; }
  // GPUs the policy may use (not between GpuUnavailable and GpuAvailable).
  int AvailableGpus() const { return available_count_; }
  bool Usable(GpuId g) const { return gpus_[g].available; }
  // The active GPUs in increasing id order.
  const std::vector<GpuId>& active_gpus() const { return active_; }

  std::string name_;
  PolicyConfig config_;
  // MakeRoom picks its victims by EvictionCost instead of least recently used (the slack
  // scheduler with `residency`; the baselines keep LRU).
  bool cost_aware_eviction_ = false;
  // TenantEnd() of a tenant that overran its prediction: as long again as it has run (else
  // now, as if it ended at once).
  bool overrun_estimate_ = false;
  std::vector<Fn> fns_;
  std::vector<Gpu> gpus_;

 private:
  LinkBandwidths links_;  // one per GPU, learned from completed swap-ins
  Duration min_restore_overhead_ = 0;  // over every GPU (MinSwapElsewhere)
  void Emit(ActionKind kind, FunctionId f, GpuId g, Duration slice = 0, bool pin = false,
            bool corun = false);
  void Touch(GpuId g);  // g's emptiness must be re-checked at the end of this Handle()
  void AddMember(FunctionId f, GpuId g);
  void RemoveMember(FunctionId f);
  void Dispatch(Time now, GpuId g);
  void TakeReady(GpuId g, size_t i);
  void Grant(Time now, FunctionId f, GpuId g);
  // Grants ready f on g beside g's holders (Grant corun = true).
  void GrantCorun(Time now, FunctionId f, GpuId g);
  // Co-run grants for g's ready functions that MayCorun allows (g's tenant running).
  void TryCorun(Time now, GpuId g);
  // f no longer holds g (its burst ended, its slice expired, it is gone): the first co-runner
  // takes over as tenant when f was the tenant.
  void ReleaseHolder(Time now, FunctionId f, GpuId g);
  void MaybeEmpty(Time now, GpuId g);
  void HandleArrival(Time now, FunctionId f);
  void HandleBurstEnd(Time now, const BurstEnd& e);
  void HandleSwapDone(Time now, const SwapDone& e);
  void HandleGone(Time now, FunctionId f);
  void HandleUnavailable(Time now, GpuId g);
  void HandleAvailable(Time now, GpuId g);
  // Places f, or holds it when no GPU is available.
  void PlaceOrHold(Time now, FunctionId f);
  // f (on the host, or parked on g: pinned_parkable; with work) may only go to g = PinnedTo(f):
  // queued there (loaded at dispatch, once room is made), or held while g is unavailable.
  void PlacePinned(Time now, FunctionId f, GpuId g);
  // Just registered f pinned to a GPU where the environment keeps its state (state_on): the
  // policy takes it as resident there at once (a swap-in that moves nothing), so that its
  // memory counts from the start, when it fits beside what is there.
  void AdoptPinned(Time now, FunctionId f);
  // Resident f (with work) is served on its GPU, or held while that GPU is unavailable.
  void Serve(Time now, FunctionId f);
  // f has state on an unavailable GPU: deep-evict it if it is neither running nor in transfer
  // (it is placed elsewhere when the eviction completes, if it has work).
  void Evacuate(Time now, FunctionId f);
  void FireTimers(Time now);
  bool Evictable(FunctionId f, GpuId g, bool pinned_too) const;
  std::vector<FunctionId> EvictionOrder(GpuId g, Residency state, bool pinned_too = false) const;
  // The cheapest set of g's evictable (unpinned) functions in `state` whose `freed(f)` bytes
  // add up to at least `need` (greedy by cost per byte, then pruned, against the cheapest
  // single victim that covers it alone); empty if they cannot. Adds the set's cost to *cost.
  template <class Freed>
  std::vector<FunctionId> CheapestVictims(Time now, GpuId g, Residency state, uint64_t need,
                                          Freed freed, double* cost) const;

  // Wakeups. Each (function, tag) and each (GPU, tag) has a slot; arming it again supersedes
  // the wakeup pending there (only the latest one fires), and FunctionGone supersedes every
  // slot of the function. Superseded wakeups stay in the heap until they come due or a
  // compaction drops them, so its size stays within twice the armed slots (at most
  // kWakeTags per live function and per GPU) plus kMinCompact, however many bursts come.
  static constexpr uint32_t kWakeTags = 8;  // tags 0..7 (REQUIRES of WakeAt / WakeGpuAt)
  struct WakeSlot {
    uint32_t seq = 0;    // of the latest wakeup armed here
    bool armed = false;  // that wakeup is in the heap and has not fired
  };
  struct Wake {
    Time at;
    FunctionId f;   // function, or GPU when `gpu`; kNoFunction: no slot (never superseded)
    uint32_t tag;
    uint32_t seq;   // the slot's seq when armed
    bool gpu;
    bool operator>(const Wake& o) const { return at > o.at; }
  };
  // Its slot (nullptr: kNoFunction, never superseded).
  WakeSlot* SlotOf(FunctionId key, uint32_t tag, bool gpu);
  const WakeSlot* SlotOf(const Wake& w) const;
  // Whether a later WakeAt for the same slot, or FunctionGone, superseded w.
  bool Stale(const Wake& w) const {
    const WakeSlot* slot = SlotOf(w);
    return slot != nullptr && slot->seq != w.seq;
  }
  void Arm(Time t, FunctionId key, uint32_t tag, bool gpu);
  void PushWake(const Wake& w);
  void DropStaleFront();  // so that NextWakeup() names a wakeup that will fire
  // A min-heap on `at` (std::push_heap/pop_heap with greater), so superseded wakeups can be
  // dropped in place: PushWake compacts it once more than half of it is superseded.
  std::vector<Wake> wakes_;
  size_t stale_ = 0;  // superseded wakeups in wakes_
  static constexpr size_t kMinCompact = 32;
  std::vector<WakeSlot> fn_slots_;   // kWakeTags per function id
  std::vector<WakeSlot> gpu_slots_;  // kWakeTags per GPU
  std::vector<bool> gpu_empty_seen_;  // OnGpuEmpty already called for this empty spell
  std::vector<GpuId> touched_;        // GPUs to re-check at the end of Handle()
  std::vector<GpuId> active_;         // sorted
  ActionList* out_ = nullptr;  // valid during Handle()
  int active_count_ = 0;
  int available_count_ = 0;
  std::vector<FunctionId> held_;  // functions held until a GPU is available (Hold)
};

}  // namespace gshare::policy::internal
