// An LLM-like decoder: a pre-LayerNorm transformer with mixture-of-experts feed-forward layers,
// greedy decoding, batch 1. Every position (prompt and generated) runs a loop of small kernels
// (about 23 launches: embedding, per layer LayerNorm, QKV GEMM into the KV cache, 4-head
// attention over the cache with sgemm_batched + softmax_rows, output GEMM, LayerNorm, the
// position's expert FFN; then the head GEMM and argmax, whose result is written on the device
// as the next position's token id). The host only launches: no synchronisation inside the loop.
// A request's cost is proportional to prompt + generated tokens.
//
//   d = 128, 4 heads, 2 layers, vocabulary 4096, at most 256 positions,
//   1024 experts per layer, each a 128 -> 512 -> 128 GELU FFN (514 KiB),
//   expert of (layer, position) = ExpertFor(seed, layer, position)   (hash routing)
// 1.03 GiB of deterministic weights; a position reads one expert per layer (about 1%), so a
// request costs a few ms of CPU under simcuda while the model is GPU-sized.
//
// Inputs: "input_ids" INT32 [1, P] (1 <= P, ids in [0, 4096)), optional "max_tokens" INT32 [1]
// (default 16; P + max_tokens <= 256). Output: "output_ids" INT32 [1, max_tokens].
// Thread-safety: as sample::Model.
#pragma once

#include <cstdint>
#include <memory>

#include "sample/model.h"
#include "sample/weights.h"

namespace sample_llm {

inline constexpr unsigned kDim = 128, kHeads = 4, kHeadDim = 32, kLayers = 2, kVocab = 4096;
inline constexpr unsigned kMaxPositions = 256, kExperts = 1024, kFfn = 512;
inline constexpr int kDefaultMaxTokens = 16;

enum Tensor : uint32_t { kTok = 0, kPos = 1, kLnFG = 2, kLnFB = 3, kHead = 4, kFirstLayer = 16 };
// Per layer; kW1, kB1, kW2 hold all experts ([E][d][F], [E][F], [E][F][d]).
enum LayerTensor : uint32_t {
  kWqkv, kWo, kLn1G, kLn1B, kLn2G, kLn2B, kW1, kB1, kW2, kLayerTensors
};
inline constexpr uint32_t LayerTensorId(unsigned layer, uint32_t t) {
  return kFirstLayer + 16 * layer + t;
}

// The expert that layer `layer` uses at position `pos`.
inline unsigned ExpertFor(uint64_t seed, unsigned layer, unsigned pos) {
  return static_cast<unsigned>(
      sample::Mix64(sample::WeightBase(seed, 0xE0000000u + layer) + pos) % kExperts);
}

std::unique_ptr<sample::Model> MakeLlmModel();

}  // namespace sample_llm
