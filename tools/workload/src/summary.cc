// Implementation of summary.h.
#include "gshare/workload/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gshare::workload {
namespace {

constexpr uint64_t kMinInvocationsForCv = 10;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  return v[mid];
}

// Means of the optional per-invocation quantities.
void SummarizeRequests(const Trace& trace, TraceSummary* s) {
  double in = 0, out = 0, exec = 0;
  uint64_t n_tokens = 0, n_exec = 0;
  double gap_sum = 0, gap_sq = 0;
  for (size_t i = 0; i < trace.invocations.size(); ++i) {
    const Invocation& inv = trace.invocations[i];
    if (inv.input_tokens >= 0 && inv.output_tokens >= 0) {
      in += inv.input_tokens;
      out += inv.output_tokens;
      ++n_tokens;
    }
    if (inv.exec_ms) {
      exec += *inv.exec_ms;
      ++n_exec;
    }
    if (i > 0) {
      const double gap = static_cast<double>(inv.arrival_us - trace.invocations[i - 1].arrival_us);
      gap_sum += gap;
      gap_sq += gap * gap;
    }
  }
  if (n_tokens > 0) {
    s->mean_input_tokens = in / static_cast<double>(n_tokens);
    s->mean_output_tokens = out / static_cast<double>(n_tokens);
  }
  if (n_exec > 0) s->mean_exec_ms = exec / static_cast<double>(n_exec);
  const double gaps = static_cast<double>(trace.invocations.size()) - 1;
  if (gaps >= 2 && gap_sum > 0) {
    const double mean = gap_sum / gaps;
    const double var = std::max(0.0, (gap_sq - gaps * mean * mean) / (gaps - 1));
    s->aggregate_gap_cv = std::sqrt(var) / mean;
  }
}

}  // namespace

TraceSummary Summarize(const Trace& trace) {
  TraceSummary s;
  s.requests = trace.invocations.size();
  s.functions = static_cast<uint32_t>(trace.functions.size());
  s.span_s = static_cast<double>(trace.SpanUs()) / 1e6;
  if (s.span_s > 0) s.requests_per_s = static_cast<double>(s.requests) / s.span_s;
  SummarizeRequests(trace, &s);

  const std::vector<FunctionStats> stats = ComputeFunctionStats(trace);
  std::vector<uint64_t> counts;
  constexpr int kKinds = static_cast<int>(ArrivalKind::kOther) + 1;
  std::vector<KindSummary> kinds(kKinds);
  std::vector<std::vector<double>> cvs(kKinds);
  const double span_min = s.span_s / 60.0;
  for (size_t f = 0; f < stats.size(); ++f) {
    const uint64_t n = stats[f].invocations;
    counts.push_back(n);
    s.active_functions += n > 0;
    const double per_min = span_min > 0 ? static_cast<double>(n) / span_min : 0;
    s.at_most_hourly += per_min <= 1.0 / 60;
    s.at_most_minutely += per_min <= 1.0;
    const int k = static_cast<int>(trace.functions[f].kind);
    kinds[k].kind = trace.functions[f].kind;
    ++kinds[k].functions;
    kinds[k].invocations += n;
    if (n >= kMinInvocationsForCv) cvs[k].push_back(stats[f].gap_cv);
  }
  if (!stats.empty()) {
    s.at_most_hourly /= static_cast<double>(stats.size());
    s.at_most_minutely /= static_cast<double>(stats.size());
  }
  std::sort(counts.rbegin(), counts.rend());
  const auto top = static_cast<size_t>(std::ceil(0.186 * static_cast<double>(counts.size())));
  uint64_t top_sum = 0;
  for (size_t i = 0; i < top && i < counts.size(); ++i) top_sum += counts[i];
  if (s.requests > 0) s.top_18_6_percent_share = static_cast<double>(top_sum) / static_cast<double>(s.requests);
  for (int k = 0; k < kKinds; ++k) {
    if (kinds[k].functions == 0) continue;
    kinds[k].median_gap_cv = Median(cvs[k]);
    kinds[k].cv_functions = static_cast<uint32_t>(cvs[k].size());
    s.kinds.push_back(kinds[k]);
  }
  return s;
}

std::string FormatSummary(const TraceSummary& s) {
  char buf[512];
  std::string out;
  std::snprintf(buf, sizeof buf,
                "requests %llu, functions %u (%u invoked), span %.1f s, %.2f requests/s, "
                "aggregate inter-arrival CV %.2f\n",
                static_cast<unsigned long long>(s.requests), s.functions, s.active_functions,
                s.span_s, s.requests_per_s, s.aggregate_gap_cv);
  out += buf;
  std::snprintf(buf, sizeof buf,
                "popularity: busiest 18.6%% of functions carry %.1f%% of requests; %.1f%% of "
                "functions invoked at most hourly, %.1f%% at most once a minute\n",
                100 * s.top_18_6_percent_share, 100 * s.at_most_hourly, 100 * s.at_most_minutely);
  out += buf;
  for (const KindSummary& k : s.kinds) {
    std::snprintf(buf, sizeof buf,
                  "  %-8s %6u functions, %10llu requests, median inter-arrival CV %.2f (%u "
                  "functions with >= 10 requests)\n",
                  ArrivalKindName(k.kind), k.functions,
                  static_cast<unsigned long long>(k.invocations), k.median_gap_cv, k.cv_functions);
    out += buf;
  }
  if (s.mean_input_tokens >= 0) {
    std::snprintf(buf, sizeof buf, "tokens: mean %.1f in, %.1f out\n", s.mean_input_tokens,
                  s.mean_output_tokens);
    out += buf;
  }
  if (s.mean_exec_ms >= 0) {
    std::snprintf(buf, sizeof buf, "execution: mean %.3f ms\n", s.mean_exec_ms);
    out += buf;
  }
  return out;
}

}  // namespace gshare::workload
