// The LLM-like decoder's weights and decoding loop (see llm_model.h).
#include "llm_model.h"

#include "sample/cuda_check.h"
#include "sample/device_buffer.h"
#include "sample/kernels.h"
#include "sample/weight_upload.h"

namespace sample_llm {
namespace {

using sample::Act;
using sample::DataType;
using sample::DeviceBuffer;
using sample::WeightSpec;

constexpr unsigned kQkv = 3 * kDim;

WeightSpec LayerSpec(unsigned layer, uint32_t t) {
  const uint32_t id = LayerTensorId(layer, t);
  switch (t) {
    case kWqkv: return {id, kDim * kQkv, 0.0f, 0.153f};
    case kWo: return {id, kDim * kDim, 0.0f, 0.1f};
    case kW1: return {id, uint64_t{kExperts} * kDim * kFfn, 0.0f, 0.153f};
    case kB1: return {id, uint64_t{kExperts} * kFfn, 0.0f, 0.02f};
    case kW2: return {id, uint64_t{kExperts} * kFfn * kDim, 0.0f, 0.05f};
    case kLn1G: case kLn2G: return {id, kDim, 1.0f, 0.1f};
    default: return {id, kDim, 0.0f, 0.02f};  // kLn1B, kLn2B
  }
}

class LlmModel final : public sample::Model {
 public:
  LlmModel() {
    sig_.platform = "sample-llm";
    sig_.inputs = {{"input_ids", DataType::kInt32, {1, -1}}, {"max_tokens", DataType::kInt32, {1}}};
    sig_.optional_inputs = {"max_tokens"};
    sig_.outputs = {{"output_ids", DataType::kInt32, {1, -1}}};
  }
  const sample::ModelSignature& signature() const override { return sig_; }
  uint64_t weight_bytes() const override { return weight_bytes_; }

