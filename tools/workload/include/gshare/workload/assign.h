// Gives every function of a trace a model from a catalog and every request an execution time.
//
// Thread-safety: reentrant; seeded and deterministic (same inputs, same output everywhere).
#pragma once

#include <cstdint>
#include <vector>

#include "gshare/workload/catalog.h"
#include "gshare/workload/result.h"
#include "gshare/workload/trace.h"

namespace gshare::workload {

// Draws a model index (into catalog.models) for each function of `trace`, independently, with
// probability proportional to ModelSpec::share. Result size == trace.functions.size().
// Fails if the catalog is empty or all shares are 0.
Result<std::vector<uint32_t>> AssignModels(const Trace& trace, const Catalog& catalog,
                                           uint64_t seed);

// Fills exec_ms of every invocation that has none: from the token counts when the model is
// token-driven and the invocation has them, else drawn from the model's log-normal.
// REQUIRES: models.size() == trace->functions.size(), every index < catalog.models.size().
void SampleExecTimes(Trace* trace, const Catalog& catalog, const std::vector<uint32_t>& models,
                     uint64_t seed);

}  // namespace gshare::workload
