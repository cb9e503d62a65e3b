// Shared bookkeeping of every policy: the node model, event dispatch, actions, eviction (LRU
// or cost-aware), wakeups (see policy_base.h for the invariants).
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
  for (size_t g = 0; g < gpus_.size(); ++g) {
    gpus_[g].spec = config.gpus[g];
    gpus_[g].bw = BandwidthPredictor(config.gpus[g].link_bytes_per_us);
  }
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
            } else {
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
  assert(fn.where == Residency::kResident && !fn.running && !fn.transfer);
  Gpu& gpu = gpus_[fn.gpu];
  gpu.used -= fn.spec.weights_bytes;
  if (config_.swap_out_copies) gpu.link_free = std::max(now, gpu.link_free) + EvictTime(f, true);
  fn.where = Residency::kParked;
  Emit(ActionKind::kSwapOut, f, fn.gpu);
}

void PolicyBase::DeepEvict(Time now, FunctionId f) {
  Fn& fn = fns_[f];
  assert(fn.where != Residency::kHost && !fn.running && !fn.transfer);
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

void PolicyBase::GrantCorun(Time now, FunctionId f, GpuId g) {
  Fn& fn = fns_[f];
  Gpu& gpu = gpus_[g];
  fn.running = true;
  fn.corun = true;
  fn.grant_time = now;
  fn.grant_pred = Predict(f);
  fns_[gpu.tenant].corun = true;
  for (FunctionId h : gpu.corunners) fns_[h].corun = true;
  gpu.corunners.push_back(f);
  Emit(ActionKind::kGrant, f, g, config_.slice, false, /*corun=*/true);
  OnCorunChange(now, g, f);
}

void PolicyBase::TryCorun(Time now, GpuId g) {
  Gpu& gpu = gpus_[g];
  if (!gpu.spec.corun || gpu.tenant == kNoFunction || !fns_[gpu.tenant].running) return;
  // In queue order, and never past a function that may not co-run: co-run grants must not
  // overtake it (a stream of them would keep the GPU held and starve it of its exclusive turn).
  while (!gpu.ready.empty()) {
    const FunctionId f = gpu.ready.front().first;
    const Fn& fn = fns_[f];
    if (fn.where != Residency::kResident || fn.gpu != g || fn.transfer || fn.running ||
        fn.pending.empty() || !MayCorun(now, f, g)) {
      return;
    }
    TakeReady(g, 0);
    GrantCorun(now, f, g);
  }
}

void PolicyBase::ReleaseHolder(Time now, FunctionId f, GpuId g) {
  Gpu& gpu = gpus_[g];
  bool changed = false;
  if (gpu.tenant == f) {
    if (gpu.corunners.empty()) {
      gpu.tenant = kNoFunction;
    } else {
      gpu.tenant = gpu.corunners.front();
      gpu.corunners.erase(gpu.corunners.begin());
      const Fn& next = fns_[gpu.tenant];
      gpu.tenant_end = next.grant_time + next.grant_pred;
      changed = true;
    }
  } else {
    const auto it = std::find(gpu.corunners.begin(), gpu.corunners.end(), f);
    if (it != gpu.corunners.end()) {
      gpu.corunners.erase(it);
      changed = true;
    }
  }
  if (changed) OnCorunChange(now, g, kNoFunction);
}

std::vector<FunctionId> PolicyBase::Holders(GpuId g) const {
  const Gpu& gpu = gpus_[g];
  std::vector<FunctionId> holders;
  if (gpu.tenant != kNoFunction && fns_[gpu.tenant].running) holders.push_back(gpu.tenant);
  holders.insert(holders.end(), gpu.corunners.begin(), gpu.corunners.end());
  return holders;
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
    if (!Relocate(now, f)) Enqueue(now, f, fn.gpu);
  } else {
    PlaceOrHold(now, f);
  }
}

void PolicyBase::PlaceOrHold(Time now, FunctionId f) {
  if (available_count_ == 0) return Hold(f);
  Place(now, f);
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
  if (fn.where != Residency::kHost && !fn.running && !fn.transfer) DeepEvict(now, f);
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
      Enqueue(now, f, fn.gpu);  // resident on another (available) GPU: run it there
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
    if (fn.registered && !fn.pending.empty() && !fn.transfer) PlaceOrHold(now, f);
  }
}

