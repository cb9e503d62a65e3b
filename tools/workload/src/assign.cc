// Implementation of assign.h: models for functions, execution times for requests.
#include "gshare/workload/assign.h"

#include <cmath>

#include "discrete.h"
#include "rng.h"

namespace gshare::workload {

Result<std::vector<uint32_t>> AssignModels(const Trace& trace, const Catalog& catalog,
                                           uint64_t seed) {
  if (catalog.models.empty()) return Fail("catalog " + catalog.source + " has no models");
  std::vector<double> shares;
  double total = 0;
  for (const ModelSpec& m : catalog.models) {
    shares.push_back(m.share);
    total += m.share;
  }
  if (!(total > 0)) return Fail("catalog " + catalog.source + ": every model has share 0");
  const internal::DiscreteSampler sampler(shares);
  internal::Rng rng(seed, 0);
  std::vector<uint32_t> models(trace.functions.size());
  for (uint32_t& m : models) m = sampler.Sample(&rng);
  return models;
}

void SampleExecTimes(Trace* trace, const Catalog& catalog, const std::vector<uint32_t>& models,
                     uint64_t seed) {
  // Per-model log-normal parameters, computed once.
  struct LogNormal {
    double mu, sigma;
  };
  std::vector<LogNormal> dist;
  for (const ModelSpec& m : catalog.models) {
    const double sigma2 = std::log1p(m.exec_ms_cv * m.exec_ms_cv);
    dist.push_back({std::log(m.exec_ms_mean) - 0.5 * sigma2, std::sqrt(sigma2)});
  }
  internal::Rng rng(seed, 0);
  for (Invocation& inv : trace->invocations) {
    if (inv.exec_ms) continue;
    const uint32_t index = models[inv.function];
    const ModelSpec& m = catalog.models[index];
    const bool token_driven = m.prefill_ms_per_token > 0 || m.decode_ms_per_token > 0;
    if (token_driven && inv.input_tokens >= 0 && inv.output_tokens >= 0) {
      const double ms = m.prefill_ms_per_token * inv.input_tokens +
                        m.decode_ms_per_token * inv.output_tokens;
      if (ms > 0) {
        inv.exec_ms = ms;
        continue;
      }
    }
    inv.exec_ms = m.exec_ms_cv > 0 ? std::exp(dist[index].mu + dist[index].sigma * rng.Normal())
                                   : m.exec_ms_mean;
  }
}

}  // namespace gshare::workload
