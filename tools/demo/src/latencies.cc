// Parsing of gshare-loadgen's records CSV and per-kind statistics.
#include "gshare/demo/latencies.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "gshare/loadgen/report.h"

namespace gshare::demo {
workload::Result<std::vector<RequestRecord>> ParseRecordsCsv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "target,scheduled_ms,latency_ms,outcome")
    return workload::Fail("records: missing header");
  std::vector<RequestRecord> out;
  for (int n = 2; std::getline(in, line); ++n) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string s; std::getline(fields, s, ',');) f.push_back(s);
    if (f.size() != 4) return workload::Fail("records line " + std::to_string(n) + ": 4 fields expected");
    RequestRecord r;
    r.target = f[0];
    r.scheduled_ms = std::strtod(f[1].c_str(), nullptr);
    r.latency_ms = std::strtod(f[2].c_str(), nullptr);
    r.ok = f[3] == "ok";
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<KindStats> StatsByKind(const std::vector<FunctionSpec>& functions,
                                   const std::vector<RequestRecord>& records) {
  std::map<std::string, const FunctionSpec*> by_name;
  for (const FunctionSpec& f : functions) by_name[f.name] = &f;
  std::vector<KindStats> out;
  for (const char* kind : {"cnn", "bert", "llm"}) {
    KindStats k;
    k.kind = kind;
    bool present = false;
    for (const FunctionSpec& f : functions) {
      if (f.kind == kind) {
        present = true;
        k.slo_ms = f.slo_ms;
      }
    }
    if (!present) continue;
    std::vector<double> lat;
    uint64_t met = 0;
    for (const RequestRecord& r : records) {
      auto it = by_name.find(r.target);
      if (it == by_name.end() || it->second->kind != kind) continue;
      ++k.requests;
      if (!r.ok) continue;
      ++k.ok;
      lat.push_back(r.latency_ms);
      if (r.latency_ms <= it->second->slo_ms) ++met;
    }
    std::sort(lat.begin(), lat.end());
    k.p50_ms = loadgen::NearestRankPercentile(lat, 0.50);
    k.p99_ms = loadgen::NearestRankPercentile(lat, 0.99);
    k.slo_attainment = k.requests == 0 ? 0 : static_cast<double>(met) / static_cast<double>(k.requests);
    out.push_back(k);
  }
  return out;
}

std::vector<double> SortedOkLatencies(const std::vector<RequestRecord>& records) {
  std::vector<double> lat;
  for (const RequestRecord& r : records) {
    if (r.ok) lat.push_back(r.latency_ms);
  }
  std::sort(lat.begin(), lat.end());
  return lat;
}

}  // namespace gshare::demo
