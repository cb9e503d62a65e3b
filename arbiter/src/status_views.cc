// Read-only views of the arbiter's state for the control socket (see status_views.h).
#include "status_views.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gshare::arbiter {
namespace {

using nlohmann::json;

double Ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

json Attainment(uint64_t met, uint64_t missed) {
  if (met + missed == 0) return nullptr;
  return static_cast<double>(met) / static_cast<double>(met + missed);
}

// Whether the GPU's MPS daemon confirmed a client's reported share (Client::mps_check).
const char* MpsCheckName(const Client& c) {
  if (c.mps_share == 0) return "not an MPS client";
  switch (c.mps_check) {
    case Client::MpsCheck::kUnchecked:
      return "unchecked";
    case Client::MpsCheck::kChecking:
      return "checking";
    case Client::MpsCheck::kServed:
      return "served";
    case Client::MpsCheck::kNotServed:
      return "not served";
  }
  return "unchecked";
}

}  // namespace

const char* WhereName(const Client& c) {
  if (const Transfer* t = c.transfers.InFlight())
    return t->op == shm::SwapOp::kSwapIn ? "swapping-in" : "swapping-out";
  switch (c.session.where()) {
    case Where::kResident:
      return "resident";
    case Where::kOut:
      return "swapped";
    case Where::kCheckpointed:
      return "checkpointed";
  }
  return "?";
}

json StatusViews::Status(uint64_t now, const StatusHeader& header) const {
  const uint64_t window = std::min<uint64_t>(Telemetry::kHoldWindowNs, std::max<uint64_t>(1, now - header.started_ns));
  const uint64_t from = now - window;
  json gpus = json::array();
  for (const GpuIndex g : gpus_.indices()) {
    const GpuState& gs = gpus_[g];
    json j;
    j["gpu"] = gs.ordinal.value();
    j["total_bytes"] = gs.memory_bytes;
    j["usable_bytes"] = book_.usable(g);
    j["reserved_bytes"] = book_.reserved(g);
    j["peak_reserved_bytes"] = book_.peak_reserved(g);
    j["orphaned_bytes"] = book_.orphaned(g);
    j["mps_context_bytes"] = book_.contexts(g);
    j["drained"] = gs.drained;
    uint64_t resident = 0, swapped = 0;
    json queue = json::array();
    for (const auto& [id, c] : clients_) {
      if (c->session.gpu() != g) continue;
      if (c->session.where() == Where::kResident)
        resident += c->quota;
      else swapped += c->quota;
      if (c->burst_outstanding && !c->session.holding())
        queue.push_back({{"client", c->id}, {"function", c->name},
                         {"waiting_ms", Ms(c->tel.burst_start_ns != 0 && now > c->tel.burst_start_ns
                                               ? now - c->tel.burst_start_ns : 0)}});
    }
    j["resident_bytes"] = resident;
    j["swapped_bytes"] = swapped;
    j["queue"] = queue;
    j["holder"] = nullptr;
    // Utilisation by tenant over the window: finished holds plus the one in progress.
    std::map<uint32_t, std::pair<std::string, uint64_t>> busy;
    auto add = [&](uint32_t client, const std::string& name, uint64_t start, uint64_t end) {
      start = std::max(start, from);
      if (end <= start) return;
      auto& slot = busy[client];
      slot.first = name;
      slot.second += end - start;
    };
    if (telemetry_.recent.contains(g))
      for (const Hold& h : telemetry_.recent[g]) add(h.client, h.function, h.start_ns, h.end_ns);
    // "holder": the first (the only one unless the GPU runs a co-run set); "holders": all.
    json holders = json::array();
    for (uint32_t hid : gs.holders.ids()) {
      if (const auto it = clients_.find(hid); it != clients_.end()) {
        const Client& h = *it->second;
        json one = {{"client", h.id}, {"function", h.name}, {"pid", h.pid},
                    {"held_ms", Ms(now - h.grant_ns)}};
        if (j["holder"].is_null()) j["holder"] = one;
        holders.push_back(std::move(one));
        add(h.id, h.name, h.grant_ns, now);
      }
    }
    j["holders"] = std::move(holders);
    if (corun_.Enabled(g)) {
      const uint64_t until = corun_.BackoffUntil(g);
      j["corun"] = {{"enabled", true},
                    {"backoff_ms", until > now ? Ms(until - now) : 0},
                    {"mps", mps_.Json(g)}};
    }
    json util = json::array();
    double total = 0;
    for (const auto& [client, v] : busy) {
      const double share = static_cast<double>(v.second) / static_cast<double>(window);
      total += share;
      util.push_back({{"client", client}, {"function", v.first}, {"share", share}});
    }
    j["utilisation"] = util;
    j["busy"] = std::min(1.0, total);
    gpus.push_back(j);
  }
  json misses = json::array();
  for (const SloMiss& m : telemetry_.misses)
    misses.push_back({{"ago_ms", Ms(now - std::min(now, m.at_ns))}, {"client", m.client},
                      {"function", m.function}, {"gpu", m.gpu.value()}, {"latency_ms", Ms(m.latency_ns)},
                      {"wait_ms", Ms(m.wait_ns)}, {"slo_ms", m.slo_ms}});
  return {{"ok", true},
          {"epoch", header.epoch},
          {"policy", header.policy},
          {"uptime_s", static_cast<double>(now - header.started_ns) / 1e9},
          {"window_s", static_cast<double>(window) / 1e9},
          {"clients", clients_.size()},
          {"gpus", gpus},
          {"orphans", Orphans(now)},
          {"recent_slo_misses", misses},
          {"counters", header.counters}};
}

