// A small CNN image classifier: 3x32x32 images -> 1000 class logits and the argmax class.
//   conv3x3 3->16 + ReLU, maxpool 2x2        (32x32 -> 16x16)
//   conv3x3 16->32 + ReLU, maxpool 2x2       (16x16 -> 8x8; 2048 features)
//   fc 2048->5120 + bias + ReLU              (40 MiB)
//   fc 5120->1000 + bias                     (19.5 MiB) -> "logits"; argmax -> "class"
// 59.6 MiB of deterministic weights (ids and scales in cnn_model.cc, docs/samples.md).
// Batch 1..8 per request. Thread-safety: as sample::Model.
#pragma once

#include <memory>

#include "sample/model.h"

namespace sample_cnn {

inline constexpr unsigned kChannels = 3, kSize = 32, kC1 = 16, kC2 = 32;
inline constexpr unsigned kFeatures = kC2 * (kSize / 4) * (kSize / 4);  // 2048
inline constexpr unsigned kHidden = 5120, kClasses = 1000, kMaxBatch = 8;

std::unique_ptr<sample::Model> MakeCnnModel();

}  // namespace sample_cnn
