// BuildTimeline: a per-client state machine over the ring's records (grant/yield pair into
// holds, burst start/end into bursts, swap begin/end into swaps), then the burst analysis and
// the per-GPU resident-memory sums.
#include "gshare/trace/timeline.h"

#include <algorithm>
#include <set>

namespace gshare::trace {
namespace {

using shm::EventType;

struct OpenSlice {
  bool on = false;
  uint64_t begin = 0;
  uint32_t gpu = kNoGpu;
  uint64_t seq = 0;
  uint64_t bytes = 0;
  uint32_t slo_ms = 0;  // bursts: the SLO when it started
};

struct ClientState {
  OpenSlice hold, wait, swap, burst;
  bool swap_in = false;
  uint64_t last_yield = 0;
  uint32_t slo_ms = 0;
};

class Builder {
 public:
  Builder(uint64_t begin_ns, uint64_t end_ns) {
    t_.begin_ns = begin_ns;
    t_.end_ns = end_ns;
  }

  void Context(const shm::Event& e) {
    switch (e.type) {
      case EventType::kRegister:
      case EventType::kClientName:
      case EventType::kSloChange:
        Apply(e);
        break;
      case EventType::kReservation:  // the last one is the state at the start of the window
        Gpu(e.gpu);
        gpu_reserved_[e.gpu] = e.args[0];
        client_reserved_[e.client_id] = {e.gpu, e.args[1]};
        break;
      case EventType::kUnregister:
        t_.clients.erase(e.client_id);
        client_reserved_.erase(e.client_id);
        break;
      default:
        break;
    }
  }

  // The reservations known from the context, as samples at the start of the window.
  void EndContext() {
    for (const auto& [g, bytes] : gpu_reserved_) Counter(CounterKind::kGpuReserved, g, kNoGpu, t_.begin_ns, bytes);
    for (const auto& [id, r] : client_reserved_)
      Counter(CounterKind::kClientReserved, id, r.first, t_.begin_ns, r.second);
  }
  void Apply(const shm::Event& e);
  Timeline Finish();

 private:
  ClientInfo& Client(uint32_t id) {
    auto [it, fresh] = t_.clients.try_emplace(id);
    if (fresh) {
      it->second.id = id;
      it->second.name = "client " + std::to_string(id);
    }
    return it->second;
  }
  void Gpu(uint32_t ordinal) {
    if (ordinal != kNoGpu) gpus_.insert(ordinal);
  }
  void Counter(CounterKind kind, uint32_t id, uint32_t gpu, uint64_t ts, uint64_t bytes) {
    t_.counters.push_back({kind, id, gpu, ts, bytes});
  }
  void Close(OpenSlice& o, SliceKind kind, uint32_t client, uint64_t end,
             bool unfinished = false) {
    if (!o.on) return;
    Slice sl;
    sl.kind = kind;
    sl.client = client;
    sl.gpu = o.gpu;
    sl.begin_ns = o.begin;
    sl.end_ns = std::max(end, o.begin);
    sl.unfinished = unfinished;
    sl.seq = o.seq;
    sl.bytes = o.bytes;
    if (kind == SliceKind::kBurst) sl.slo_ms = o.slo_ms;
    t_.slices.push_back(sl);
    o.on = false;
  }
  static void Open(OpenSlice& o, uint64_t begin, uint32_t gpu, uint64_t seq = 0, uint64_t bytes = 0) {
    o = {true, begin, gpu, seq, bytes, 0};
  }
  void EndSwap(ClientState& s, const shm::Event& e, SliceKind kind);
  void AnalyseBursts();
  void SumGpuResident();

