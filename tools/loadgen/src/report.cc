// Summaries, table and JSON of a load-generator run (see report.h).
#include "gshare/loadgen/report.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gshare::loadgen {
namespace {

Summary Summarise(const std::string& name, double slo_ms, const std::vector<const Record*>& recs,
                  const std::vector<double>& slo_of_target, double wall_s) {
  Summary s;
  s.name = name;
  s.slo_ms = slo_ms;
  std::vector<double> lat;
  uint64_t within = 0;
  double sum = 0;
  for (const Record* r : recs) {
    ++s.requests;
    if (r->outcome != Outcome::kOk) {
      ++s.errors;
      if (r->outcome == Outcome::kWrongDigest || r->outcome == Outcome::kInconsistent) ++s.wrong;
      continue;
    }
    ++s.ok;
    lat.push_back(r->latency_ms);
    sum += r->latency_ms;
    if (r->latency_ms <= slo_of_target[r->target]) ++within;
  }
  std::sort(lat.begin(), lat.end());
  s.p50_ms = NearestRankPercentile(lat, 0.50);
  s.p99_ms = NearestRankPercentile(lat, 0.99);
  s.mean_ms = lat.empty() ? 0 : sum / static_cast<double>(lat.size());
  s.slo_attainment = s.requests == 0 ? 0 : static_cast<double>(within) / static_cast<double>(s.requests);
  s.throughput_rps = wall_s > 0 ? static_cast<double>(s.ok) / wall_s : 0;
  return s;
}

nlohmann::json SummaryJson(const Summary& s) {
  return {{"name", s.name},       {"slo_ms", s.slo_ms},   {"requests", s.requests},
          {"completed", s.ok},    {"errors", s.errors},   {"wrong_results", s.wrong},
          {"slo_attainment", s.slo_attainment},           {"p50_ms", s.p50_ms},
          {"p99_ms", s.p99_ms},   {"mean_ms", s.mean_ms}, {"throughput_rps", s.throughput_rps}};
}

}  // namespace

std::vector<Summary> Summarize(const std::vector<TargetInfo>& targets,
                               const std::vector<double>& slo_ms, const RunResult& run) {
  std::vector<std::vector<const Record*>> per(targets.size());
  std::vector<const Record*> all;
  for (const Record& r : run.records) {
    per[r.target].push_back(&r);
    all.push_back(&r);
  }
  std::vector<Summary> out;
  for (size_t i = 0; i < targets.size(); ++i) {
    out.push_back(Summarise(targets[i].target.name, slo_ms[i], per[i], slo_ms, run.wall_s));
  }
  out.push_back(Summarise("all", 0, all, slo_ms, run.wall_s));
  return out;
}

std::string FormatTable(const std::vector<Summary>& s) {
  std::string t = fmt::format("{:<20} {:>8} {:>8} {:>7} {:>6} {:>8} {:>8} {:>9} {:>9} {:>8}\n",
                              "target", "requests", "ok", "errors", "wrong", "SLO ms", "SLO %",
                              "p50 ms", "p99 ms", "req/s");
  for (const Summary& x : s) {
    t += fmt::format("{:<20} {:>8} {:>8} {:>7} {:>6} {:>8} {:>8.2f} {:>9.2f} {:>9.2f} {:>8.1f}\n",
                     x.name, x.requests, x.ok, x.errors, x.wrong,
                     x.slo_ms > 0 ? fmt::format("{:g}", x.slo_ms) : "-", 100.0 * x.slo_attainment,
                     x.p50_ms, x.p99_ms, x.throughput_rps);
  }
  return t;
}

std::string FormatJson(const std::string& label, const std::string& description,
                       const std::vector<Summary>& s, const RunResult& run) {
  const Summary& all = s.back();
  std::map<std::string, uint64_t> by_kind;
  for (const Record& r : run.records) {
    if (r.outcome != Outcome::kOk) ++by_kind[OutcomeName(r.outcome)];
  }
  nlohmann::json targets = nlohmann::json::array();
  for (size_t i = 0; i + 1 < s.size(); ++i) targets.push_back(SummaryJson(s[i]));
  nlohmann::json r = {{"policy", label},
                      {"requests", all.requests},
                      {"slo_attainment", all.slo_attainment},
                      {"p50_ms", all.p50_ms},
                      {"p99_ms", all.p99_ms},
                      {"gpu_seconds", nullptr},
                      {"peak_gpus", nullptr},
                      {"swap_bytes", nullptr},
                      {"cost_usd", nullptr},
                      {"completed", all.ok},
                      {"errors", all.errors},
                      {"wrong_results", all.wrong},
                      {"mean_ms", all.mean_ms},
                      {"throughput_rps", all.throughput_rps},
                      {"duration_s", run.wall_s},
                      {"errors_by_kind", by_kind},
                      {"error_examples", run.error_examples},
                      {"targets", targets}};
  nlohmann::json j = {{"workload", description}, {"runs", nlohmann::json::array({r})}};
  return j.dump(2) + "\n";
}

double NearestRankPercentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(q * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

std::string FormatRecordsCsv(const std::vector<TargetInfo>& targets, const RunResult& run) {
  std::string out = "target,scheduled_ms,latency_ms,outcome\n";
  for (const Record& r : run.records) {
    const std::string& name = r.target < targets.size() ? targets[r.target].target.name : "?";
    out += fmt::format("{},{:.3f},{:.3f},{}\n", name, static_cast<double>(r.scheduled_us) / 1e3,
                       r.latency_ms, OutcomeName(r.outcome));
  }
  return out;
}

}  // namespace gshare::loadgen
