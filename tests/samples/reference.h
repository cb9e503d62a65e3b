// Host references of the three sample models, computed independently of the GPU kernels
// (straightforward loops in double precision) from the samples' documented weight formula
// (sample/weights.h) and dimensions, to check the servers' answers.
#pragma once

#include <cstdint>
#include <vector>

namespace sample_test {

// sample-cnn, batch 1: 1000 logits of a 3x32x32 image.
std::vector<double> CnnLogits(uint64_t seed, const std::vector<float>& image);

// sample-bert: the first token's final hidden state (128 values).
std::vector<double> BertEmbedding(uint64_t seed, const std::vector<int32_t>& ids);

// sample-llm: greedy decoding of max_tokens tokens. `margin` receives, per generated token,
// the gap between the best and second-best logit (a tiny gap means float rounding on the
// device may legitimately pick the other token).
std::vector<int32_t> LlmGenerate(uint64_t seed, const std::vector<int32_t>& prompt,
                                 int max_tokens, std::vector<double>* margin);

}  // namespace sample_test
