// Request bodies for the sample servers (docs/samples.md) and the check of their answers.
//
// Inputs are deterministic in (input seed, target, variant, token counts), so identical
// requests recur; every answer is checked two ways:
//  - its "digest" output must equal RequestDigest over what was sent (the server processed
//    this request's inputs, for this model name and weight seed: no mix-ups, no truncation);
//  - its other outputs must equal those of every earlier answer to an identical request
//    (same digest): a server whose weights or activations were corrupted — say by a bad swap —
//    answers differently and is caught.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "gshare/loadgen/plan.h"
#include "gshare/workload/result.h"

namespace gshare::loadgen {

enum class ModelKind { kCnn, kBert, kLlm };

// From the "platform" of the model metadata: sample-cnn, sample-bert, sample-llm.
workload::Result<ModelKind> KindOfPlatform(const std::string& platform);

struct RequestShape {
  int bert_tokens = 16;    // tokens per sample-bert request
  int llm_prompt = 8;      // sample-llm prompt length without a trace's token counts
  int llm_tokens = 8;      // sample-llm max_tokens without a trace's token counts
  double token_scale = 32; // trace token counts are divided by this (the samples are small)
  int llm_max_prompt = 64, llm_max_tokens = 32;  // caps after scaling
};

struct Request {
  std::string body;    // JSON
  std::string digest;  // the digest the server must return
};

// The request `a` stands for, to `model` (served with weight seed `server_seed`).
Request BuildRequest(ModelKind kind, const std::string& model, uint64_t server_seed,
                     uint64_t input_seed, uint32_t target, const Arrival& a,
                     const RequestShape& shape);

// The samples' digest formula: FNV-1a 64 over the model name, a NUL, the seed (8 bytes LE),
// then per input (in the model's signature order) its name, a NUL and each element as 4 bytes
// LE (int32 value or float32 bits); 16 lower-case hex digits.
class DigestBuilder {
 public:
  DigestBuilder(const std::string& model, uint64_t seed);
  void Input(const std::string& name);
  void Word(uint32_t w);
  std::string Hex() const;

 private:
  void Bytes(const void* p, size_t n);
  uint64_t h_ = 0xCBF29CE484222325ull;
};

}  // namespace gshare::loadgen
