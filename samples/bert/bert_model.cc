// The BERT-like encoder's weights and forward pass (see bert_model.h).
#include "bert_model.h"

#include "sample/cuda_check.h"
#include "sample/device_buffer.h"
#include "sample/kernels.h"
#include "sample/weight_upload.h"

namespace sample_bert {
namespace {

using sample::Act;
using sample::DataType;
using sample::DeviceBuffer;
using sample::WeightSpec;

constexpr unsigned kQkv = 3 * kHidden;

WeightSpec LayerSpec(unsigned layer, uint32_t t) {
  const uint32_t id = LayerTensorId(layer, t);
  switch (t) {
    case kWqkv: return {id, kHidden * kQkv, 0.0f, 0.153f};
    case kWo: return {id, kHidden * kHidden, 0.0f, 0.153f};
    case kW1: return {id, kHidden * kFfn, 0.0f, 0.153f};
    case kW2: return {id, kFfn * kHidden, 0.0f, 0.0765f};
    case kBqkv: return {id, kQkv, 0.0f, 0.02f};
    case kB1: return {id, kFfn, 0.0f, 0.02f};
    case kLn1G: case kLn2G: return {id, kHidden, 1.0f, 0.1f};
    default: return {id, kHidden, 0.0f, 0.02f};  // kBo, kB2, kLn1B, kLn2B
  }
}

class BertModel final : public sample::Model {
 public:
  BertModel() {
    sig_.platform = "sample-bert";
    sig_.inputs = {{"input_ids", DataType::kInt32, {1, -1}}};
    sig_.outputs = {{"embedding", DataType::kFp32, {1, kHidden}}};
  }
  const sample::ModelSignature& signature() const override { return sig_; }
  uint64_t weight_bytes() const override { return weight_bytes_; }

