// The CNN classifier's weights and forward pass (see cnn_model.h).
#include "cnn_model.h"

#include <cmath>

#include "sample/cuda_check.h"
#include "sample/device_buffer.h"
#include "sample/kernels.h"
#include "sample/weight_upload.h"

namespace sample_cnn {
namespace {

using sample::DataType;
using sample::DeviceBuffer;
using sample::WeightSpec;

// Weight tensors: id, elements, offset, scale (uniform in offset +- scale; scale ~ sqrt(3/fan_in)).
enum Tensor : uint32_t { kW1, kB1, kW2, kB2, kFc1, kFcB1, kFc2, kFcB2, kTensors };
WeightSpec Spec(uint32_t t) {
  switch (t) {
    case kW1: return {kW1, kC1 * kChannels * 9, 0.0f, 0.33f};
    case kB1: return {kB1, kC1, 0.0f, 0.05f};
    case kW2: return {kW2, kC2 * kC1 * 9, 0.0f, 0.14f};
    case kB2: return {kB2, kC2, 0.0f, 0.05f};
    case kFc1: return {kFc1, uint64_t{kFeatures} * kHidden, 0.0f, 0.038f};
    case kFcB1: return {kFcB1, kHidden, 0.0f, 0.05f};
    case kFc2: return {kFc2, uint64_t{kHidden} * kClasses, 0.0f, 0.024f};
    default: return {kFcB2, kClasses, 0.0f, 0.05f};
  }
}

class CnnModel final : public sample::Model {
 public:
  CnnModel() {
    sig_.platform = "sample-cnn";
    sig_.inputs = {{"image", DataType::kFp32, {-1, kChannels, kSize, kSize}}};
    sig_.outputs = {{"logits", DataType::kFp32, {-1, kClasses}}, {"class", DataType::kInt32, {-1}}};
  }
  const sample::ModelSignature& signature() const override { return sig_; }
  uint64_t weight_bytes() const override { return weight_bytes_; }

  std::string Load(uint64_t seed) override {
    if (std::string e = kernels_.Load(); !e.empty()) return e;
    sample::WeightUploader up(seed);
    for (uint32_t t = 0; t < kTensors; ++t) {
      if (std::string e = up.Upload(Spec(t), &w_[t]); !e.empty()) return e;
    }
    if (std::string e = up.Finish(); !e.empty()) return e;
    weight_bytes_ = up.bytes();
    sample::CallChecker cu;
    const size_t b = kMaxBatch;
    cu.Ok(cuStreamCreate(stream_.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    cu.Ok(in_.Allocate(b * kChannels * kSize * kSize * 4), "cuMemAlloc(image)");
    cu.Ok(a1_.Allocate(b * kC1 * kSize * kSize * 4), "cuMemAlloc(a1)");
    cu.Ok(p1_.Allocate(b * kC1 * kSize * kSize), "cuMemAlloc(p1)");
    cu.Ok(a2_.Allocate(b * kC2 * kSize * kSize), "cuMemAlloc(a2)");
    cu.Ok(p2_.Allocate(b * kFeatures * 4), "cuMemAlloc(p2)");
    cu.Ok(h_.Allocate(b * kHidden * 4), "cuMemAlloc(hidden)");
    cu.Ok(logits_.Allocate(b * kClasses * 4), "cuMemAlloc(logits)");
    cu.Ok(cls_.Allocate(b * 4), "cuMemAlloc(class)");
    cu.Ok(host_in_.Allocate(b * kChannels * kSize * kSize * 4), "cuMemAllocHost(image)");
    cu.Ok(host_out_.Allocate(b * (kClasses + 1) * 4), "cuMemAllocHost(out)");
    return cu.error();
  }

  sample::InferResult Infer(const std::vector<sample::HostTensor>& inputs) override {
    const sample::HostTensor& image = inputs[0];
    const unsigned batch = static_cast<unsigned>(image.shape[0]);
    if (batch < 1 || batch > kMaxBatch) {
      return sample::InferResult::BadRequest("input 'image': batch must be 1.." +
                                             std::to_string(kMaxBatch));
    }
    sample::CallChecker cu;
    CUstream s = stream_.get();
    std::copy(image.f32.begin(), image.f32.end(), host_in_.as<float>());
    cu.Ok(cuMemcpyHtoDAsync(in_.get(), host_in_.get(), image.f32.size() * 4, s),
          "cuMemcpyHtoDAsync(image)");
    sample::Launcher k(kernels_, s);
    k.Conv3x3(in_.get(), w_[kW1].get(), w_[kB1].get(), a1_.get(), batch, kChannels, kSize, kSize,
              kC1, true);
    k.MaxPool2x2(a1_.get(), p1_.get(), batch, kC1, kSize, kSize);
    k.Conv3x3(p1_.get(), w_[kW2].get(), w_[kB2].get(), a2_.get(), batch, kC1, kSize / 2,
              kSize / 2, kC2, true);
    k.MaxPool2x2(a2_.get(), p2_.get(), batch, kC2, kSize / 2, kSize / 2);
    k.Sgemm(batch, kHidden, kFeatures, 1.0f, p2_.get(), w_[kFc1].get(), 0.0f, h_.get());
    k.BiasAct(h_.get(), w_[kFcB1].get(), batch, kHidden, sample::Act::kRelu);
    k.Sgemm(batch, kClasses, kHidden, 1.0f, h_.get(), w_[kFc2].get(), 0.0f, logits_.get());
    k.BiasAct(logits_.get(), w_[kFcB2].get(), batch, kClasses, sample::Act::kNone);
    k.ArgmaxRows(logits_.get(), cls_.get(), batch, kClasses);
    if (!k.ok()) return sample::InferResult::Internal(k.error());
    float* out = host_out_.as<float>();
    auto* cls = reinterpret_cast<int32_t*>(out + size_t{batch} * kClasses);
    cu.Ok(cuMemcpyDtoHAsync(out, logits_.get(), size_t{batch} * kClasses * 4, s),
          "cuMemcpyDtoHAsync(logits)");
    cu.Ok(cuMemcpyDtoHAsync(cls, cls_.get(), size_t{batch} * 4, s), "cuMemcpyDtoHAsync(class)");
    cu.Ok(cuStreamSynchronize(s), "cuStreamSynchronize");
    if (!cu.ok()) return sample::InferResult::Internal(cu.error());
    sample::InferResult r;
    r.outputs.push_back({"logits", DataType::kFp32, {batch, kClasses}, {},
                         std::vector<float>(out, out + size_t{batch} * kClasses)});
    r.outputs.push_back({"class", DataType::kInt32, {batch}, std::vector<int32_t>(cls, cls + batch), {}});
    return r;
  }

 private:
  sample::ModelSignature sig_;
  sample::KernelSet kernels_;
  sample::Stream stream_;
  DeviceBuffer w_[kTensors];
  DeviceBuffer in_, a1_, p1_, a2_, p2_, h_, logits_, cls_;
  sample::PinnedBuffer host_in_, host_out_;
  uint64_t weight_bytes_ = 0;
};

}  // namespace

std::unique_ptr<sample::Model> MakeCnnModel() { return std::make_unique<CnnModel>(); }

}  // namespace sample_cnn
