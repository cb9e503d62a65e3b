// Tables for gshare-ctl and gshare-top from the control socket's JSON replies.
#include "gshare/ctl/render.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <utility>

#include "gshare/common/units.h"

namespace gshare::ctl {
namespace {

using nlohmann::json;

std::string Str(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump();
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

const json& At(const json& j, const char* key) {
  static const json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

}  // namespace

std::string Table::str() const {
  std::vector<size_t> width;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string Bytes(const json& v) {
  return v.is_number() ? FormatByteSize(v.get<uint64_t>()) : "-";
}

std::string Pod(const json& client) {
  const json& ns = At(client, "namespace");
  const json& name = At(client, "pod");
  const std::string n = ns.is_string() ? ns.get<std::string>() : "";
  const std::string p = name.is_string() ? name.get<std::string>() : "";
  if (n.empty() && p.empty()) return "-";
  return (n.empty() ? "?" : n) + "/" + (p.empty() ? "?" : p);
}

std::string Millis(const json& v) {
  if (!v.is_number()) return "-";
  const double ms = v.get<double>();
  return ms >= 100 ? Fixed(ms, 0) + " ms" : Fixed(ms, 1) + " ms";
}

std::string Percent(const json& fraction) {
  return fraction.is_number() ? Fixed(fraction.get<double>() * 100.0, 1) + "%" : "-";
}

std::string HoldersText(const json& gpu) {
  json holders = gpu.is_object() ? gpu.value("holders", json::array()) : json::array();
  if ((!holders.is_array() || holders.empty()) && gpu.is_object() && gpu.contains("holder") &&
      gpu["holder"].is_object())
    holders = json::array({gpu["holder"]});
  if (!holders.is_array() || holders.empty()) return "-";
  std::string out;
  for (const json& h : holders) {
    if (!h.is_object()) continue;
    if (!out.empty()) out += ", ";
    out += Str(At(h, "function")) + " (#" + Str(At(h, "client")) + ")";
  }
  if (holders.size() > 1) out += " [co-run]";
  return out.empty() ? "-" : out;
}

std::string RenderStatus(const json& s) {
  std::string out = "gshare-arbiter: policy " + Str(At(s, "policy")) + ", up " +
                    (At(s, "uptime_s").is_number() ? Fixed(s["uptime_s"].get<double>(), 1) : "-") +
                    " s, " + Str(At(s, "clients")) + " client(s)\n";
  Table t({"GPU", "MEMORY", "USABLE", "RESERVED", "ORPHANED", "RESIDENT", "SWAPPED", "HOLDER", "QUEUE",
           "BUSY", "STATE"});
  for (const json& g : At(s, "gpus")) {
    const std::string holder = HoldersText(g);
    t.Add({Str(At(g, "gpu")), Bytes(At(g, "total_bytes")), Bytes(At(g, "usable_bytes")),
           Bytes(At(g, "reserved_bytes")), Bytes(At(g, "orphaned_bytes")), Bytes(At(g, "resident_bytes")),
           Bytes(At(g, "swapped_bytes")), holder, std::to_string(At(g, "queue").size()),
           Percent(At(g, "busy")), At(g, "drained") == true ? "drained" : "ok"});
  }
  out += t.str();
  if (const std::string orphans = RenderOrphans(s); !orphans.empty()) {
    out += "orphans (live processes disconnected by the arbiter; their memory stays reserved until "
           "they exit or register again):\n" + orphans;
  }
  if (const std::string line = RenderOrphanCounters(s); !line.empty()) out += line + "\n";
  const json& misses = At(s, "recent_slo_misses");
  if (!misses.empty()) {
    constexpr size_t kShown = 5;
    out += "recent SLO misses (" +
           (misses.size() > kShown ? "newest " + std::to_string(kShown) + " of " : std::string()) +
           std::to_string(misses.size()) + " kept, newest first):\n";
    Table m({"AGO", "CLIENT", "FUNCTION", "GPU", "LATENCY", "WAIT", "SLO"});
    for (size_t i = 0; i < misses.size() && i < kShown; ++i) {
      const json& x = misses[misses.size() - 1 - i];
      m.Add({Millis(At(x, "ago_ms")), Str(At(x, "client")), Str(At(x, "function")),
             Str(At(x, "gpu")), Millis(At(x, "latency_ms")), Millis(At(x, "wait_ms")),
             Str(At(x, "slo_ms")) + " ms"});
    }
    out += m.str();
  }
  return out;
}

std::string RenderOrphans(const json& s) {
  const json& orphans = At(s, "orphans");
  if (!orphans.is_array() || orphans.empty()) return "";
  Table t({"PID", "FUNCTION", "CLIENT", "GPU", "BYTES", "REASON", "SINCE"});
  for (const json& o : orphans) {
    const json& since = At(o, "since_s_ago");
    t.Add({Str(At(o, "pid")), Str(At(o, "function")), "#" + Str(At(o, "client")), Str(At(o, "gpu")),
           Bytes(At(o, "bytes")), Str(At(o, "reason")),
           since.is_number() ? Fixed(since.get<double>(), 1) + " s ago" : "-"});
  }
  return t.str();
}

std::string RenderOrphanCounters(const json& s) {
  const json& c = At(s, "counters");
  // "label N" for each counter present, joined by ", ".
  auto join = [&c](std::initializer_list<std::pair<const char*, const char*>> items) {
    std::string out;
    for (const auto& [key, label] : items) {
      if (!At(c, key).is_number()) continue;
      out += (out.empty() ? "" : ", ") + std::string(label) + " " + Str(c[key]);
    }
    return out;
  };
  const std::string disconnected =
      join({{"order_timeouts", "order timeouts"}, {"unenforceable", "unenforceable"}});
  const std::string released = join({{"orphans_released_exited", "exited"},
                                     {"orphans_released_reregistered", "registered again"},
                                     {"orphans_released_no_device", "no device memory"}});
  std::string orphans = join({{"orphans_created", "created"}});
  if (!released.empty()) orphans += (orphans.empty() ? "released: " : "; released: ") + released;
  std::string line;
  if (!disconnected.empty()) line = "disconnected alive: " + disconnected;
  if (!orphans.empty()) line += (line.empty() ? "" : "; ") + std::string("orphans ") + orphans;
  return line;
}

std::string MpsText(const json& c) {
  const json& share = At(c, "mps_share");
  if (!share.is_number() || share == 0) return "-";
  const json& check = At(c, "mps_check");
  return Str(share) + "%" + (check.is_string() ? " " + check.get<std::string>() : std::string());
}

std::string RenderClients(const json& reply) {
  Table t({"ID", "FUNCTION", "POD", "PID", "UID", "QUOTA", "SLO", "STATE", "GPU", "TOKEN",
           "BURSTS", "SLO MET", "WAITS", "SWAPS", "MPS"});
  for (const json& c : At(reply, "clients")) {
    std::string token = "-";
    if (At(c, "holding") == true) token = "holding";
    else if (At(c, "waiting") == true) token = "waiting";
    std::string slo = Str(At(c, "slo_ms")) + " ms";
    if (At(c, "pending_slo_ms").is_number()) slo += " (-> " + Str(c["pending_slo_ms"]) + ")";
    t.Add({Str(At(c, "client")), Str(At(c, "function")), Pod(c), Str(At(c, "pid")),
           Str(At(c, "uid")),
           Bytes(At(c, "quota_bytes")), slo, Str(At(c, "state")),
           Str(At(c, "gpu")) + (At(c, "confined") == true ? " (confined)" : ""), token,
           Str(At(c, "bursts")), Percent(At(c, "slo_attainment")), Str(At(c, "waits")),
           Str(At(c, "swaps_in")) + "/" + Str(At(c, "swaps_out")), MpsText(c)});
  }
  return t.str();
}

std::string RenderInstances(const json& reply) {
  Table t({"FUNCTION", "WARM", "CLIENT", "POD", "PID", "GPU", "PHASE", "BUSY"});
  for (const json& f : At(reply, "functions"))
    for (const json& i : At(f, "instances"))
      t.Add({Str(At(f, "function")), Str(At(f, "warm")) + "/" + Str(At(f, "total")),
             Str(At(i, "client")), Pod(i), Str(At(i, "pid")), Str(At(i, "gpu")), Str(At(i, "phase")),
             At(i, "busy") == true ? "busy" : "idle"});
  return t.str();
}

namespace {
// A drain's MPS clients, which stay on the GPU (docs/arbiter.md, "Co-running"): "" when none.
std::string StayingMpsClients(const json& r) {
  const json& ids = At(r, "mps_clients_staying");
  if (!ids.is_array() || ids.empty()) return "";
  std::string out = "; MPS client(s) staying: ";
  for (size_t i = 0; i < ids.size(); ++i) out += (i == 0 ? "" : ", ") + Str(ids[i]);
  return out + " (their memory cannot leave the GPU; stop them to empty it)";
}
}  // namespace

std::string RenderAction(const std::string& command, const json& r) {
  if (command == "drain" || command == "undrain")
    return "GPU " + Str(At(r, "gpu")) + (At(r, "drained") == true ? " drained" : " undrained") +
           (At(r, "changed") == false ? " (it already was)" : "") +
           (command == "drain" ? "; " + Str(At(r, "resident_clients")) + " vGPU(s) being moved off"
                               : "") +
           StayingMpsClients(r) + "\n";
  if (command == "evict")
    return "client " + Str(At(r, "client")) + ": " + Str(At(r, "note")) + " (now " +
           Str(At(r, "state")) + ")\n";
  return "client " + Str(At(r, "client")) + ": SLO " + Str(At(r, "old_slo_ms")) + " ms -> " +
         Str(At(r, "slo_ms")) + " ms, " + Str(At(r, "note")) + "\n";
}

}  // namespace gshare::ctl