  std::string Load(uint64_t seed) override {
    if (std::string e = kernels_.Load(); !e.empty()) return e;
    sample::WeightUploader up(seed);
    const WeightSpec emb[] = {{kTok, uint64_t{kVocab} * kHidden, 0.0f, 1.0f},
                              {kPos, kMaxTokens * kHidden, 0.0f, 0.1f},
                              {kEmbLnG, kHidden, 1.0f, 0.1f},
                              {kEmbLnB, kHidden, 0.0f, 0.02f}};
    for (int i = 0; i < 4; ++i) {
      if (std::string e = up.Upload(emb[i], &emb_[i]); !e.empty()) return e;
    }
    for (unsigned l = 0; l < kLayers; ++l) {
      for (uint32_t t = 0; t < kLayerTensors; ++t) {
        if (std::string e = up.Upload(LayerSpec(l, t), &layer_[l][t]); !e.empty()) return e;
      }
    }
    if (std::string e = up.Finish(); !e.empty()) return e;
    weight_bytes_ = up.bytes();
    sample::CallChecker cu;
    const size_t rows = kMaxTokens;
    cu.Ok(cuStreamCreate(stream_.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    cu.Ok(ids_.Allocate(rows * 4), "cuMemAlloc(ids)");
    cu.Ok(e_.Allocate(rows * kHidden * 4), "cuMemAlloc(e)");
    cu.Ok(x_.Allocate(rows * kHidden * 4), "cuMemAlloc(x)");
    cu.Ok(y_.Allocate(rows * kHidden * 4), "cuMemAlloc(y)");
    cu.Ok(qkv_.Allocate(rows * kQkv * 4), "cuMemAlloc(qkv)");
    cu.Ok(ctx_.Allocate(rows * kHidden * 4), "cuMemAlloc(ctx)");
    cu.Ok(scores_.Allocate(size_t{kHeads} * rows * rows * 4), "cuMemAlloc(scores)");
    cu.Ok(u_.Allocate(rows * kFfn * 4), "cuMemAlloc(ffn)");
    cu.Ok(host_ids_.Allocate(rows * 4), "cuMemAllocHost(ids)");
    cu.Ok(host_out_.Allocate(kHidden * 4), "cuMemAllocHost(out)");
    return cu.error();
  }

  sample::InferResult Infer(const std::vector<sample::HostTensor>& inputs) override {
    const std::vector<int32_t>& ids = inputs[0].i32;
    const unsigned s_len = static_cast<unsigned>(ids.size());
    if (s_len < 1 || s_len > kMaxTokens) {
      return sample::InferResult::BadRequest("input 'input_ids': 1.." + std::to_string(kMaxTokens) +
                                             " tokens");
    }
    for (int32_t id : ids) {
      if (id < 0 || static_cast<unsigned>(id) >= kVocab) {
        return sample::InferResult::BadRequest("input 'input_ids': token " + std::to_string(id) +
                                               " is outside [0, " + std::to_string(kVocab) + ")");
      }
    }
    sample::CallChecker cu;
    CUstream s = stream_.get();
    std::copy(ids.begin(), ids.end(), host_ids_.as<int32_t>());
    cu.Ok(cuMemcpyHtoDAsync(ids_.get(), host_ids_.get(), s_len * 4, s), "cuMemcpyHtoDAsync(ids)");
    sample::Launcher k(kernels_, s);
    k.Embedding(ids_.get(), emb_[kTok].get(), e_.get(), s_len, kHidden, kVocab);
    k.VectorAdd(e_.get(), emb_[kPos].get(), e_.get(), uint64_t{s_len} * kHidden);
    k.LayerNormRows(e_.get(), x_.get(), emb_[kEmbLnG].get(), emb_[kEmbLnB].get(), s_len, kHidden);
    for (unsigned l = 0; l < kLayers; ++l) Layer(k, layer_[l], s_len);
    if (!k.ok()) return sample::InferResult::Internal(k.error());
    cu.Ok(cuMemcpyDtoHAsync(host_out_.get(), x_.get(), kHidden * 4, s), "cuMemcpyDtoHAsync(out)");
    cu.Ok(cuStreamSynchronize(s), "cuStreamSynchronize");
    if (!cu.ok()) return sample::InferResult::Internal(cu.error());
    const float* out = host_out_.as<float>();
    sample::InferResult r;
    r.outputs.push_back({"embedding", DataType::kFp32, {1, kHidden}, {},
                         std::vector<float>(out, out + kHidden)});
    return r;
  }

 private:
  void Layer(sample::Launcher& k, const DeviceBuffer* w, unsigned n) {
    k.Sgemm(n, kQkv, kHidden, 1.0f, x_.get(), w[kWqkv].get(), 0.0f, qkv_.get());
    k.BiasAct(qkv_.get(), w[kBqkv].get(), n, kQkv, Act::kNone);
    sample::Launcher::Attention at;
    at.q = qkv_.get(), at.k = qkv_.f32(kHidden), at.v = qkv_.f32(2 * kHidden), at.ld = kQkv;
    at.queries = n, at.keys = n, at.heads = kHeads, at.head_dim = kHeadDim;
    at.scores = scores_.get(), at.out = ctx_.get();
    k.MultiHeadAttention(at);
    k.Sgemm(n, kHidden, kHidden, 1.0f, ctx_.get(), w[kWo].get(), 1.0f, x_.get());
    k.BiasAct(x_.get(), w[kBo].get(), n, kHidden, Act::kNone);
    k.LayerNormRows(x_.get(), y_.get(), w[kLn1G].get(), w[kLn1B].get(), n, kHidden);
    k.Sgemm(n, kFfn, kHidden, 1.0f, y_.get(), w[kW1].get(), 0.0f, u_.get());
    k.BiasAct(u_.get(), w[kB1].get(), n, kFfn, Act::kGelu);
    k.Sgemm(n, kHidden, kFfn, 1.0f, u_.get(), w[kW2].get(), 1.0f, y_.get());
    k.BiasAct(y_.get(), w[kB2].get(), n, kHidden, Act::kNone);
    k.LayerNormRows(y_.get(), x_.get(), w[kLn2G].get(), w[kLn2B].get(), n, kHidden);
  }

  sample::ModelSignature sig_;
  sample::KernelSet kernels_;
  sample::Stream stream_;
  DeviceBuffer emb_[4];
  DeviceBuffer layer_[kLayers][kLayerTensors];
  DeviceBuffer ids_, e_, x_, y_, qkv_, ctx_, scores_, u_;
  sample::PinnedBuffer host_ids_, host_out_;
  uint64_t weight_bytes_ = 0;
};

}  // namespace

std::unique_ptr<sample::Model> MakeBertModel() { return std::make_unique<BertModel>(); }

}  // namespace sample_bert
