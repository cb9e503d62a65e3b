// Arrival plans from a fixed rate or a trace (see plan.h).
#include "gshare/loadgen/plan.h"

#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

namespace gshare::loadgen {
namespace {

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool Within(const Bounds& b, size_t count, int64_t at_us) {
  if (b.max_requests > 0 && count >= b.max_requests) return false;
  return b.max_seconds <= 0 || static_cast<double>(at_us) <= b.max_seconds * 1e6;
}

}  // namespace

workload::Result<Plan> FixedRatePlan(const FixedRateOptions& o, size_t targets, const Bounds& b) {
  if (targets == 0) return workload::Fail("no targets");
  if (!(o.rate_per_s > 0) || !(o.duration_s > 0)) {
    return workload::Fail("--rate and --duration must be positive");
  }
  if (o.variants == 0) return workload::Fail("--variants must be at least 1");
  Plan p;
  double t_us = 0;
  const double gap_us = 1e6 / o.rate_per_s;
  // Even spacing: exactly floor(rate x duration) arrivals (no floating-point creep at the end).
  const auto even_count = static_cast<uint64_t>(std::floor(o.rate_per_s * o.duration_s + 1e-9));
  for (uint64_t i = 0;; ++i) {
    if (o.poisson ? t_us >= o.duration_s * 1e6 : i >= even_count) break;
    const auto at = static_cast<int64_t>(std::llround(t_us));
    if (!Within(b, p.arrivals.size(), at)) break;
    Arrival a;
    a.at_us = at;
    a.target = static_cast<uint32_t>(i % targets);
    a.variant = static_cast<uint32_t>(Mix(o.seed * 0x9E3779B97F4A7C15ull + i) % o.variants);
    p.arrivals.push_back(a);
    if (o.poisson) {
      const double u = (static_cast<double>(Mix(o.seed + 0x51ED + i) >> 11) + 0.5) / 9007199254740992.0;
      t_us += -std::log(u) * gap_us;
    } else {
      t_us = static_cast<double>(i + 1) * gap_us;
    }
  }
  p.description = fmt::format("fixed rate {} req/s{} for {} s over {} targets ({} requests)",
                              o.rate_per_s, o.poisson ? " (Poisson)" : "", o.duration_s, targets,
                              p.arrivals.size());
  return p;
}

workload::Result<Plan> TracePlan(const workload::SourceOptions& source,
                                 const std::vector<std::string>& target_names, uint32_t variants,
                                 const Bounds& b) {
  if (target_names.empty()) return workload::Fail("no targets");
  if (variants == 0) return workload::Fail("--variants must be at least 1");
  workload::Result<workload::Trace> trace = workload::LoadTrace(source);
  if (!trace.ok()) return trace.status();
  std::unordered_map<std::string, uint32_t> by_name;
  for (uint32_t i = 0; i < target_names.size(); ++i) by_name[target_names[i]] = i;
  bool named = !trace->functions.empty();
  for (const workload::FunctionInfo& f : trace->functions) named &= by_name.count(f.name) > 0;
  std::vector<uint32_t> target_of(trace->functions.size());
  for (size_t f = 0; f < target_of.size(); ++f) {
    target_of[f] = named ? by_name[trace->functions[f].name]
                         : static_cast<uint32_t>(f % target_names.size());
  }
  Plan p;
  const int64_t first = trace->invocations.empty() ? 0 : trace->invocations.front().arrival_us;
  for (size_t i = 0; i < trace->invocations.size(); ++i) {
    const workload::Invocation& inv = trace->invocations[i];
    Arrival a;
    a.at_us = inv.arrival_us - first;
    if (!Within(b, p.arrivals.size(), a.at_us)) break;
    a.target = target_of[inv.function];
    a.variant = static_cast<uint32_t>(Mix(source.seed * 0x9E3779B97F4A7C15ull + i) % variants);
    a.input_tokens = inv.input_tokens;
    a.output_tokens = inv.output_tokens;
    p.arrivals.push_back(a);
  }
  p.description = fmt::format("{}; {} functions mapped {} onto {} targets; {} requests",
                              trace->description, trace->functions.size(),
                              named ? "by name" : "round-robin", target_names.size(),
                              p.arrivals.size());
  return p;
}

}  // namespace gshare::loadgen