void PolicyBase::HandleBurstEnd(Time now, const BurstEnd& e) {
  Fn& fn = fns_[e.function];
  Gpu& gpu = gpus_[e.gpu];
  if (fn.corun || e.corun) {
    OnCorunBurstEnd(now, e.function, e.gpu, e);
  } else {
    fn.exec.Observe(e.gpu_time);
  }
  if (!fn.pending.empty()) fn.pending.pop_front();
  fn.running = false;
  fn.yielded = false;
  fn.corun = false;
  fn.last_use = now;
  ReleaseHolder(now, e.function, e.gpu);
  if (!gpu.available) return Evacuate(now, e.function);
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
        if (copy > 0) gpu.bw.Observe(e.bytes, copy);
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

bool PolicyBase::Evictable(FunctionId f, GpuId g, bool pinned_too) const {
  const Fn& fn = fns_[f];
  return fn.idle() && (pinned_too || !fn.pinned) && !fn.queued && !fn.waiting &&
         gpus_[g].tenant != f;
}

std::vector<FunctionId> PolicyBase::EvictionOrder(GpuId g, Residency state, bool pinned_too) const {
  std::vector<FunctionId> order;
  for (FunctionId f : gpus_[g].members) {
    if (fns_[f].where == state && Evictable(f, g, pinned_too)) {
      order.push_back(f);
    }
  }
  std::sort(order.begin(), order.end(), [this](FunctionId a, FunctionId b) {
    return fns_[a].last_use != fns_[b].last_use ? fns_[a].last_use < fns_[b].last_use : a < b;
  });
  return order;
}

uint64_t PolicyBase::Reclaimable(GpuId g, Evict /*mode*/) const {
  uint64_t bytes = gpus_[g].free();
  for (FunctionId f : gpus_[g].members) {
    if (Evictable(f, g, /*pinned_too=*/true)) bytes += FootprintBytes(fns_[f].spec, fns_[f].where);
  }
  return bytes;
}

uint64_t PolicyBase::Need(FunctionId f, GpuId g) const {
  const Fn& fn = fns_[f];
  return FootprintBytes(fn.spec, Residency::kResident) -
         (fn.gpu == g ? FootprintBytes(fn.spec, fn.where) : 0);
}

int PolicyBase::Affinity(FunctionId f, GpuId g) const {
  const Fn& fn = fns_[f];
  if (fn.gpu == g || (fn.gpu == kNoGpu && fn.last_gpu == g)) return 0;
  return gpus_[g].free() >= Need(f, g) ? 1 : 2;
}

double PolicyBase::EvictionCost(Time now, FunctionId f, uint64_t bytes) const {
  const Fn& fn = fns_[f];
  const double idle = static_cast<double>(std::max<Duration>(0, now - fn.last_use));
  const double gap = fn.arrivals.gaps() > 0 ? std::max(fn.arrivals.MeanGap(), idle)
                                            : std::max<double>(idle, kUsPerSecond);
  const double reuse = static_cast<double>(bytes) * static_cast<double>(kUsPerSecond) / std::max(1.0, gap);
  // A copy-out moves the bytes now for certain: counted as if they came back within a second.
  return config_.swap_out_copies ? reuse + static_cast<double>(bytes) : reuse;
}

Duration PolicyBase::EvictTime(FunctionId f, bool park) const {
  const Fn& fn = fns_[f];
  const Gpu& gpu = gpus_[fn.gpu];
  if (!config_.swap_out_copies) return park ? 0 : DeepEvictCost(fn.spec, fn.where, gpu.spec).time;
  const uint64_t bytes = park ? fn.spec.weights_bytes : FootprintBytes(fn.spec, fn.where);
  return static_cast<Duration>(std::ceil(static_cast<double>(bytes) / gpu.bw.bytes_per_us()));
}

Duration PolicyBase::RoomTime(Time now, GpuId g, uint64_t need, Evict mode) const {
  const Gpu& gpu = gpus_[g];
  if (!config_.swap_out_copies || gpu.free() >= need) return 0;
  const uint64_t more = need - gpu.free();
  const bool park = mode == Evict::kParkFirst;
  auto freed = [this, park](FunctionId f) {
    return park ? fns_[f].spec.weights_bytes : FootprintBytes(fns_[f].spec, fns_[f].where);
  };
  double cost = 0;
  const std::vector<FunctionId> victims = CheapestVictims(now, g, Residency::kResident, more, freed, &cost);
  if (victims.empty()) {  // MakeRoom's fallback: at least the missing bytes are copied out
    return static_cast<Duration>(std::ceil(static_cast<double>(more) / gpu.bw.bytes_per_us()));
  }
  Duration total = 0;
  for (FunctionId f : victims) total += EvictTime(f, park);
  return total;
}

template <class Freed>
std::vector<FunctionId> PolicyBase::CheapestVictims(Time now, GpuId g, Residency state,
                                                    uint64_t need, Freed freed,
                                                    double* cost) const {
  struct Candidate {
    FunctionId f;
    uint64_t bytes;
    double cost;
  };
  std::vector<Candidate> all;
  for (FunctionId f : EvictionOrder(g, state)) {  // least recently used first: the tie-break
    const uint64_t bytes = freed(f);
    if (bytes > 0) all.push_back({f, bytes, EvictionCost(now, f, bytes)});
  }
  // Greedy by cost per *useful* byte (a victim larger than what is still missing counts only
  // the missing bytes: evicting a 1.1 GiB model to free 150 MiB is paid in full, so two small
  // victims may be cheaper), then drop any victim the rest already covers (most expensive
  // first). Quadratic in the candidates, who are the GPU's idle functions.
  std::vector<Candidate> taken;
  std::vector<bool> used(all.size(), false);
  uint64_t got = 0;
  while (got < need) {
    size_t best = all.size();
    double best_rate = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      if (used[i]) continue;
      const double rate = all[i].cost / static_cast<double>(std::min(all[i].bytes, need - got));
      if (best == all.size() || rate < best_rate) {
        best = i;
        best_rate = rate;
      }
    }
    if (best == all.size()) return {};
    used[best] = true;
    taken.push_back(all[best]);
    got += all[best].bytes;
  }
  std::vector<size_t> by_cost(taken.size());
  for (size_t i = 0; i < taken.size(); ++i) by_cost[i] = i;
  std::stable_sort(by_cost.begin(), by_cost.end(),
                   [&](size_t a, size_t b) { return taken[a].cost > taken[b].cost; });
  std::vector<bool> keep(taken.size(), true);
  double greedy_cost = 0;
  for (size_t i : by_cost) {
    if (got - taken[i].bytes >= need) {
      keep[i] = false;
      got -= taken[i].bytes;
    } else {
      greedy_cost += taken[i].cost;
    }
  }
  // One victim that covers the need alone may be cheaper than the greedy set.
  const Candidate* single = nullptr;
  for (const Candidate& c : all) {
    if (c.bytes >= need && (single == nullptr || c.cost < single->cost)) single = &c;
  }
  std::vector<FunctionId> victims;
  if (single != nullptr && single->cost < greedy_cost) {
    victims.push_back(single->f);
    *cost += single->cost;
    return victims;
  }
  for (size_t i = 0; i < taken.size(); ++i) {
    if (keep[i]) victims.push_back(taken[i].f);
  }
  *cost += greedy_cost;
  return victims;
}

