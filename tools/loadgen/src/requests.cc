// Request bodies for the samples and the digest formula (see requests.h).
#include "gshare/loadgen/requests.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

namespace gshare::loadgen {
namespace {

using nlohmann::json;

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr uint32_t kTokenRange = 4096;  // valid for both sample-bert and sample-llm

json IntTensor(const std::string& name, const std::vector<int64_t>& shape,
               const std::vector<int32_t>& data) {
  return {{"name", name}, {"datatype", "INT32"}, {"shape", shape}, {"data", data}};
}

std::vector<int32_t> Tokens(uint64_t base, int n) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>(Mix(base + static_cast<uint64_t>(i)) % kTokenRange);
  return ids;
}

int Scaled(int32_t tokens, double scale, int fallback, int cap) {
  if (tokens < 0) return fallback;
  const int v = static_cast<int>(std::lround(static_cast<double>(tokens) / scale));
  return std::clamp(v, 1, cap);
}

}  // namespace

workload::Result<ModelKind> KindOfPlatform(const std::string& platform) {
  if (platform == "sample-cnn") return ModelKind::kCnn;
  if (platform == "sample-bert") return ModelKind::kBert;
  if (platform == "sample-llm") return ModelKind::kLlm;
  return workload::Fail("unsupported model platform '" + platform +
                        "' (gshare-loadgen drives sample-cnn, sample-bert and sample-llm)");
}

DigestBuilder::DigestBuilder(const std::string& model, uint64_t seed) {
  Bytes(model.data(), model.size());
  const unsigned char nul = 0;
  Bytes(&nul, 1);
  for (int i = 0; i < 8; ++i) {
    const unsigned char b = static_cast<unsigned char>(seed >> (8 * i));
    Bytes(&b, 1);
  }
}

void DigestBuilder::Bytes(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    h_ ^= b[i];
    h_ *= 0x100000001B3ull;
  }
}

void DigestBuilder::Input(const std::string& name) {
  Bytes(name.data(), name.size());
  const unsigned char nul = 0;
  Bytes(&nul, 1);
}

void DigestBuilder::Word(uint32_t w) {
  const unsigned char b[4] = {static_cast<unsigned char>(w), static_cast<unsigned char>(w >> 8),
                              static_cast<unsigned char>(w >> 16), static_cast<unsigned char>(w >> 24)};
  Bytes(b, 4);
}

std::string DigestBuilder::Hex() const {
  std::string s(16, '0');
  for (int i = 0; i < 16; ++i) s[static_cast<size_t>(i)] = "0123456789abcdef"[(h_ >> (60 - 4 * i)) & 0xF];
  return s;
}

Request BuildRequest(ModelKind kind, const std::string& model, uint64_t server_seed,
                     uint64_t input_seed, uint32_t target, const Arrival& a,
                     const RequestShape& shape) {
  const uint64_t base = Mix(input_seed * 0x9E3779B97F4A7C15ull + (uint64_t{target} << 32) + a.variant);
  DigestBuilder d(model, server_seed);
  json inputs = json::array();
  if (kind == ModelKind::kCnn) {
    constexpr int kElements = 3 * 32 * 32;
    std::vector<float> image(kElements);
    d.Input("image");
    for (int i = 0; i < kElements; ++i) {
      const float v = static_cast<float>(Mix(base + static_cast<uint64_t>(i)) >> 40) * (1.0f / 16777216.0f);
      image[static_cast<size_t>(i)] = v;
      uint32_t bits = 0;
      std::memcpy(&bits, &v, 4);
      d.Word(bits);
    }
    inputs.push_back({{"name", "image"}, {"datatype", "FP32"}, {"shape", {1, 3, 32, 32}}, {"data", image}});
  } else {
    const bool llm = kind == ModelKind::kLlm;
    const int n = llm ? Scaled(a.input_tokens, shape.token_scale, shape.llm_prompt, shape.llm_max_prompt)
                      : shape.bert_tokens;
    const std::vector<int32_t> ids = Tokens(base, n);
    d.Input("input_ids");
    for (int32_t id : ids) d.Word(static_cast<uint32_t>(id));
    inputs.push_back(IntTensor("input_ids", {1, n}, ids));
    if (llm) {
      const int32_t m = Scaled(a.output_tokens, shape.token_scale, shape.llm_tokens, shape.llm_max_tokens);
      d.Input("max_tokens");
      d.Word(static_cast<uint32_t>(m));
      inputs.push_back(IntTensor("max_tokens", {1}, {m}));
    }
  }
  return {json{{"inputs", std::move(inputs)}}.dump(), d.Hex()};
}

}  // namespace gshare::loadgen