json StatusViews::Instances() const {
  std::map<std::string, std::vector<const Client*>> by_function;
  for (const auto& [id, c] : clients_) by_function[c->name].push_back(c.get());
  json functions = json::array();
  for (auto& [name, list] : by_function) {
    // Warm first, then idle before busy: the order a router should try them in.
    auto rank = [](const Client* c) {
      return (IsWarm(c->session.phase()) ? 0 : 2) +
             (c->session.holding() || c->burst_outstanding ? 1 : 0);
    };
    std::stable_sort(list.begin(), list.end(),
                     [&](const Client* a, const Client* b) { return rank(a) < rank(b); });
    json instances = json::array();
    uint32_t warm = 0;
    for (const Client* c : list) {
      const Phase p = c->session.phase();
      warm += IsWarm(p) ? 1 : 0;
      instances.push_back({{"client", c->id},
                           {"namespace", c->pod_namespace},
                           {"pod", c->pod_name},
                           {"pid", c->pid},
                           {"gpu", gpus_[c->session.gpu()].ordinal.value()},
                           {"phase", PhaseName(p)},
                           {"warm", IsWarm(p)},
                           {"busy", c->session.holding() || c->burst_outstanding}});
    }
    functions.push_back({{"function", name},
                         {"instances", instances},
                         {"warm", warm},
                         {"total", list.size()}});
  }
  return {{"ok", true}, {"functions", functions}};
}

json StatusViews::Clients(uint64_t now) const {
  json list = json::array();
  for (const auto& [id, cp] : clients_) {
    const Client& c = *cp;
    json j = {{"client", c.id},
              {"function", c.name},
              {"namespace", c.pod_namespace},  // the pod's ("" unknown: GSHARE_POD_*)
              {"pod", c.pod_name},
              {"mps_share", c.mps_share},  // 0: not an MPS client (never co-runs)
              // Whether its GPU's MPS daemon (the arbiter's) confirmed the share (Client::mps_check).
              {"mps_check", MpsCheckName(c)},
              // Sees not every GPU at its own number: stays on its GPU (device_view.h).
              {"confined", c.view.confined},
              {"share_advice", c.share_advice},
              {"corun", c.session.holding() && c.corun_grant},
              {"pid", c.pid},
              {"uid", c.uid},
              {"quota_bytes", c.quota},
              {"slo_ms", c.slo_ms},
              {"state", WhereName(c)},
              {"phase", PhaseName(c.session.phase())},
              {"gpu", gpus_[c.session.gpu()].ordinal.value()},
              {"holding", c.session.holding()},
              {"waiting", c.burst_outstanding && !c.session.holding()},
              {"bursts", c.tel.bursts},
              {"slo_met", c.tel.slo_met},
              {"slo_missed", c.tel.slo_missed},
              {"slo_attainment", Attainment(c.tel.slo_met, c.tel.slo_missed)},
              {"waits", c.tel.waits},
              {"wait_ms_total", Ms(c.tel.wait_ns)},
              {"held_ms_total", Ms(c.tel.held_ns + (c.session.holding() ? now - c.grant_ns : 0))},
              {"last_latency_ms", Ms(c.tel.last_latency_ns)},
              {"swaps_in", c.tel.swaps_in},
              {"swaps_out", c.tel.swaps_out},
              {"swap_bytes", c.tel.swap_bytes},
              {"registered_s_ago", static_cast<double>(now - c.registered_ns) / 1e9}};
    if (c.pending_slo) j["pending_slo_ms"] = *c.pending_slo;
    list.push_back(j);
  }
  return {{"ok", true}, {"clients", list}};
}

json StatusViews::Orphans(uint64_t now_ns) const {
  json list = json::array();
  for (const auto& [id, o] : orphans_)
    list.push_back({{"orphan", o.id},
                    {"client", o.client_id},
                    {"function", o.name},
                    {"pid", o.pid},
                    {"uid", o.uid},
                    {"gpu", gpus_[o.gpu].ordinal.value()},
                    {"bytes", o.bytes},
                    {"reason", UnregisterName(o.reason)},
                    {"since_s_ago", static_cast<double>(now_ns - std::min(now_ns, o.since_ns)) / 1e9}});
  return list;
}

}  // namespace gshare::arbiter
