// RenderFrame: gshare-top's screen, built from the control socket's replies.
#include "frame.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "gshare/ctl/render.h"

namespace gshare::top {
namespace {

using nlohmann::json;

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string S(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.is_null() ? "-" : v.dump();
}

std::string Bar(double fraction, int cells) {
  const int full = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * cells + 0.5);
  return "[" + std::string(static_cast<size_t>(full), '#') +
         std::string(static_cast<size_t>(cells - full), '.') + "]";
}

}  // namespace

std::string RenderFrame(const json& status, const json& clients, const FrameStyle& style) {
  const std::string bold = style.color ? "\x1b[1m" : "";
  const std::string red = style.color ? "\x1b[31m" : "";
  const std::string reset = style.color ? "\x1b[0m" : "";
  std::ostringstream o;
  o << bold << "gshare-top" << reset << "  policy " << S(status.value("policy", json()))
    << ", up " << Fixed(status.value("uptime_s", 0.0), 1) << " s, " << S(status.value("clients", json()))
    << " client(s); utilisation over the last " << Fixed(status.value("window_s", 0.0), 1) << " s\n";
  // Grants, and how many of them were sole-tenant leases taken without a round trip.
  const json counters = status.value("counters", json::object());
  o << "grants " << S(counters.value("grants", json(0))) << " (" << S(counters.value("lease_takes", json(0)))
    << " by lease), preemptions " << S(counters.value("preemptions", json(0))) << ", swaps in/out "
    << S(counters.value("swap_ins", json(0))) << "/" << S(counters.value("swap_outs", json(0))) << "\n";
  if (const std::string line = ctl::RenderOrphanCounters(status); !line.empty()) o << line << "\n";
  o << "\n";
  for (const json& g : status.value("gpus", json::array())) {
    const double busy = g.value("busy", 0.0);
    o << bold << "GPU " << S(g["gpu"]) << reset << "  " << Bar(busy, 20) << " " << Fixed(busy * 100, 1)
      << "% busy  " << (g.value("drained", false) ? red + "DRAINED" + reset + "  " : "");
    const json& h = g.value("holder", json());
    const json holders = g.value("holders", json::array());
    if (holders.is_array() && holders.size() > 1) {
      o << "holders: " << ctl::HoldersText(g);  // a co-run set
    } else if (h.is_object()) {
      o << "holder: " << S(h["function"]) << " (#" << S(h["client"]) << ") for "
        << ctl::Millis(h["held_ms"]);
    } else {
      o << "holder: -";
    }
    o << "  queue: " << g.value("queue", json::array()).size() << "\n";
    o << "       memory: resident " << ctl::Bytes(g["resident_bytes"]) << ", swapped "
      << ctl::Bytes(g["swapped_bytes"]) << ", reserved " << ctl::Bytes(g["reserved_bytes"]);
    // Memory of live processes the arbiter disconnected (part of reserved), when there is any.
    if (const json& orphaned = g.value("orphaned_bytes", json()); orphaned.is_number() && orphaned != 0)
      o << " (" << red << "orphaned " << ctl::Bytes(orphaned) << reset << ")";
    o << " of "
      << ctl::Bytes(g["usable_bytes"]) << " usable (" << ctl::Bytes(g["total_bytes"]) << ")\n";
    std::vector<std::pair<double, std::string>> tenants;
    for (const json& u : g.value("utilisation", json::array()))
      tenants.emplace_back(u.value("share", 0.0), S(u["function"]) + " (#" + S(u["client"]) + ")");
    std::sort(tenants.rbegin(), tenants.rend());
    o << "       tenants:";
    if (tenants.empty()) o << " idle";
    for (const auto& [share, who] : tenants) o << "  " << who << " " << Fixed(share * 100, 1) << "%";
    o << "\n";
    const json& queue = g.value("queue", json::array());
    if (!queue.empty()) {
      o << "       waiting:";
      for (const json& q : queue) o << "  " << S(q["function"]) << " " << ctl::Millis(q["waiting_ms"]);
      o << "\n";
    }
    o << "\n";
  }
  o << bold << "FUNCTIONS" << reset << "\n";
  ctl::Table t({"ID", "FUNCTION", "POD", "PID", "STATE", "GPU", "TOKEN", "QUOTA", "SLO",
                "BURSTS", "SLO MET", "LAST", "HELD"});
  for (const json& c : clients.value("clients", json::array())) {
    std::string token = "-";
    if (c.value("holding", false)) token = "holding";
    else if (c.value("waiting", false)) token = "waiting";
    t.Add({S(c["client"]), S(c["function"]), ctl::Pod(c), S(c["pid"]), S(c["state"]), S(c["gpu"]),
           token,
           ctl::Bytes(c["quota_bytes"]), S(c["slo_ms"]) + " ms", S(c["bursts"]),
           ctl::Percent(c["slo_attainment"]), ctl::Millis(c["last_latency_ms"]),
           ctl::Millis(c["held_ms_total"])});
  }
  o << t.str() << "\n";
  if (const std::string orphans = ctl::RenderOrphans(status); !orphans.empty()) {
    o << bold << "ORPHANS" << reset << " (disconnected alive; memory reserved until they exit or register again)\n"
      << red << orphans << reset << "\n";
  }
  o << bold << "RECENT SLO MISSES" << reset << "\n";
  const json& misses = status.value("recent_slo_misses", json::array());
  if (misses.empty()) {
    o << "none\n";
  } else {
    ctl::Table m({"AGO", "FUNCTION", "CLIENT", "GPU", "LATENCY", "WAIT", "SLO"});
    // Newest first, at most 10.
    for (size_t i = 0; i < misses.size() && i < 10; ++i) {
      const json& x = misses[misses.size() - 1 - i];
      m.Add({ctl::Millis(x["ago_ms"]), S(x["function"]), S(x["client"]), S(x["gpu"]),
             ctl::Millis(x["latency_ms"]), ctl::Millis(x["wait_ms"]), S(x["slo_ms"]) + " ms"});
    }
    o << red << m.str() << reset;
  }
  // Cut lines to the terminal width (colour codes count; only cosmetic).
  std::string out;
  std::istringstream in(o.str());
  std::string line;
  while (std::getline(in, line)) {
    if (!style.color && static_cast<int>(line.size()) > style.width) line.resize(static_cast<size_t>(style.width));
    out += line + "\n";
  }
  return out;
}

}  // namespace gshare::top
