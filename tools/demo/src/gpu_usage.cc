// AccountGpuUsage: a sweep over the arbiter's event records keeping, per GPU, the set of
// resident clients and the token holder, integrating occupancy and busy time over the window.
#include "gshare/demo/gpu_usage.h"

#include <algorithm>
#include <map>
#include <set>

namespace gshare::demo {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

struct GpuState {
  std::set<uint32_t> resident;  // client ids
  uint32_t holder = 0;          // 0: nobody
  std::set<uint32_t> holders;   // co-run accounting: every client holding the token
  GpuUsage::Gpu usage;
};

class Sweep {
 public:
  Sweep(uint64_t begin, uint64_t end, bool corun) : begin_(begin), end_(end), corun_(corun) {}

  // Integrates the current state from the last time up to `t` (clipped to the window).
  void AdvanceTo(uint64_t t) {
    const uint64_t from = std::clamp(last_, begin_, end_);
    const uint64_t to = std::clamp(t, begin_, end_);
    if (to > from) {
      const double dt = static_cast<double>(to - from) / 1e9;
      for (auto& [ordinal, g] : gpus_) {
        if (!g.resident.empty()) g.usage.occupied_s += dt;
        if (corun_ ? !g.holders.empty() : g.holder != 0) g.usage.busy_s += dt;
      }
    }
    last_ = std::max(last_, t);
  }

  void Apply(const shm::Event& e) {
    const bool in_window = e.timestamp_ns >= begin_ && e.timestamp_ns < end_;
    if (e.timestamp_ns < end_ && e.type == shm::EventType::kRegister) clients_.insert(e.client_id);
    switch (e.type) {
      case shm::EventType::kRegister:
        if (e.gpu != shm::kNoGpu) MoveTo(e.client_id, e.gpu);
        break;
      case shm::EventType::kUnregister:
        MoveTo(e.client_id, kNone);
        ReleaseToken(e.client_id);
        break;
      case shm::EventType::kSwapOutEnd:
        // args: order seq, bytes moved, duration_ns. A failed swap-out moves nothing and leaves
        // the client resident (the arbiter's rule); it is not counted.
        if (e.args[1] > 0 || ResidentOn(e.client_id) == kNone) MoveTo(e.client_id, kNone);
        if (in_window && e.args[1] > 0) {
          ++usage_.swap_outs;
          usage_.swap_out_bytes += e.args[1];
          usage_.swap_out_s += static_cast<double>(e.args[2]) / 1e9;
        }
        break;
      case shm::EventType::kSwapInBegin:
        MoveTo(e.client_id, e.gpu);
        break;
      case shm::EventType::kSwapInEnd:
        if (in_window && e.args[1] > 0) {
          ++usage_.swap_ins;
          usage_.swap_in_bytes += e.args[1];
          usage_.swap_in_s += static_cast<double>(e.args[2]) / 1e9;
        }
        break;
      case shm::EventType::kCheckpoint:  // args: 0 checkpointed / 1 restored
        MoveTo(e.client_id, e.args[0] == 1 ? e.gpu : kNone);
        break;
      case shm::EventType::kGrant:
        if (e.gpu != shm::kNoGpu) Gpu(e.gpu).holder = e.client_id;
        if (e.gpu != shm::kNoGpu && corun_) Gpu(e.gpu).holders.insert(e.client_id);
        if (in_window) ++usage_.grants;
        break;
      case shm::EventType::kYield:
      case shm::EventType::kRevoke:
        ReleaseToken(e.client_id);
        break;
      case shm::EventType::kPreempt:
        if (in_window) ++usage_.preemptions;
        break;
      default:
        break;
    }
    if (e.timestamp_ns < end_) {
      for (auto& [ordinal, g] : gpus_)
        g.usage.peak_resident = std::max(g.usage.peak_resident, static_cast<uint32_t>(g.resident.size()));
    }
    if (e.timestamp_ns >= begin_ && e.timestamp_ns < end_) NotePeak();
  }

  void NotePeak() {
    uint32_t occupied = 0;
    for (auto& [ordinal, g] : gpus_) occupied += g.resident.empty() ? 0 : 1;
    usage_.peak_gpus = std::max(usage_.peak_gpus, occupied);
  }

  GpuUsage Finish() {
    AdvanceTo(end_);
    usage_.window_s = static_cast<double>(end_ - begin_) / 1e9;
    usage_.functions = static_cast<uint32_t>(clients_.size());
    for (auto& [ordinal, g] : gpus_) {
      g.usage.ordinal = ordinal;
      usage_.occupied_gpu_seconds += g.usage.occupied_s;
      usage_.busy_gpu_seconds += g.usage.busy_s;
      usage_.gpus.push_back(g.usage);
    }
    return usage_;
  }

 private:
  GpuState& Gpu(uint32_t ordinal) { return gpus_[ordinal]; }

  uint32_t ResidentOn(uint32_t client) const {
    auto it = where_.find(client);
    return it == where_.end() ? kNone : it->second;
  }

  void MoveTo(uint32_t client, uint32_t gpu) {
    const uint32_t old = ResidentOn(client);
    if (old != kNone) Gpu(old).resident.erase(client);
    if (gpu == kNone) {
      where_.erase(client);
    } else {
      Gpu(gpu).resident.insert(client);
      where_[client] = gpu;
    }
  }

  void ReleaseToken(uint32_t client) {
    for (auto& [ordinal, g] : gpus_)
      if (g.holder == client) g.holder = 0;
    for (auto& [ordinal, g] : gpus_) g.holders.erase(client);
  }

  uint64_t begin_, end_;
  bool corun_ = false;
  uint64_t last_ = 0;
  std::map<uint32_t, GpuState> gpus_;
  std::map<uint32_t, uint32_t> where_;  // client -> GPU it is resident on
  std::set<uint32_t> clients_;
  GpuUsage usage_;
};

}  // namespace

GpuUsage AccountGpuUsage(std::span<const shm::Event> events, uint64_t window_begin_ns,
                         uint64_t window_end_ns, bool corun) {
  Sweep sweep(window_begin_ns, window_end_ns, corun);
  bool peak_noted = false;
  for (const shm::Event& e : events) {
    if (!peak_noted && e.timestamp_ns >= window_begin_ns) {
      sweep.AdvanceTo(window_begin_ns);
      sweep.NotePeak();  // the state the window starts with
      peak_noted = true;
    }
    sweep.AdvanceTo(e.timestamp_ns);
    sweep.Apply(e);
  }
  if (!peak_noted) sweep.NotePeak();
  return sweep.Finish();
}

workload::Result<std::vector<shm::Event>> ReadEventRing(const std::string& path) {
  auto reader = shm::EventRingReader::Open(path);
  if (!reader.ok()) return workload::Fail("event ring " + path + ": " + reader.status().ToString());
  reader->SeekToOldest();
  std::vector<shm::Event> all;
  std::vector<shm::Event> chunk(4096);
  while (true) {
    const size_t n = reader->Read(chunk);
    if (n == 0) break;
    all.insert(all.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n));
  }
  if (reader->stats().lost > 0 || (all.empty() ? false : all.front().index != 0)) {
    return workload::Fail("event ring " + path + " lost records (make it larger)");
  }
  return all;
}

}  // namespace gshare::demo