  std::string Load(uint64_t seed) override {
    seed_ = seed;
    if (std::string e = kernels_.Load(); !e.empty()) return e;
    sample::WeightUploader up(seed);
    const WeightSpec top[] = {{kTok, uint64_t{kVocab} * kDim, 0.0f, 1.0f},
                              {kPos, uint64_t{kMaxPositions} * kDim, 0.0f, 0.3f},
                              {kLnFG, kDim, 1.0f, 0.1f},
                              {kLnFB, kDim, 0.0f, 0.02f},
                              {kHead, uint64_t{kDim} * kVocab, 0.0f, 0.153f}};
    for (int i = 0; i < 5; ++i) {
      if (std::string e = up.Upload(top[i], &top_[i]); !e.empty()) return e;
    }
    for (unsigned l = 0; l < kLayers; ++l) {
      for (uint32_t t = 0; t < kLayerTensors; ++t) {
        if (std::string e = up.Upload(LayerSpec(l, t), &layer_[l][t]); !e.empty()) return e;
      }
    }
    if (std::string e = up.Finish(); !e.empty()) return e;
    weight_bytes_ = up.bytes();
    sample::CallChecker cu;
    cu.Ok(cuStreamCreate(stream_.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    cu.Ok(ids_.Allocate(kMaxPositions * 4), "cuMemAlloc(ids)");
    cu.Ok(x_.Allocate(kDim * 4), "cuMemAlloc(x)");
    cu.Ok(h_.Allocate(kDim * 4), "cuMemAlloc(h)");
    cu.Ok(ctx_.Allocate(kDim * 4), "cuMemAlloc(ctx)");
    cu.Ok(u_.Allocate(kFfn * 4), "cuMemAlloc(u)");
    cu.Ok(scores_.Allocate(kHeads * kMaxPositions * 4), "cuMemAlloc(scores)");
    cu.Ok(logits_.Allocate(kVocab * 4), "cuMemAlloc(logits)");
    for (unsigned l = 0; l < kLayers; ++l) {
      cu.Ok(cache_[l].Allocate(size_t{kMaxPositions} * kQkv * 4), "cuMemAlloc(kv cache)");
    }
    cu.Ok(host_ids_.Allocate(kMaxPositions * 4), "cuMemAllocHost(ids)");
    return cu.error();
  }

  sample::InferResult Infer(const std::vector<sample::HostTensor>& inputs) override {
    const std::vector<int32_t>& prompt = inputs[0].i32;
    const int max_tokens = inputs[1].name.empty() ? kDefaultMaxTokens : inputs[1].i32[0];
    const unsigned p_len = static_cast<unsigned>(prompt.size());
    if (p_len < 1 || p_len >= kMaxPositions) {
      return sample::InferResult::BadRequest("input 'input_ids': 1.." +
                                             std::to_string(kMaxPositions - 1) + " tokens");
    }
    if (max_tokens < 1 || p_len + static_cast<unsigned>(max_tokens) > kMaxPositions) {
      return sample::InferResult::BadRequest(
          "input 'max_tokens' must be 1.." + std::to_string(kMaxPositions - p_len) +
          " (prompt + generated tokens <= " + std::to_string(kMaxPositions) + ")");
    }
    for (int32_t id : prompt) {
      if (id < 0 || static_cast<unsigned>(id) >= kVocab) {
        return sample::InferResult::BadRequest("input 'input_ids': token " + std::to_string(id) +
                                               " is outside [0, " + std::to_string(kVocab) + ")");
      }
    }
    const unsigned n_out = static_cast<unsigned>(max_tokens);
    sample::CallChecker cu;
    CUstream s = stream_.get();
    int32_t* host = host_ids_.as<int32_t>();
    std::copy(prompt.begin(), prompt.end(), host);
    cu.Ok(cuMemcpyHtoDAsync(ids_.get(), host, p_len * 4, s), "cuMemcpyHtoDAsync(ids)");
    sample::Launcher k(kernels_, s);
    for (unsigned p = 0; p + 1 < p_len + n_out && k.ok(); ++p) Position(k, p, p + 1 >= p_len);
    if (!k.ok()) return sample::InferResult::Internal(k.error());
    cu.Ok(cuMemcpyDtoHAsync(host + p_len, ids_.get() + p_len * 4, n_out * 4, s),
          "cuMemcpyDtoHAsync(ids)");
    cu.Ok(cuStreamSynchronize(s), "cuStreamSynchronize");
    if (!cu.ok()) return sample::InferResult::Internal(cu.error());
    sample::InferResult r;
    r.outputs.push_back({"output_ids", DataType::kInt32, {1, n_out},
                         std::vector<int32_t>(host + p_len, host + p_len + n_out), {}});
    return r;
  }

 private:
  // Runs position p; when `predict`, writes the next token to ids[p + 1].
  void Position(sample::Launcher& k, unsigned p, bool predict) {
    k.Embedding(ids_.get() + p * 4, top_[kTok].get(), x_.get(), 1, kDim, kVocab);
    k.VectorAdd(x_.get(), top_[kPos].f32(size_t{p} * kDim), x_.get(), kDim);
    for (unsigned l = 0; l < kLayers; ++l) {
      const DeviceBuffer* w = layer_[l];
      const DeviceBuffer& cache = cache_[l];  // row q: [q | k | v] of position q
      k.LayerNormRows(x_.get(), h_.get(), w[kLn1G].get(), w[kLn1B].get(), 1, kDim);
      k.Sgemm(1, kQkv, kDim, 1.0f, h_.get(), w[kWqkv].get(), 0.0f, cache.f32(size_t{p} * kQkv));
      sample::Launcher::Attention at;  // the new query against positions 0..p
      at.q = cache.f32(size_t{p} * kQkv), at.k = cache.f32(kDim), at.v = cache.f32(2 * kDim);
      at.ld = kQkv, at.queries = 1, at.keys = p + 1, at.heads = kHeads, at.head_dim = kHeadDim;
      at.scores = scores_.get(), at.out = ctx_.get();
      k.MultiHeadAttention(at);
      k.Sgemm(1, kDim, kDim, 1.0f, ctx_.get(), w[kWo].get(), 1.0f, x_.get());
      k.LayerNormRows(x_.get(), h_.get(), w[kLn2G].get(), w[kLn2B].get(), 1, kDim);
      const size_t e = ExpertFor(seed_, l, p);
      k.Sgemm(1, kFfn, kDim, 1.0f, h_.get(), w[kW1].f32(e * kDim * kFfn), 0.0f, u_.get());
      k.BiasAct(u_.get(), w[kB1].f32(e * kFfn), 1, kFfn, Act::kGelu);
      k.Sgemm(1, kDim, kFfn, 1.0f, u_.get(), w[kW2].f32(e * kFfn * kDim), 1.0f, x_.get());
    }
    if (!predict) return;
    k.LayerNormRows(x_.get(), h_.get(), top_[kLnFG].get(), top_[kLnFB].get(), 1, kDim);
    k.Sgemm(1, kVocab, kDim, 1.0f, h_.get(), top_[kHead].get(), 0.0f, logits_.get());
    k.ArgmaxRows(logits_.get(), ids_.get() + (p + 1) * 4, 1, kVocab);
  }

  sample::ModelSignature sig_;
  sample::KernelSet kernels_;
  sample::Stream stream_;
  uint64_t seed_ = 0;
  DeviceBuffer top_[5];
  DeviceBuffer layer_[kLayers][kLayerTensors];
  DeviceBuffer cache_[kLayers];
  DeviceBuffer ids_, x_, h_, ctx_, u_, scores_, logits_;
  sample::PinnedBuffer host_ids_;
  uint64_t weight_bytes_ = 0;
};

}  // namespace

std::unique_ptr<sample::Model> MakeLlmModel() { return std::make_unique<LlmModel>(); }

}  // namespace sample_llm
