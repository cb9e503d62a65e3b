// Summarize: aggregation of the trace's events by args.function; FormatSummary: the table.
#include "gshare/trace/summary.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace gshare::trace {
namespace {

using nlohmann::json;

double Num(const json& a, const char* key) {
  return a.contains(key) && a[key].is_number() ? a[key].get<double>() : 0.0;
}

double Ms(double us) { return us / 1000.0; }

double Sum(const std::vector<double>& v) {
  double t = 0;
  for (double x : v) t += x;
  return t;
}

}  // namespace

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

shm::Result<TraceSummary> Summarize(const json& trace) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array() ||
      trace.value("otherData", json::object()).value("tool", "") != "gshare-trace")
    return shm::Status(shm::StatusCode::kMalformed, "not a trace written by gshare-trace");
  TraceSummary s;
  const json& other = trace["otherData"];
  s.span_us = Num(other, "end_us") - Num(other, "begin_us");
  s.records = static_cast<uint64_t>(Num(other, "records"));
  s.lost = static_cast<uint64_t>(Num(other, "lost_records"));
  std::map<std::string, FunctionSummary> fns;
  std::map<std::string, std::set<int64_t>> clients;
  for (const json& e : trace["traceEvents"]) {
    if (!e.is_object() || !e.contains("args") || !e["args"].is_object()) continue;
    const json& a = e["args"];
    if (!a.contains("function") || !a["function"].is_string()) continue;
    const std::string ph = e.value("ph", "");
    const std::string cat = e.value("cat", "");
    const std::string name = e.value("name", "");
    const std::string fn = a["function"].get<std::string>();
    FunctionSummary& f = fns[fn];
    f.name = fn;
    if (a.contains("client") && a["client"].is_number_integer()) clients[fn].insert(a["client"].get<int64_t>());
    const bool unfinished = a.value("unfinished", false);
    const double dur = Num(e, "dur");
    if (ph == "X" && cat == "burst") {
      f.slo_ms = std::max(f.slo_ms, static_cast<uint32_t>(Num(a, "slo_ms")));
      if (unfinished) {
        ++f.unfinished;
        continue;
      }
      ++f.bursts;
      f.latency_us.push_back(Num(a, "latency_us"));
      if (a.value("miss", false)) {
        ++f.misses;
        ++f.miss_causes[a.value("cause", "unknown")];
      }
    } else if (ph == "X" && cat == "token" && name == "wait") {
      f.wait_us.push_back(dur);
    } else if (ph == "X" && cat == "token" && name == "hold") {
      f.hold_us += dur;
    } else if (ph == "X" && cat == "swap") {
      const auto bytes = static_cast<uint64_t>(Num(a, "bytes"));
      if (name == "swap-in") {
        ++f.swap_ins, f.swap_in_us += dur, f.swap_in_bytes += bytes;
      } else {
        ++f.swap_outs, f.swap_out_us += dur, f.swap_out_bytes += bytes;
      }
    } else if (ph == "i") {
      f.preemptions += name == "preempt";
      f.revokes += name == "revoke";
      f.checkpoints += name == "checkpoint";
      f.restores += name == "restore";
    }
  }
  for (auto& [name, f] : fns) {
    f.clients.assign(clients[name].begin(), clients[name].end());
    s.functions.push_back(std::move(f));
  }
  return s;
}

std::string FormatSummary(const TraceSummary& s) {
  std::string out = fmt::format("{:.2f} s traced, {} ring records, {} lost{}\n", s.span_us / 1e6, s.records, s.lost,
                                s.lost > 0 ? " (the ring wrapped past the reader: figures are incomplete)" : "");
  out += fmt::format("{:<16} {:>4} {:>7} {:>6} {:>17} {:>24} {:>21} {:>21} {:>7} {:>7}\n", "function", "proc",
                     "bursts", "SLO", "latency p50/p99", "token wait p50/p99/total", "swap-in n/time/MiB",
                     "swap-out n/time/MiB", "preempt", "misses");
  for (const FunctionSummary& f : s.functions) {
    out += fmt::format(
        "{:<16} {:>4} {:>7} {:>4}ms {:>7.2f}/{:>7.2f}ms {:>7.2f}/{:>7.2f}/{:>8.1f}ms {:>4}/{:>8.1f}ms/{:>6.0f} "
        "{:>4}/{:>8.1f}ms/{:>6.0f} {:>7} {:>7}\n",
        f.name.substr(0, 16), f.clients.size(), f.bursts, f.slo_ms, Ms(Percentile(f.latency_us, 50)),
        Ms(Percentile(f.latency_us, 99)), Ms(Percentile(f.wait_us, 50)), Ms(Percentile(f.wait_us, 99)),
        Ms(Sum(f.wait_us)),
        f.swap_ins, Ms(f.swap_in_us), static_cast<double>(f.swap_in_bytes) / (1 << 20), f.swap_outs,
        Ms(f.swap_out_us), static_cast<double>(f.swap_out_bytes) / (1 << 20), f.preemptions, f.misses);
  }
  out += "SLO misses by cause (queueing = waiting for the token, swap = waiting for a swap-in, "
         "execution = the burst itself longer than the SLO):\n";
  for (const FunctionSummary& f : s.functions) {
    auto n = [&](const char* cause) {
      auto it = f.miss_causes.find(cause);
      return it == f.miss_causes.end() ? uint64_t{0} : it->second;
    };
    out += fmt::format("  {:<16} {} of {} bursts missed: queueing {}, swap {}, execution {}{}{}\n", f.name, f.misses,
                       f.bursts, n("queueing"), n("swap"), n("execution"),
                       f.unfinished > 0 ? fmt::format(" ({} unfinished at the end)", f.unfinished) : "",
                       f.revokes + f.checkpoints > 0
                           ? fmt::format("; token revoked {}x, checkpointed {}x, restored {}x", f.revokes,
                                         f.checkpoints, f.restores)
                           : "");
  }
  return out;
}

json SummaryJson(const TraceSummary& s) {
  json fns = json::array();
  for (const FunctionSummary& f : s.functions) {
    fns.push_back({{"function", f.name},
                   {"clients", f.clients},
                   {"slo_ms", f.slo_ms},
                   {"bursts", f.bursts},
                   {"unfinished_bursts", f.unfinished},
                   {"latency_p50_ms", Ms(Percentile(f.latency_us, 50))},
                   {"latency_p99_ms", Ms(Percentile(f.latency_us, 99))},
                   {"token_waits", f.wait_us.size()},
                   {"token_wait_p50_ms", Ms(Percentile(f.wait_us, 50))},
                   {"token_wait_p99_ms", Ms(Percentile(f.wait_us, 99))},
                   {"token_wait_total_ms", Ms(Sum(f.wait_us))},
                   {"hold_total_ms", Ms(f.hold_us)},
                   {"swap_ins", f.swap_ins},
                   {"swap_in_ms", Ms(f.swap_in_us)},
                   {"swap_in_bytes", f.swap_in_bytes},
                   {"swap_outs", f.swap_outs},
                   {"swap_out_ms", Ms(f.swap_out_us)},
                   {"swap_out_bytes", f.swap_out_bytes},
                   {"preemptions", f.preemptions},
                   {"revokes", f.revokes},
                   {"checkpoints", f.checkpoints},
                   {"restores", f.restores},
                   {"slo_misses", f.misses},
                   {"slo_miss_causes", f.miss_causes}});
  }
  return {{"span_s", s.span_us / 1e6}, {"records", s.records}, {"lost_records", s.lost}, {"functions", fns}};
}

}  // namespace gshare::trace