double PolicyBase::RoomCost(Time now, GpuId g, uint64_t need, Evict mode, bool pinned_too) const {
  const Gpu& gpu = gpus_[g];
  if (gpu.free() >= need) return 0;
  if (Reclaimable(g, mode) < need) return -1;
  double cost = 0;
  const uint64_t more = need - gpu.free();
  auto footprint = [this](FunctionId f) { return FootprintBytes(fns_[f].spec, fns_[f].where); };
  if (!CheapestVictims(now, g, Residency::kResident, more, footprint, &cost).empty()) return cost;
  if (!pinned_too) {
    uint64_t unpinned = gpu.free();
    for (FunctionId f : gpu.members) {
      if (Evictable(f, g, /*pinned_too=*/false)) unpinned += footprint(f);
    }
    if (unpinned < need) return -1;
  }
  // Beyond one state's victims (or only pinned ones left): everything evictable, as MakeRoom's
  // fallback would take it.
  cost = 0;
  for (FunctionId f : gpu.members) {
    if (Evictable(f, g, /*pinned_too=*/true)) cost += EvictionCost(now, f, footprint(f));
  }
  return cost;
}

bool PolicyBase::MakeRoom(Time now, GpuId g, uint64_t need, Evict mode) {
  Gpu& gpu = gpus_[g];
  if (gpu.free() >= need) return true;
  if (Reclaimable(g, mode) < need) return false;
  if (cost_aware_eviction_) {
    double cost = 0;
    const uint64_t more = need - gpu.free();
    if (mode == Evict::kParkFirst) {
      auto weights = [this](FunctionId f) { return fns_[f].spec.weights_bytes; };
      for (FunctionId f : CheapestVictims(now, g, Residency::kResident, more, weights, &cost)) {
        SwapOut(now, f);
      }
    } else {
      auto footprint = [this](FunctionId f) { return FootprintBytes(fns_[f].spec, fns_[f].where); };
      for (FunctionId f : CheapestVictims(now, g, Residency::kResident, more, footprint, &cost)) {
        DeepEvict(now, f);
      }
    }
    if (gpu.free() >= need) return true;
    // Not enough in resident functions alone: the least recently used order below finishes.
  }
  if (mode == Evict::kParkFirst) {
    for (FunctionId f : EvictionOrder(g, Residency::kResident)) {
      if (gpu.free() >= need) return true;
      SwapOut(now, f);
    }
  } else {
    for (FunctionId f : EvictionOrder(g, Residency::kResident)) {
      if (gpu.free() >= need) return true;
      DeepEvict(now, f);
    }
  }
  for (FunctionId f : EvictionOrder(g, Residency::kParked)) {
    if (gpu.free() >= need) return true;
    DeepEvict(now, f);
  }
  // Last resort: idle pinned functions, least recently used first (a pin protects a function
  // from eviction for convenience, never to the point of starving a request).
  for (Residency state : {Residency::kParked, Residency::kResident}) {
    for (FunctionId f : EvictionOrder(g, state, /*pinned_too=*/true)) {
      if (gpu.free() >= need) return true;
      DeepEvict(now, f);
    }
  }
  return gpu.free() >= need;
}

