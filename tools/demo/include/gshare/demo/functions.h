// The demo's functions: a mix of sample kinds ("cnn=6,bert=4,llm=2") with per-kind vGPU quotas
// and SLOs, expanded into one FunctionSpec per server (named KIND-i, seed i+1, as
// samples/start-samples.sh names them).
//
// Thread-safety: pure functions over plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gshare/workload/result.h"

namespace gshare::demo {

struct FunctionSpec {
  std::string name;          // "cnn-0"
  std::string kind;          // "cnn", "bert" or "llm" (binary sample-KIND)
  uint64_t seed = 1;
  uint64_t quota_bytes = 0;  // GSHARE_VGPU_MEMORY
  double slo_ms = 0;         // GSHARE_SLO_MS and the loadgen's SLO
};

// "a=x,b=y" -> {a: x, b: y}; fails on an empty key or value or a repeated key.
workload::Result<std::map<std::string, std::string>> ParseKeyValues(const std::string& text);

// Expands the mix, interleaving the kinds (cnn-0, bert-0, llm-0, cnn-1, ...): trace functions
// map onto targets in this order and the Azure trace's popularity is Zipf over function
// indices, so every kind gets a share of the popular functions. Every kind must be one of cnn/bert/llm and have a quota and an SLO in the
// per-kind lists (sizes as in ParseByteSize, SLOs in milliseconds > 0).
workload::Result<std::vector<FunctionSpec>> BuildFunctions(const std::string& mix,
                                                           const std::string& quotas,
                                                           const std::string& slos_ms);

// The gshare-loadgen targets file for servers listening on `ports` (same order as `functions`).
std::string TargetsToml(const std::vector<FunctionSpec>& functions, const std::vector<int>& ports);

}  // namespace gshare::demo