  Timeline t_;
  std::map<uint32_t, ClientState> state_;
  std::set<uint32_t> gpus_;
  std::map<uint32_t, uint64_t> gpu_reserved_;                        // context only
  std::map<uint32_t, std::pair<uint32_t, uint64_t>> client_reserved_;  // context only
};

void Builder::EndSwap(ClientState& s, const shm::Event& e, SliceKind kind) {
  const uint64_t duration = e.args[2];
  const bool matched = s.swap.on && s.swap.seq == e.args[0];
  if (!matched) {  // the begin was lost or never recorded: the client's duration places it
    s.swap.on = true;
    s.swap.begin = e.timestamp_ns > duration ? e.timestamp_ns - duration : e.timestamp_ns;
  }
  s.swap.seq = e.args[0];
  s.swap.gpu = e.gpu;
  const uint64_t begin = std::max(s.swap.begin, t_.begin_ns);
  Close(s.swap, kind, e.client_id, e.timestamp_ns);
  Slice& sl = t_.slices.back();
  sl.bytes = e.args[1];
  sl.duration_ns = duration;
  sl.resident_after = e.args[3];
  if (kind == SliceKind::kSwapOut && e.args[1] > 0)  // what it held until the swap began
    Counter(CounterKind::kClientResident, e.client_id, e.gpu, begin, e.args[1]);
  Counter(CounterKind::kClientResident, e.client_id, e.gpu, e.timestamp_ns, e.args[3]);
}

void Builder::Apply(const shm::Event& e) {
  Gpu(e.gpu);
  const uint32_t id = e.client_id;
  if (id == 0) return;
  ClientState& s = state_[id];
  ClientInfo& info = Client(id);
  const uint64_t ts = e.timestamp_ns;
  // A yield followed by anything but this burst's end: the burst goes on, so it waits again.
  if (e.type != EventType::kBurstEnd && s.last_yield != 0) {
    if (s.burst.on && !s.hold.on && !s.wait.on) Open(s.wait, s.last_yield, kNoGpu);
    s.last_yield = 0;
  }
  switch (e.type) {
    case EventType::kRegister:
      info.quota = e.args[0];
      info.slo_ms = static_cast<uint32_t>(e.args[1]);
      info.pid = static_cast<int64_t>(e.args[2]);
      info.uid = static_cast<int64_t>(e.args[3]);
      info.gpu = e.gpu;
      s.slo_ms = info.slo_ms;
      break;
    case EventType::kClientName:
      info.name = shm::UnpackEventName(e.args);
      if (info.name.empty()) info.name = "client " + std::to_string(id);
      break;
    case EventType::kSloChange:
      s.slo_ms = static_cast<uint32_t>(e.args[0]);
      break;
    case EventType::kLease:  // a take is also a grant record (args[2] = 1): shown as a hold
      break;
    case EventType::kUnregister:
      Close(s.wait, SliceKind::kWait, id, ts);
      Close(s.hold, SliceKind::kHold, id, ts);
      Close(s.swap, s.swap_in ? SliceKind::kSwapIn : SliceKind::kSwapOut, id, ts, true);
      Close(s.burst, SliceKind::kBurst, id, ts, true);
      t_.instants.push_back({"unregister", id, kNoGpu, ts, e.args[0]});
      Counter(CounterKind::kClientResident, id, kNoGpu, ts, 0);
      break;
    case EventType::kGrant:
      Close(s.wait, SliceKind::kWait, id, ts);
      Close(s.hold, SliceKind::kHold, id, ts);  // its yield was lost
      Open(s.hold, ts, e.gpu, e.args[0]);
      break;
    case EventType::kYield:
      if (!s.hold.on) Open(s.hold, ts > e.args[1] ? ts - e.args[1] : ts, e.gpu, e.args[0]);
      Close(s.hold, SliceKind::kHold, id, ts);
      s.last_yield = ts;
      break;
    case EventType::kRevoke:
      Close(s.hold, SliceKind::kHold, id, ts);
      t_.instants.push_back({"revoke", id, e.gpu, ts, e.args[0]});
      break;
    case EventType::kPreempt:
      t_.instants.push_back({"preempt", id, e.gpu, ts, e.args[0]});
      break;
    case EventType::kCheckpoint:
      t_.instants.push_back({e.args[0] == 0 ? "checkpoint" : "restore", id, e.gpu, ts, e.args[1]});
      if (e.args[0] == 0) Counter(CounterKind::kClientResident, id, e.gpu, ts, 0);
      break;
    case EventType::kSwapOutBegin:
    case EventType::kSwapInBegin:
      Close(s.swap, s.swap_in ? SliceKind::kSwapIn : SliceKind::kSwapOut, id, ts);
      Open(s.swap, ts, e.gpu, e.args[0], e.args[1]);
      s.swap_in = e.type == EventType::kSwapInBegin;
      break;
    case EventType::kSwapOutEnd:
      EndSwap(s, e, SliceKind::kSwapOut);
      break;
    case EventType::kSwapInEnd:
      EndSwap(s, e, SliceKind::kSwapIn);
      break;
    case EventType::kBurstStart: {
      const uint64_t start = e.args[0] != 0 ? std::min(e.args[0], ts) : ts;
      Close(s.burst, SliceKind::kBurst, id, start, true);  // its end was lost
      Open(s.burst, start, kNoGpu);
      s.burst.slo_ms = s.slo_ms;
      if (!s.hold.on && !s.wait.on) Open(s.wait, start, kNoGpu);
      break;
    }
    case EventType::kBurstEnd: {
      s.last_yield = 0;
      Close(s.wait, SliceKind::kWait, id, ts);
      if (!s.burst.on) break;  // its start is before the window or lost
      const uint64_t end = e.args[0] != 0 ? std::min(e.args[0], ts) : ts;
      Close(s.burst, SliceKind::kBurst, id, end);
      t_.slices.back().gpu = e.gpu;
      t_.slices.back().gpu_time_ns = e.args[1];
      break;
    }
    case EventType::kReservation:
      Counter(CounterKind::kGpuReserved, e.gpu, kNoGpu, ts, e.args[0]);
      Counter(CounterKind::kClientReserved, id, e.gpu, ts, e.args[1]);
      break;
  }
}

void Builder::AnalyseBursts() {
  // Per client: holds and swap-ins sorted by start, for the overlap sums.
  std::map<uint32_t, std::vector<const Slice*>> holds, swapins;
  for (const Slice& s : t_.slices) {
    if (s.kind == SliceKind::kHold) holds[s.client].push_back(&s);
    if (s.kind == SliceKind::kSwapIn) swapins[s.client].push_back(&s);
  }
  auto by_begin = [](const Slice* a, const Slice* b) { return a->begin_ns < b->begin_ns; };
  for (auto& [c, v] : holds) std::sort(v.begin(), v.end(), by_begin);
  for (auto& [c, v] : swapins) std::sort(v.begin(), v.end(), by_begin);
  auto overlap = [](const std::vector<const Slice*>& v, uint64_t b, uint64_t e) {
    uint64_t sum = 0;
    auto it = std::partition_point(v.begin(), v.end(), [&](const Slice* s) { return s->end_ns <= b; });
    for (; it != v.end() && (*it)->begin_ns < e; ++it) {
      const uint64_t lo = std::max(b, (*it)->begin_ns), hi = std::min(e, (*it)->end_ns);
      if (hi > lo) sum += hi - lo;
    }
    return sum;
  };
  for (Slice& s : t_.slices) {
    if (s.kind != SliceKind::kBurst) continue;
    const uint64_t latency = s.end_ns - s.begin_ns;
    const uint64_t held = overlap(holds[s.client], s.begin_ns, s.end_ns);
    s.exec_ns = s.gpu_time_ns != 0 ? s.gpu_time_ns : held;
    s.swap_ns = overlap(swapins[s.client], s.begin_ns, s.end_ns);
    const uint64_t busy = std::max(held, s.exec_ns) + s.swap_ns;
    s.queue_ns = latency > busy ? latency - busy : 0;
    const uint64_t slo = uint64_t{s.slo_ms} * 1'000'000;
    s.miss = !s.unfinished && s.slo_ms != 0 && latency > slo;
    if (!s.miss) continue;
    if (s.exec_ns > slo) {
      s.cause = "execution";
    } else {
      s.cause = s.swap_ns > s.queue_ns ? "swap" : "queueing";
    }
  }
}

void Builder::SumGpuResident() {
  std::vector<CounterSample> mine;
  for (const auto& c : t_.counters)
    if (c.kind == CounterKind::kClientResident) mine.push_back(c);
  std::stable_sort(mine.begin(), mine.end(),
                   [](const CounterSample& a, const CounterSample& b) { return a.ts_ns < b.ts_ns; });
  std::map<uint32_t, std::pair<uint32_t, uint64_t>> now;  // client -> (gpu, bytes)
  for (const auto& c : mine) {
    auto& cur = now[c.id];
    std::set<uint32_t> touched = {cur.first, c.gpu};
    cur = {c.gpu != kNoGpu ? c.gpu : cur.first, c.bytes};
    for (uint32_t g : touched) {
      if (g == kNoGpu) continue;
      uint64_t sum = 0;
      for (const auto& [id, v] : now)
        if (v.first == g) sum += v.second;
      Counter(CounterKind::kGpuResident, g, kNoGpu, c.ts_ns, sum);
    }
  }
}

Timeline Builder::Finish() {
  for (auto& [id, s] : state_) {
    Close(s.wait, SliceKind::kWait, id, t_.end_ns, true);
    Close(s.hold, SliceKind::kHold, id, t_.end_ns, true);
    Close(s.swap, s.swap_in ? SliceKind::kSwapIn : SliceKind::kSwapOut, id, t_.end_ns, true);
    Close(s.burst, SliceKind::kBurst, id, t_.end_ns, true);
  }
  for (Slice& s : t_.slices) {  // clip to the window
    s.begin_ns = std::max(s.begin_ns, t_.begin_ns);
    s.end_ns = std::max(s.end_ns, s.begin_ns);
  }
  AnalyseBursts();
  SumGpuResident();
  std::stable_sort(t_.counters.begin(), t_.counters.end(),
                   [](const CounterSample& a, const CounterSample& b) { return a.ts_ns < b.ts_ns; });
  for (auto& c : t_.counters) c.ts_ns = std::max(c.ts_ns, t_.begin_ns);
  t_.gpus.assign(gpus_.begin(), gpus_.end());
  return std::move(t_);
}

}  // namespace

const char* SliceKindName(SliceKind kind) {
  switch (kind) {
    case SliceKind::kHold: return "hold";
    case SliceKind::kWait: return "wait";
    case SliceKind::kSwapIn: return "swap-in";
    case SliceKind::kSwapOut: return "swap-out";
    case SliceKind::kBurst: return "burst";
  }
  return "?";
}

Timeline BuildTimeline(std::span<const shm::Event> context, std::span<const shm::Event> events,
                       uint64_t begin_ns, uint64_t end_ns, uint64_t lost) {
  Builder b(begin_ns, end_ns);
  for (const auto& e : context) b.Context(e);
  b.EndContext();
  for (const auto& e : events) b.Apply(e);
  Timeline t = b.Finish();
  t.records = events.size();
  t.lost = lost;
  return t;
}

}  // namespace gshare::trace
