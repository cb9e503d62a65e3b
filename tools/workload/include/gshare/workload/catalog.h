// The model catalog: what each function runs (weights and activation memory, GPU execution
// time distribution, SLO), loaded from TOML (format in docs/workloads.md, "catalog") or built
// in from the reference table (DefaultCatalog(); the same models ship as
// data/default-catalog.toml). Execution times are batch-1 solo times on an A100-class GPU.
//
// Thread-safety: plain values and reentrant functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gshare/workload/result.h"

namespace gshare::workload {

struct ModelSpec {
  std::string name;               // unique within a catalog
  uint64_t weights_bytes = 0;     // > 0: what a swap moves
  uint64_t activation_bytes = 0;  // working memory of one running request (KV cache included)
  // Execution time of one request: log-normal with this mean (> 0) and coefficient of
  // variation (>= 0; 0 means constant).
  double exec_ms_mean = 0;
  double exec_ms_cv = 0;
  // LLM-style models may instead derive a request's execution time from its token counts
  // (when the trace has them): prefill_ms_per_token * input + decode_ms_per_token * output.
  // Both 0 (the default) means "not token-driven".
  double prefill_ms_per_token = 0;
  double decode_ms_per_token = 0;
  // Explicit SLO; nullopt derives it with SloMs() from the execution time distribution.
  std::optional<double> slo_ms;
  // Relative weight of this model when AssignModels() draws models for functions (>= 0).
  double share = 1.0;
  // Co-running (issue 20; only GPUs marked for co-running use them): the fraction of the GPU's
  // compute its kernels could use alone at batch 1 (0, 1], and of the device's memory
  // bandwidth it uses alone [0, 1]. The defaults mean "fills the GPU" (never worth co-running).
  double compute_demand = 1.0;
  double bandwidth_demand = 1.0;
};

struct Catalog {
  std::vector<ModelSpec> models;
  // Device memory a running instance holds besides weights and activations (CUDA context,
  // libraries): ~300-500 MB on real GPUs.
  uint64_t context_bytes = 0;
  std::string source;  // file path or "built-in default"

  // Index of the model called `name`, or -1.
  int Find(std::string_view name) const;
};

// Parses a catalog file. Errors name the file, the line where toml++ can tell it, and the key:
// "catalog.toml:12: model 'bert': weights '12 parsecs' is not a byte size (...)". Unknown keys
// are errors too (they are usually typos).
Result<Catalog> LoadCatalog(const std::filesystem::path& path);
Result<Catalog> ParseCatalog(std::string_view toml_text, std::string_view source_name);

// The built-in catalog from docs/workloads.md's table (MobileNetV2 ... LLM 7B).
Catalog DefaultCatalog();

// The p-quantile (0 < p < 1) of a model's execution time distribution (the log-normal of
// exec_ms_mean / exec_ms_cv).
double ExecQuantileMs(const ModelSpec& model, double p);

// The SLO of a model: model.slo_ms if set, else max(floor_ms, factor x p90 execution time)
// (the paper's rule is factor 1.5; the reference sweeps k x solo latency with a 10 ms floor).
double SloMs(const ModelSpec& model, double factor = 1.5, double floor_ms = 0.0);

}  // namespace gshare::workload
