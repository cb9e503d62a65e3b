// Generator of the PyTorch-like allocation trace (see pytorch_like_trace.h).
#include "pytorch_like_trace.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <unordered_map>

namespace gshare::memory::testing {
namespace {

uint64_t LogNormalBytes(std::mt19937_64& rng, double median, double sigma, uint64_t lo,
                        uint64_t hi) {
  std::lognormal_distribution<double> dist(std::log(median), sigma);
  const double v = dist(rng);
  return std::clamp<uint64_t>(static_cast<uint64_t>(v), lo, hi);
}

}  // namespace

std::vector<TraceOp> MakePytorchLikeTrace(uint64_t seed, int iterations) {
  std::mt19937_64 rng(seed);
  std::vector<TraceOp> ops;
  uint32_t next_id = 0;
  auto alloc = [&](uint64_t bytes) {
    ops.push_back(TraceOp{true, next_id, bytes});
    return next_id++;
  };
  auto release = [&](uint32_t id) { ops.push_back(TraceOp{false, id, 0}); };

  // 1. Parameters: ~400 tensors; PyTorch rounds tensor sizes to 512 bytes, bias-like ones stay
  // tiny.
  for (int i = 0; i < 400; ++i) {
    uint64_t bytes = LogNormalBytes(rng, 256.0 * 1024, 2.2, 4, 256ull << 20);
    if (rng() % 2 == 0) bytes = (bytes + 511) / 512 * 512;
    alloc(bytes);
  }
  // 2. Inference iterations.
  const int batches[] = {1, 2, 4, 8, 3, 16, 1, 6};
  for (int it = 0; it < iterations; ++it) {
    const int batch = batches[it % 8];
    std::vector<uint32_t> iteration;
    std::deque<uint32_t> activations;
    const uint32_t workspace = alloc((4ull << 20) << (rng() % 4));  // 4..32 MiB
    iteration.push_back(workspace);
    const int layers = 60 + static_cast<int>(rng() % 40);
    for (int layer = 0; layer < layers; ++layer) {
      const uint64_t act = LogNormalBytes(rng, 1.0 * 1024 * 1024 * batch, 1.3, 256, 96ull << 20);
      activations.push_back(alloc(act));
      if (rng() % 3 == 0) {  // a temporary used and dropped inside the layer
        release(alloc(LogNormalBytes(rng, 64.0 * 1024 * batch, 1.5, 256, 32ull << 20)));
      }
      const size_t keep = 2 + rng() % 3;
      while (activations.size() > keep) {
        release(activations.front());
        activations.pop_front();
      }
    }
    for (uint32_t id : activations) release(id);
    for (uint32_t id : iteration) release(id);
  }
  return ops;
}

CUresult ReplayForWaste(VgpuMemory& mem, const std::vector<TraceOp>& ops, TraceWaste* waste) {
  std::unordered_map<uint32_t, CUdeviceptr> live;
  TraceWaste w;
  CUresult first_error = CUDA_SUCCESS;
  for (const TraceOp& op : ops) {
    CUresult rc = CUDA_SUCCESS;
    if (op.allocate) {
      CUdeviceptr p = 0;
      rc = mem.Allocate(op.bytes, &p);
      if (rc == CUDA_SUCCESS) live[op.id] = p;
    } else if (auto it = live.find(op.id); it != live.end()) {
      rc = mem.Free(it->second);
      live.erase(it);
    }
    if (first_error == CUDA_SUCCESS) first_error = rc;
    const VgpuMemoryCounters c = mem.counters();
    ++w.operations;
    w.max_backed = std::max(w.max_backed, c.backed_bytes);
    w.max_excess_over_110 =
        std::max(w.max_excess_over_110,
                 static_cast<double>(c.backed_bytes) - 1.10 * static_cast<double>(c.requested_bytes));
    if (c.requested_bytes > w.peak_requested) {
      w.peak_requested = c.requested_bytes;
      w.backed_at_peak = c.backed_bytes;
      w.physical_handles_at_peak = c.physical_handles;
    }
  }
  for (const auto& [id, p] : live) (void)mem.Free(p);
  if (waste != nullptr) *waste = w;
  return first_error;
}

}  // namespace gshare::memory::testing
