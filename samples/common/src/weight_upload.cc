// Weight generation and upload through page-locked staging (see weight_upload.h).
#include "sample/weight_upload.h"

#include <algorithm>

#include "sample/cuda_check.h"

namespace sample {
namespace {
constexpr size_t kChunkBytes = size_t{8} << 20;
}  // namespace

WeightUploader::~WeightUploader() {
  if (initialised_) (void)cuStreamSynchronize(stream_.get());
}

std::string WeightUploader::Init() {
  CallChecker cu;
  cu.Ok(cuStreamCreate(stream_.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate(weights)");
  for (int i = 0; i < 2 && cu.ok(); ++i) {
    cu.Ok(staging_[i].Allocate(kChunkBytes), "cuMemAllocHost(staging)");
    cu.Ok(cuEventCreate(done_[i].out(), CU_EVENT_DISABLE_TIMING), "cuEventCreate(staging)");
  }
  initialised_ = cu.ok();
  return cu.error();
}

std::string WeightUploader::Upload(const WeightSpec& spec, DeviceBuffer* out) {
  if (!initialised_) {
    if (std::string e = Init(); !e.empty()) return e;
  }
  CallChecker cu;
  if (!cu.Ok(out->Allocate(spec.count * sizeof(float)), "cuMemAlloc(weights)")) return cu.error();
  const uint64_t base = WeightBase(seed_, spec.id);
  const uint64_t per_chunk = kChunkBytes / sizeof(float);
  for (uint64_t first = 0; first < spec.count; first += per_chunk) {
    const uint64_t n = std::min(per_chunk, spec.count - first);
    const int k = next_;
    next_ ^= 1;
    if (pending_[k] && !cu.Ok(cuEventSynchronize(done_[k].get()), "cuEventSynchronize(staging)")) {
      return cu.error();
    }
    float* host = staging_[k].as<float>();
    for (uint64_t i = 0; i < n; ++i) host[i] = WeightAt(base, first + i, spec.offset, spec.scale);
    if (!cu.Ok(cuMemcpyHtoDAsync(out->f32(first), host, n * sizeof(float), stream_.get()),
               "cuMemcpyHtoDAsync(weights)") ||
        !cu.Ok(cuEventRecord(done_[k].get(), stream_.get()), "cuEventRecord(staging)")) {
      return cu.error();
    }
    pending_[k] = true;
  }
  bytes_ += spec.count * sizeof(float);
  return {};
}

std::string WeightUploader::Finish() {
  if (!initialised_) return {};
  CallChecker cu;
  cu.Ok(cuStreamSynchronize(stream_.get()), "cuStreamSynchronize(weights)");
  pending_[0] = pending_[1] = false;
  return cu.error();
}

}  // namespace sample
