// Shared bookkeeping of every policy: the node model, event dispatch, actions, swaps and the
// ready queues (see policy_base.h for the invariants). Co-run dispatch is corun_dispatch.cc,
// eviction policy_eviction.cc, wakeups policy_wakeups.cc.
#include "policy_base.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

namespace gshare::policy::internal {

namespace {
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;
}  // namespace

PolicyBase::PolicyBase(std::string name, const PolicyConfig& config)
    : name_(std::move(name)), config_(config) {
  gpus_.resize(config.gpus.size());
  gpu_empty_seen_.assign(config.gpus.size(), false);
  gpu_slots_.resize(config.gpus.size() * kWakeTags);
  std::vector<double> link_priors;
  for (size_t g = 0; g < gpus_.size(); ++g) {
    gpus_[g].spec = config.gpus[g];
    link_priors.push_back(config.gpus[g].link_bytes_per_us);
    min_restore_overhead_ = g == 0 ? config.gpus[g].restore_overhead
                                   : std::min(min_restore_overhead_, config.gpus[g].restore_overhead);
  }
  links_ = LinkBandwidths(link_priors);
  available_count_ = static_cast<int>(gpus_.size());
}

Time PolicyBase::NextWakeup() const { return wakes_.empty() ? kNever : wakes_.front().at; }

namespace {
// The function an event names (kNoFunction: none).
FunctionId Named(const EventBody& body) {
  return std::visit([](const auto& e) -> FunctionId {
    if constexpr (requires { e.function; }) {
      return e.function;
    } else {
      return kNoFunction;
    }
  }, body);
}
}  // namespace

void PolicyBase::Handle(const Event& event, ActionList& out) {
  const FunctionId named = Named(event.body);
  // Protocol item 5: an event naming a function that is not registered (gone, or a late
  // completion of a gone owner's action) changes nothing; FunctionRegistered makes one.
  const bool ignored = named != kNoFunction &&
                       !std::holds_alternative<FunctionRegistered>(event.body) &&
                       (named >= fns_.size() || !fns_[named].registered);
  out_ = &out;
  const Time now = event.now;
  if (!ignored) std::visit(
      Overloaded{
          [&](const Started&) { OnStarted(now); },
          [&](const FunctionRegistered& e) {
            if (fns_.size() <= e.function) {
              fns_.resize(static_cast<size_t>(e.function) + 1);
              fn_slots_.resize(fns_.size() * kWakeTags);
            }
            Fn& fn = fns_[e.function];
            fn = Fn{};
            fn.spec = e.spec;
            fn.registered = true;
            fn.exec = ExecPredictor(e.spec);
            if (e.state_on < gpus_.size()) fn.state_on = fn.last_gpu = e.state_on;
            OnRegistered(now, e.function);
            AdoptPinned(now, e.function);
          },
          [&](const BurstStart& e) { HandleArrival(now, e.function); },
          [&](const BurstEnd& e) { HandleBurstEnd(now, e); },
          [&](const SliceExpired& e) {
            Fn& fn = fns_[e.function];
            fn.running = false;
            fn.yielded = true;
            ReleaseHolder(now, e.function, e.gpu);
            if (gpus_[e.gpu].available) {
              Enqueue(now, e.function, e.gpu);
            } else {  // a function pinned there is held (Evacuate)
              Evacuate(now, e.function);
            }
          },
          [&](const Idle&) {},
          [&](const SwapDone& e) { HandleSwapDone(now, e); },
          [&](const Timer&) {},
          [&](const MemoryPressure& e) {
            (void)MakeRoom(now, e.gpu, gpus_[e.gpu].free() + e.bytes, Evict::kDeep);
          },
          [&](const FunctionGone& e) { HandleGone(now, e.function); },
          [&](const GpuUnavailable& e) { HandleUnavailable(now, e.gpu); },
          [&](const GpuAvailable& e) { HandleAvailable(now, e.gpu); },
      },
      event.body);
  FireTimers(now);
  // Only GPUs this event or its actions touched can have become empty.
  if (std::holds_alternative<Started>(event.body)) {
    for (GpuId g = 0; g < gpus_.size(); ++g) touched_.push_back(g);
  }
  std::visit([&](const auto& e) {
    if constexpr (requires { e.gpu; }) Touch(e.gpu);
  }, event.body);
  for (size_t i = 0; i < touched_.size(); ++i) {
    const GpuId g = touched_[i];
    Gpu& gpu = gpus_[g];
    if (gpu.active && gpu.empty() && !gpu.available) {
      Release(g);  // an unavailable GPU goes as soon as everything has left it
    } else if (gpu.active && gpu.empty()) {
      if (!gpu_empty_seen_[g]) {
        gpu_empty_seen_[g] = true;
        OnGpuEmpty(now, g);
      }
    } else {
      gpu_empty_seen_[g] = false;
    }
  }
  touched_.clear();
  out_ = nullptr;
}

void PolicyBase::Emit(ActionKind kind, FunctionId f, GpuId g, Duration slice, bool pin,
                      bool corun) {
  out_->push_back(Action{kind, f, g, slice, pin, corun});
  Touch(g);
}

void PolicyBase::Touch(GpuId g) {
  if (g < gpus_.size()) touched_.push_back(g);
}

void PolicyBase::AddMember(FunctionId f, GpuId g) {
  fns_[f].member_pos = gpus_[g].members.size();
  gpus_[g].members.push_back(f);
}

void PolicyBase::RemoveMember(FunctionId f) {
  Fn& fn = fns_[f];
  auto& members = gpus_[fn.gpu].members;
  const FunctionId last = members.back();
  members[fn.member_pos] = last;
  fns_[last].member_pos = fn.member_pos;
  members.pop_back();
}

void PolicyBase::Activate(Time now, GpuId g) {
  assert(!gpus_[g].active && gpus_[g].available);
  gpus_[g].active = true;
  gpus_[g].activated_at = now;
  gpus_[g].link_free = now;
  ++active_count_;
  active_.insert(std::upper_bound(active_.begin(), active_.end(), g), g);
  Emit(ActionKind::kActivateGpu, kNoFunction, g);
}

void PolicyBase::Release(GpuId g) {
  assert(gpus_[g].active && gpus_[g].empty());
  gpus_[g].active = false;
  --active_count_;
  active_.erase(std::lower_bound(active_.begin(), active_.end(), g));
  Emit(ActionKind::kReleaseGpu, kNoFunction, g);
}

Time PolicyBase::SwapIn(Time now, FunctionId f, GpuId g) {
  Fn& fn = fns_[f];
  Gpu& gpu = gpus_[g];
  assert(gpu.active && !fn.transfer && fn.where != Residency::kResident);
  // Invariant 4: a pinned function never moves (a parkable one comes back where it was parked).
  assert(MayGo(f, g) && (Movable(f) || fn.gpu == g));
  const Transfer t = SwapInCost(fn.spec, fn.where, fn.gpu, g, gpu.spec);
  const Duration link_time = SwapTime(f, g, t);
  fn.swap_from_parked = fn.where == Residency::kParked && fn.gpu == g;
  if (fn.where != Residency::kHost) {
    gpus_[fn.gpu].used -= FootprintBytes(fn.spec, fn.where);
    Touch(fn.gpu);
    RemoveMember(f);
  }
  gpu.used += FootprintBytes(fn.spec, Residency::kResident);
  assert(gpu.used <= gpu.spec.memory_bytes);
  fn.where = Residency::kResident;
  fn.gpu = g;
  fn.last_gpu = g;
  AddMember(f, g);
  fn.transfer = true;
  gpu.link_free = std::max(now, gpu.link_free) + link_time;
  Emit(ActionKind::kSwapIn, f, g);
  return gpu.link_free;
}

void PolicyBase::SwapOut(Time now, FunctionId f) {
  Fn& fn = fns_[f];
  assert(fn.where == Residency::kResident && !fn.running && !fn.transfer && Parkable(f));
  Gpu& gpu = gpus_[fn.gpu];
  gpu.used -= fn.spec.weights_bytes;
  if (config_.swap_out_copies) gpu.link_free = std::max(now, gpu.link_free) + EvictTime(f, true);
  fn.where = Residency::kParked;
  Emit(ActionKind::kSwapOut, f, fn.gpu);
}

void PolicyBase::DeepEvict(Time now, FunctionId f) {
  Fn& fn = fns_[f];
  assert(fn.where != Residency::kHost && !fn.running && !fn.transfer && Movable(f));
  Gpu& gpu = gpus_[fn.gpu];
  gpu.link_free = std::max(now, gpu.link_free) + EvictTime(f, false);
  gpu.used -= FootprintBytes(fn.spec, fn.where);
  ++gpu.evictions_in_flight;
  Emit(ActionKind::kDeepEvict, f, fn.gpu);
  RemoveMember(f);
  if (fn.pinned) Pin(f, false);
  fn.where = Residency::kHost;
  fn.evicting_from = fn.gpu;
  fn.last_gpu = fn.gpu;
  fn.gpu = kNoGpu;
  fn.transfer = true;
}

void PolicyBase::Pin(FunctionId f, bool pin) {
  if (fns_[f].pinned == pin) return;
  fns_[f].pinned = pin;
  Emit(ActionKind::kKeepResident, f, fns_[f].gpu, 0, pin);
}

void PolicyBase::Enqueue(Time now, FunctionId f, GpuId g) {
  Fn& fn = fns_[f];
  assert(!fn.queued && !fn.pending.empty());
  fn.queued = true;
  fn.queued_at = now;
  const Duration pred = Predict(f);
  gpus_[g].ready.push_back({f, pred});
  gpus_[g].ready_work += pred;
  Dispatch(now, g);
}

void PolicyBase::Grant(Time now, FunctionId f, GpuId g) {
  Fn& fn = fns_[f];
  fn.running = true;
  fn.grant_time = now;
  fn.grant_pred = Predict(f);
  gpus_[g].tenant = f;
  gpus_[g].tenant_end = now + fn.grant_pred;
  Emit(ActionKind::kGrant, f, g, config_.slice);
  OnGranted(now, f, g);
}

void PolicyBase::Unqueue(FunctionId f, GpuId g) {
  const auto& ready = gpus_[g].ready;
  for (size_t i = 0; i < ready.size(); ++i) {
    if (ready[i].first == f) return TakeReady(g, i);
  }
  assert(false && "Unqueue: not in the ready queue");
}

void PolicyBase::TakeReady(GpuId g, size_t i) {
  Gpu& gpu = gpus_[g];
  fns_[gpu.ready[i].first].queued = false;
  gpu.ready_work -= gpu.ready[i].second;
  gpu.ready.erase(gpu.ready.begin() + static_cast<long>(i));
}

size_t PolicyBase::PickReady(Time /*now*/, GpuId /*g*/) const { return 0; }

void PolicyBase::Dispatch(Time now, GpuId g) {
  Gpu& gpu = gpus_[g];
  while (gpu.tenant == kNoFunction && !gpu.ready.empty()) {
    const size_t i = PickReady(now, g);
    const auto [f, pred] = gpu.ready[i];
    Fn& fn = fns_[f];
    if (fn.where != Residency::kResident || fn.gpu != g) {
      if (fn.where == Residency::kResident || fn.transfer) {
        // Resident (or arriving) elsewhere: serve it there instead.
        TakeReady(g, i);
        if (!fn.transfer) Enqueue(now, f, fn.gpu);
        continue;
      }
      // Load at dispatch: make room, swap in, and hold the GPU for it.
      const uint64_t need = FootprintBytes(fn.spec, Residency::kResident) -
                            (fn.gpu == g ? FootprintBytes(fn.spec, fn.where) : 0);
      if (!MakeRoom(now, g, need, evict_mode())) {
        // No room while the GPU's memory is held by functions queued behind f: run the first
        // of those now rather than deadlock; f is retried when something frees.
        for (size_t j = 0; j < gpu.ready.size(); ++j) {
          const FunctionId other = gpu.ready[j].first;
          const Fn& o = fns_[other];
          if (o.where == Residency::kResident && o.gpu == g && !o.transfer && !o.pending.empty()) {
            TakeReady(g, j);
            Grant(now, other, g);
            return;
          }
        }
        return;
      }
      TakeReady(g, i);
      const Time done = SwapIn(now, f, g);
      gpu.tenant = f;
      gpu.tenant_end = done + pred;
      return;
    }
    TakeReady(g, i);
    if (fn.pending.empty()) continue;
    Grant(now, f, g);
  }
  if (gpu.spec.corun && !gpu.ready.empty()) TryCorun(now, g);
}

void PolicyBase::HandleArrival(Time now, FunctionId f) {
  Fn& fn = fns_[f];
  fn.pending.push_back(now);
  fn.arrivals.Observe(now);
  fn.last_use = now;
  OnArrival(now, f);
  if (fn.running || fn.queued || fn.waiting || fn.transfer) return;
  if (fn.gpu != kNoGpu && gpus_[fn.gpu].tenant == f) return;
  if (fn.where == Residency::kResident) {
    if (!Usable(fn.gpu)) return Serve(now, f);  // pinned to an unavailable GPU: held
    if (!Relocate(now, f)) Enqueue(now, f, fn.gpu);
  } else {
    PlaceOrHold(now, f);
  }
}

void PolicyBase::PlaceOrHold(Time now, FunctionId f) {
  if (const GpuId pin = PinnedTo(f); pin != kNoGpu && fns_[f].where != Residency::kResident) {
    return PlacePinned(now, f, pin);
  }
  if (available_count_ == 0) return Hold(f);
  Place(now, f);
}

void PolicyBase::PlacePinned(Time now, FunctionId f, GpuId g) {
  if (!Usable(g)) return Hold(f);
  if (!gpus_[g].active) Activate(now, g);
  Enqueue(now, f, g);
}

void PolicyBase::AdoptPinned(Time now, FunctionId f) {
  const GpuId g = PinnedTo(f);
  if (g == kNoGpu || fns_[f].where != Residency::kHost || !Usable(g)) return;
  if (gpus_[g].free() < Need(f, g)) return;  // placed there with its first burst (PlacePinned)
  if (!gpus_[g].active) Activate(now, g);
  SwapIn(now, f, g);  // its state is there already: the environment completes it at once
}

void PolicyBase::Serve(Time now, FunctionId f) {
  Fn& fn = fns_[f];
  if (!Usable(fn.gpu)) return Hold(f);
  Enqueue(now, f, fn.gpu);
}

void PolicyBase::Hold(FunctionId f) {
  Fn& fn = fns_[f];
  if (fn.held) return;
  fn.held = true;
  fn.waiting = true;
  held_.push_back(f);
}

void PolicyBase::Evacuate(Time now, FunctionId f) {
  Fn& fn = fns_[f];
  if (fn.where == Residency::kHost || fn.running || fn.transfer) return;
  if (Movable(f)) return DeepEvict(now, f);
  // Pinned to this GPU (invariant 4): it stays, and its work waits until the GPU is back.
  if (!fn.pending.empty() && !fn.queued && !fn.waiting) Hold(f);
}

void PolicyBase::HandleUnavailable(Time now, GpuId g) {
  Gpu& gpu = gpus_[g];
  if (!gpu.available) return;
  gpu.available = false;
  --available_count_;
  OnGpuUnavailable(now, g);
  // Work queued here goes elsewhere; the tenant is asked to yield (its burst end or slice
  // expiry evacuates it); a swap-in in flight here is evacuated when it lands.
  std::vector<FunctionId> displaced;
  while (!gpu.ready.empty()) {
    displaced.push_back(gpu.ready.back().first);
    TakeReady(g, gpu.ready.size() - 1);
  }
  if (gpu.tenant != kNoFunction && fns_[gpu.tenant].running) {
    Emit(ActionKind::kPreempt, gpu.tenant, g);
  }
  for (FunctionId c : gpu.corunners) Emit(ActionKind::kPreempt, c, g);
  const std::vector<FunctionId> members = gpu.members;
  for (FunctionId f : members) Evacuate(now, f);
  for (auto it = displaced.rbegin(); it != displaced.rend(); ++it) {
    const FunctionId f = *it;
    Fn& fn = fns_[f];
    if (fn.transfer || fn.waiting || fn.queued || fn.running || fn.pending.empty()) continue;
    if (fn.where == Residency::kResident) {
      Serve(now, f);  // resident on another (available) GPU: run it there
    } else {
      PlaceOrHold(now, f);
    }
  }
}

void PolicyBase::HandleAvailable(Time now, GpuId g) {
  Gpu& gpu = gpus_[g];
  if (gpu.available) return;
  gpu.available = true;
  ++available_count_;
  OnGpuAvailable(now, g);
  std::vector<FunctionId> held;
  held.swap(held_);
  for (FunctionId f : held) {
    Fn& fn = fns_[f];
    if (!fn.held) continue;
    fn.held = false;
    fn.waiting = false;
    if (!fn.registered || fn.pending.empty() || fn.transfer) continue;
    if (fn.where == Residency::kResident) {
      Serve(now, f);  // pinned to its GPU (invariant 4): held until that one is back
    } else {
      PlaceOrHold(now, f);
    }
  }
}

void PolicyBase::HandleBurstEnd(Time now, const BurstEnd& e) {
  Fn& fn = fns_[e.function];
  Gpu& gpu = gpus_[e.gpu];
  // A co-run grant may still have run alone (the live arbiter's join rules deferred it until
  // the GPU was free): e.corun says how it ran, and only then is it a co-run burst to learn from
  // or to judge. The co-run bookkeeping of a grant believed co-run ends either way.
  if (fn.corun || e.corun) OnCorunBurstEnd(now, e.function, e.gpu, e);
  if (!e.corun) fn.exec.Observe(e.gpu_time);
  if (!fn.pending.empty()) fn.pending.pop_front();
  fn.running = false;
  fn.yielded = false;
  fn.corun = false;
  fn.last_use = now;
  ReleaseHolder(now, e.function, e.gpu);
  if (!gpu.available) return Evacuate(now, e.function);  // a pinned one is held
  if (!fn.pending.empty()) Enqueue(now, e.function, e.gpu);
  Dispatch(now, e.gpu);
  OnBurstDone(now, e.function, e.gpu);
  if (gpu.tenant == kNoFunction && gpu.ready.empty()) OnGpuIdle(now, e.gpu);
}

void PolicyBase::HandleSwapDone(Time now, const SwapDone& e) {
  Fn& fn = fns_[e.function];
  switch (e.kind) {
    case SwapKind::kIn: {
      fn.transfer = false;
      Gpu& gpu = gpus_[e.gpu];
      // Every completed copy teaches the link's bandwidth (a restore's fixed overhead is not
      // copying). The live arbiter tells the policy a default bandwidth; simcuda and busy hosts
      // copy far slower, and swap times predicted from the default made every swap look cheap.
      {
        const Duration copy = fn.swap_from_parked ? e.took : e.took - gpu.spec.restore_overhead;
        if (copy > 0) links_.Observe(e.gpu, e.bytes, copy);
      }
      if (!gpu.available) {  // it landed on a GPU that went away meanwhile: move it on
        if (gpu.tenant == e.function && !fn.running) gpu.tenant = kNoFunction;
        Evacuate(now, e.function);
        break;
      }
      if (gpu.tenant == e.function && !fn.running) {
        if (fn.pending.empty()) {
          gpu.tenant = kNoFunction;
          Dispatch(now, e.gpu);
        } else {
          Grant(now, e.function, e.gpu);
        }
      } else if (!fn.pending.empty() && !fn.queued) {
        Enqueue(now, e.function, e.gpu);
      } else if (fn.pending.empty()) {
        OnPrefetched(now, e.function);
      }
      break;
    }
    case SwapKind::kOut:
      break;
    case SwapKind::kDeepEvict: {
      fn.transfer = false;
      if (fn.evicting_from != kNoGpu) --gpus_[fn.evicting_from].evictions_in_flight;
      fn.evicting_from = kNoGpu;
      if (!fn.pending.empty() && !fn.waiting && !fn.queued && fn.registered) PlaceOrHold(now, e.function);
      break;
    }
  }
}

void PolicyBase::HandleGone(Time now, FunctionId f) {
  Fn& fn = fns_[f];
  OnGone(now, f);
  if (fn.held) held_.erase(std::remove(held_.begin(), held_.end(), f), held_.end());
  for (uint32_t tag = 0; tag < kWakeTags; ++tag) {  // its pending wakeups are dropped (Stale)
    WakeSlot& slot = fn_slots_[static_cast<size_t>(f) * kWakeTags + tag];
    if (slot.armed) ++stale_;
    slot.armed = false;
    ++slot.seq;
  }
  if (fn.gpu != kNoGpu) {
    Gpu& gpu = gpus_[fn.gpu];
    if (fn.running) ReleaseHolder(now, f, fn.gpu);
    if (gpu.tenant == f) gpu.tenant = kNoFunction;
    gpu.used -= FootprintBytes(fn.spec, fn.where);
    RemoveMember(f);
  }
  if (fn.evicting_from != kNoGpu) --gpus_[fn.evicting_from].evictions_in_flight;
  for (Gpu& gpu : gpus_) {
    for (auto it = gpu.ready.begin(); it != gpu.ready.end();) {
      if (it->first == f) {
        gpu.ready_work -= it->second;
        it = gpu.ready.erase(it);
      } else {
        ++it;
      }
    }
  }
  const GpuId was = fn.gpu;
  const GpuId leaving = fn.evicting_from;
  fn = Fn{};
  Touch(leaving);
  if (was != kNoGpu) {
    Touch(was);
    Dispatch(now, was);
  }
}

Duration PolicyBase::SwapTime(FunctionId f, GpuId g, const Transfer& t) const {
  const Fn& fn = fns_[f];
  const Gpu& gpu = gpus_[g];
  const Duration overhead =
      (fn.where == Residency::kParked && fn.gpu == g) ? 0 : gpu.spec.restore_overhead;
  const double copy = static_cast<double>(t.bytes) / LinkSpeed(g);
  return overhead + static_cast<Duration>(std::ceil(copy));
}

Duration PolicyBase::MinSwapElsewhere(FunctionId f) const {
  // Elsewhere a swap-in brings the whole footprint with the restore overhead (SwapInCost), over
  // a link no faster than the fastest (and a rounded-up quotient is monotone in the divisor).
  if (links_.size() == 0) return 0;
  const double bytes = static_cast<double>(FootprintBytes(fns_[f].spec, Residency::kResident));
  return min_restore_overhead_ + static_cast<Duration>(std::ceil(bytes / links_.fastest()));
}

Duration PolicyBase::SwapTime(FunctionId f, GpuId g) const {
  const Fn& fn = fns_[f];
  if (fn.where == Residency::kResident && fn.gpu == g) return 0;
  return SwapTime(f, g, SwapInCost(fn.spec, fn.where, fn.gpu, g, gpus_[g].spec));
}

Time PolicyBase::TenantEnd(Time now, GpuId g) const {
  const Gpu& gpu = gpus_[g];
  if (gpu.tenant == kNoFunction) return now;
  const Fn& tenant = fns_[gpu.tenant];
  if (overrun_estimate_ && tenant.running && now > gpu.tenant_end) {
    return now + (now - tenant.grant_time);
  }
  return std::max(now, gpu.tenant_end);
}

Time PolicyBase::GpuFreeAt(Time now, GpuId g) const { return TenantEnd(now, g) + gpus_[g].ready_work; }

Time PolicyBase::PredictedStart(Time now, FunctionId f, GpuId g, Duration link_delay) const {
  const Duration swap = SwapTime(f, g);
  const Time swap_end = swap == 0 ? now : std::max(now, gpus_[g].link_free) + link_delay + swap;
  return std::max(swap_end, GpuFreeAt(now, g));
}

}  // namespace gshare::policy::internal
