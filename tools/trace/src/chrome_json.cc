// ToChromeJson: processes/threads/metadata, complete events clamped so that slices on one
// thread never overlap, instants and counters.
#include "gshare/trace/chrome_json.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace gshare::trace {
namespace {

using nlohmann::json;

enum ClientThread : int64_t { kRequests = 0, kToken = 1, kSwaps = 2 };

struct Complete {
  uint64_t begin_ns, end_ns;
  json event;
};

class Writer {
 public:
  Writer(const Timeline& t, const JsonOptions& o) : t_(t), o_(o) {
    base_ = t.begin_ns;
    for (const Slice& s : t.slices) base_ = std::min(base_, s.begin_ns);
    std::set<int64_t> seen;
    for (const auto& [id, c] : t.clients) {
      int64_t pid = c.pid > 0 && c.pid < kGpuPidBase ? c.pid : kClientPidBase + id;
      if (!seen.insert(pid).second) pid = kClientPidBase + id;
      seen.insert(pid);
      pids_[id] = pid;
    }
  }

  json Render();

 private:
  double Us(uint64_t ns) const { return static_cast<double>(ns - std::min(ns, base_)) / 1000.0; }
  static double UsOf(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }
  int64_t GpuPid(uint32_t g) const { return kGpuPidBase + g; }
  static int64_t GpuTid(uint32_t g) { return kThreadIdBase + g; }
  int64_t ClientPid(uint32_t id) {
    auto it = pids_.find(id);
    return it != pids_.end() ? it->second : (pids_[id] = kClientPidBase + id);
  }
  static int64_t ClientTid(uint32_t id, ClientThread k) { return kThreadIdBase + 1024 + int64_t{id} * 4 + k; }
  std::string Name(uint32_t id) const {
    auto it = t_.clients.find(id);
    return it != t_.clients.end() ? it->second.name : "client " + std::to_string(id);
  }
  void Meta(const char* what, int64_t pid, int64_t tid, const json& args) {
    events_.push_back({{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", args}});
  }
  void Add(int64_t pid, int64_t tid, const std::string& name, const char* cat, const Slice& s, json args) {
    if (s.unfinished) args["unfinished"] = true;
    json e = {{"ph", "X"}, {"name", name}, {"cat", cat}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
    complete_[{pid, tid}].push_back({s.begin_ns, s.end_ns, std::move(e)});
  }
  json SliceArgs(const Slice& s) {
    json a = {{"function", Name(s.client)}, {"client", s.client}};
    if (s.gpu != kNoGpu) a["gpu"] = s.gpu;
    return a;
  }
  void AddSlice(const Slice& s);
  void FlushComplete();

  const Timeline& t_;
  const JsonOptions& o_;
  uint64_t base_ = 0;
  std::map<uint32_t, int64_t> pids_;
  std::map<std::pair<int64_t, int64_t>, std::vector<Complete>> complete_;
  json events_ = json::array();
};

void Writer::AddSlice(const Slice& s) {
  const int64_t pid = ClientPid(s.client);
  json a = SliceArgs(s);
  switch (s.kind) {
    case SliceKind::kHold:
      a["grant_seq"] = s.seq;
      Add(pid, ClientTid(s.client, kToken), "hold", "token", s, a);
      if (s.gpu != kNoGpu) {
        json g = {{"function", Name(s.client)}, {"client", s.client}, {"pid", pid}, {"grant_seq", s.seq}};
        Add(GpuPid(s.gpu), GpuTid(s.gpu), Name(s.client), "token", s, g);
      }
      break;
    case SliceKind::kWait:
      Add(pid, ClientTid(s.client, kToken), "wait", "token", s, a);
      break;
    case SliceKind::kSwapIn:
    case SliceKind::kSwapOut:
      a["direction"] = s.kind == SliceKind::kSwapIn ? "in (host to device)" : "out (device to host)";
      a["bytes"] = s.bytes;
      a["order_seq"] = s.seq;
      a["client_duration_us"] = UsOf(s.duration_ns);
      a["resident_after"] = s.resident_after;
      Add(pid, ClientTid(s.client, kSwaps), SliceKindName(s.kind), "swap", s, a);
      break;
    case SliceKind::kBurst:
      a["latency_us"] = UsOf(s.end_ns - s.begin_ns);
      a["slo_ms"] = s.slo_ms;
      a["gpu_time_us"] = UsOf(s.gpu_time_ns);
      a["exec_us"] = UsOf(s.exec_ns);
      a["swap_us"] = UsOf(s.swap_ns);
      a["queue_us"] = UsOf(s.queue_ns);
      a["miss"] = s.miss;
      if (s.miss) a["cause"] = s.cause;
      Add(pid, ClientTid(s.client, kRequests), s.miss ? "burst (SLO miss: " + s.cause + ")" : "burst",
          "burst", s, a);
      break;
  }
}

void Writer::FlushComplete() {
  for (auto& [track, v] : complete_) {
    std::stable_sort(v.begin(), v.end(), [](const Complete& a, const Complete& b) { return a.begin_ns < b.begin_ns; });
    uint64_t prev_end = 0;
    for (Complete& c : v) {
      uint64_t begin = std::max(c.begin_ns, prev_end);  // never overlap the previous slice
      if (c.end_ns < begin) continue;                   // entirely inside it: drop
      c.event["ts"] = Us(begin);
      c.event["dur"] = static_cast<double>(c.end_ns - begin) / 1000.0;
      prev_end = c.end_ns;
      events_.push_back(std::move(c.event));
    }
  }
}

json Writer::Render() {
  for (uint32_t g : t_.gpus) {
    Meta("process_name", GpuPid(g), GpuTid(g), {{"name", "GPU " + std::to_string(g)}});
    Meta("process_sort_index", GpuPid(g), GpuTid(g), {{"sort_index", g}});
    Meta("thread_name", GpuPid(g), GpuTid(g), {{"name", "token holder"}});
  }
  for (const auto& [id, c] : t_.clients) {
    const int64_t pid = ClientPid(id);
    std::string label = c.name + " (";
    if (c.pid > 0) label += "pid " + std::to_string(c.pid) + ", ";
    label += "client " + std::to_string(id) + ")";
    Meta("process_name", pid, ClientTid(id, kRequests), {{"name", label}});
    Meta("process_sort_index", pid, ClientTid(id, kRequests), {{"sort_index", 1000 + id}});
    Meta("process_labels", pid, ClientTid(id, kRequests),
         {{"labels", "SLO " + std::to_string(c.slo_ms) + " ms, quota " + std::to_string(c.quota >> 20) + " MiB"}});
    const char* names[] = {"requests", "token", "swaps"};
    for (int64_t k = 0; k < 3; ++k) {
      Meta("thread_name", pid, ClientTid(id, static_cast<ClientThread>(k)), {{"name", names[k]}});
      Meta("thread_sort_index", pid, ClientTid(id, static_cast<ClientThread>(k)), {{"sort_index", k}});
    }
  }
  for (const Slice& s : t_.slices) AddSlice(s);
  FlushComplete();
  for (const Instant& i : t_.instants) {
    json a = {{"function", Name(i.client)}, {"client", i.client}, {"arg", i.arg}};
    if (i.name == "unregister") a["reason"] = UnregisterReasonName(i.arg);
    if (i.gpu != kNoGpu) a["gpu"] = i.gpu;
    events_.push_back({{"ph", "i"}, {"s", "t"}, {"name", i.name}, {"cat", "token"}, {"pid", ClientPid(i.client)},
                       {"tid", ClientTid(i.client, kToken)}, {"ts", Us(i.ts_ns)}, {"args", a}});
  }
  for (const CounterSample& c : t_.counters) {
    const bool gpu = c.kind == CounterKind::kGpuReserved || c.kind == CounterKind::kGpuResident;
    const bool reserved = c.kind == CounterKind::kGpuReserved || c.kind == CounterKind::kClientReserved;
    const int64_t pid = gpu ? GpuPid(c.id) : ClientPid(c.id);
    events_.push_back({{"ph", "C"}, {"name", reserved ? "reserved" : "resident"}, {"cat", "memory"}, {"pid", pid},
                       {"tid", gpu ? GpuTid(c.id) : ClientTid(c.id, kSwaps)}, {"ts", Us(c.ts_ns)},
                       {"args", {{"bytes", c.bytes}}}});
  }
  json other = {{"tool", "gshare-trace"},
                {"source", o_.source},
                {"ring_abi_version", shm::kEventRingAbiVersion},
                {"base_ns", base_},
                {"begin_us", Us(t_.begin_ns)},
                {"end_us", Us(t_.end_ns)},
                {"records", t_.records},
                {"lost_records", t_.lost}};
  return {{"traceEvents", std::move(events_)}, {"displayTimeUnit", "ms"}, {"otherData", other}};
}

}  // namespace

const char* UnregisterReasonName(uint64_t reason) {
  switch (reason) {
    case 0: return "left (goodbye or arbiter shutdown)";
    case 1: return "died";
    case 2: return "malformed channel";
    case 3: return "swap order not acknowledged in time";
    case 4: return "ignored preemption, could not be checkpointed";
    case 5: return "flooded its doorbell";
    default: return "unknown";
  }
}

json ToChromeJson(const Timeline& timeline, const JsonOptions& options) {
  Writer w(timeline, options);
  return w.Render();
}

}  // namespace gshare::trace
