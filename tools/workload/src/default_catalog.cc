// The built-in model catalog (DefaultCatalog()), identical to data/default-catalog.toml, which
// explains each value and its source; tests/workload checks that the two agree.
#include "gshare/workload/catalog.h"

namespace gshare::workload {
namespace {

constexpr uint64_t kMiB = 1024ull * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;

ModelSpec Model(const char* name, uint64_t weights, uint64_t activation, double exec_ms,
                double cv, double share, double prefill_ms = 0, double decode_ms = 0) {
  ModelSpec m;
  m.name = name;
  m.weights_bytes = weights;
  m.activation_bytes = activation;
  m.exec_ms_mean = exec_ms;
  m.exec_ms_cv = cv;
  m.prefill_ms_per_token = prefill_ms;
  m.decode_ms_per_token = decode_ms;
  m.share = share;
  return m;
}

}  // namespace

Catalog DefaultCatalog() {
  Catalog c;
  c.source = "built-in default";
  c.context_bytes = 400 * kMiB;
  c.models = {
      Model("mobilenet_v2", 7 * kMiB, 32 * kMiB, 1.0, 0.1, 9.5),
      Model("resnet50", 49 * kMiB, 64 * kMiB, 2.1, 0.1, 9.5),
      Model("resnet152", 120 * kMiB, 96 * kMiB, 5.0, 0.1, 9.5),
      Model("yolov5s", 14 * kMiB, 64 * kMiB, 6.0, 0.15, 9.5),
      Model("bert_base", 220 * kMiB, 32 * kMiB, 0.7, 0.1, 9.5),
      Model("bert_large", 670 * kMiB, 64 * kMiB, 1.6, 0.1, 9.5),
      Model("gpt2_small", 250 * kMiB, 128 * kMiB, 100.0, 0.2, 9.5, 0.01, 3.0),
      Model("llm_1b", 2200 * kMiB, 512 * kMiB, 300.0, 0.5, 11.7, 0.03, 2.0),
      Model("llm_7b", 14'000'000'000ull, 2 * kGiB, 1000.0, 0.5, 21.8, 0.1, 8.0),
  };
  // Co-run demands (data/default-catalog.toml explains them): compute, bandwidth.
  const double demands[][2] = {{0.10, 0.05}, {0.30, 0.15}, {0.35, 0.15}, {0.25, 0.15}, {0.25, 0.20},
                               {0.40, 0.25}, {0.10, 0.05}, {0.20, 0.55}, {0.30, 0.85}};
  for (size_t i = 0; i < c.models.size(); ++i) {
    c.models[i].compute_demand = demands[i][0];
    c.models[i].bandwidth_demand = demands[i][1];
  }
  return c;
}

}  // namespace gshare::workload