void PolicyBase::WakeAt(Time t, FunctionId f, uint32_t tag) { Arm(t, f, tag, /*gpu=*/false); }

void PolicyBase::WakeGpuAt(Time t, GpuId g, uint32_t tag) { Arm(t, g, tag, /*gpu=*/true); }

void PolicyBase::CancelGpuWake(GpuId g, uint32_t tag) {
  WakeSlot* slot = SlotOf(g, tag, /*gpu=*/true);
  if (slot == nullptr || !slot->armed) return;
  ++stale_;
  slot->armed = false;
  ++slot->seq;
}

PolicyBase::WakeSlot* PolicyBase::SlotOf(FunctionId key, uint32_t tag, bool gpu) {
  return const_cast<WakeSlot*>(std::as_const(*this).SlotOf(Wake{0, key, tag, 0, gpu}));
}

const PolicyBase::WakeSlot* PolicyBase::SlotOf(const Wake& w) const {
  const std::vector<WakeSlot>& slots = w.gpu ? gpu_slots_ : fn_slots_;
  const size_t i = static_cast<size_t>(w.f) * kWakeTags + w.tag;
  return w.f == kNoFunction || i >= slots.size() ? nullptr : &slots[i];
}

void PolicyBase::Arm(Time t, FunctionId key, uint32_t tag, bool gpu) {
  assert(tag < kWakeTags);
  WakeSlot* slot = SlotOf(key, tag, gpu);
  uint32_t seq = 0;
  if (slot != nullptr) {
    if (slot->armed) ++stale_;  // the pending one is superseded
    slot->armed = true;
    seq = ++slot->seq;
  }
  PushWake(Wake{t, key, tag, seq, gpu});
}

void PolicyBase::PushWake(const Wake& w) {
  wakes_.push_back(w);
  std::push_heap(wakes_.begin(), wakes_.end(), std::greater<>());
  // Drop the superseded wakeups once they are more than half of the heap: it stays within
  // twice the armed slots (or kMinCompact), however many bursts re-arm the same slots and
  // however many functions have come and gone. Amortised O(1) per push.
  if (wakes_.size() < kMinCompact || 2 * stale_ <= wakes_.size()) return;
  std::erase_if(wakes_, [this](const Wake& x) { return Stale(x); });
  std::make_heap(wakes_.begin(), wakes_.end(), std::greater<>());
  stale_ = 0;
}

void PolicyBase::DropStaleFront() {
  while (!wakes_.empty() && Stale(wakes_.front())) {
    std::pop_heap(wakes_.begin(), wakes_.end(), std::greater<>());
    wakes_.pop_back();
    --stale_;
  }
}

void PolicyBase::FireTimers(Time now) {
  DropStaleFront();
  while (!wakes_.empty() && wakes_.front().at <= now) {
    std::pop_heap(wakes_.begin(), wakes_.end(), std::greater<>());
    const Wake w = wakes_.back();
    wakes_.pop_back();
    if (Stale(w)) {
      --stale_;
      continue;
    }
    if (WakeSlot* slot = SlotOf(w.f, w.tag, w.gpu)) slot->armed = false;
    OnWake(now, w.f, w.tag);
    DropStaleFront();
  }
}

Duration PolicyBase::SwapTime(FunctionId f, GpuId g, const Transfer& t) const {
  const Fn& fn = fns_[f];
  const Gpu& gpu = gpus_[g];
  const Duration overhead =
      (fn.where == Residency::kParked && fn.gpu == g) ? 0 : gpu.spec.restore_overhead;
  const double copy = static_cast<double>(t.bytes) / gpu.bw.bytes_per_us();
  return overhead + static_cast<Duration>(std::ceil(copy));
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
