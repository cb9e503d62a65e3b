// A BERT-like text encoder (post-LayerNorm transformer), batch 1, 1..128 tokens:
//   x = LayerNorm(tok_emb[ids] + pos_emb[0..S))                   (vocabulary 524,288 x 128)
//   4 layers of: qkv = x Wqkv + b; 4-head attention (sgemm_batched, softmax_rows);
//                x = LN1(ctx Wo + bo + x); x = LN2(GELU(x W1 + b1) W2 + b2 + x)   (FFN 512)
//   output "embedding" = x[0] (the first token's final hidden state, 128 floats)
// 259 MiB of deterministic weights: the (hashed-vocabulary) token embedding table is 256 MiB,
// of which a request reads only its tokens' rows; the layers are thin (3 MiB) so a request
// costs a few ms of CPU under simcuda while every kernel but the gathers is a GEMM.
// Thread-safety: as sample::Model.
#pragma once

#include <cstdint>
#include <memory>

#include "sample/model.h"

namespace sample_bert {

inline constexpr unsigned kVocab = 524288, kHidden = 128, kHeads = 4, kHeadDim = 32;
inline constexpr unsigned kFfn = 512, kLayers = 4, kMaxTokens = 128;

// Weight tensor ids: embeddings, then 16 ids per layer (see bert_model.cc).
enum Tensor : uint32_t { kTok = 0, kPos = 1, kEmbLnG = 2, kEmbLnB = 3, kFirstLayer = 16 };
enum LayerTensor : uint32_t {
  kWqkv, kBqkv, kWo, kBo, kLn1G, kLn1B, kW1, kB1, kW2, kB2, kLn2G, kLn2B, kLayerTensors
};
inline constexpr uint32_t LayerTensorId(unsigned layer, uint32_t t) {
  return kFirstLayer + 16 * layer + t;
}

std::unique_ptr<sample::Model> MakeBertModel();

}  // namespace sample_bert
