// Start-up weight loading: allocates device memory for each weight tensor and fills it with the
// deterministic values of weights.h, generated on the host into two page-locked staging buffers
// and copied with cuMemcpyHtoDAsync on a stream (generation of one chunk overlaps the copy of
// the previous one). Not thread-safe; call with the model's context current.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "sample/device_buffer.h"
#include "sample/weights.h"

namespace sample {

class WeightUploader {
 public:
  // REQUIRES: a current context. `seed` is the model seed.
  explicit WeightUploader(uint64_t seed) : seed_(seed) {}
  // Waits for queued copies (also after a failed Upload), so that neither the staging buffers
  // nor the destination buffers are released while a copy still reads or writes them.
  ~WeightUploader();
  WeightUploader(const WeightUploader&) = delete;
  WeightUploader& operator=(const WeightUploader&) = delete;

  // Allocates `out` (spec.count floats) and queues its contents. Returns "" or an error.
  std::string Upload(const WeightSpec& spec, DeviceBuffer* out);
  // Waits for every queued copy. Returns "" or an error.
  std::string Finish();
  // Bytes of weights uploaded so far.
  uint64_t bytes() const { return bytes_; }

 private:
  std::string Init();

  uint64_t seed_;
  bool initialised_ = false;
  Stream stream_;
  PinnedBuffer staging_[2];
  Event done_[2];
  bool pending_[2] = {false, false};
  int next_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace sample
