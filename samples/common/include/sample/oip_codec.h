// JSON encoding of the Open Inference Protocol (KServe v2 / Triton HTTP) subset the samples
// serve: model metadata, inference requests and responses, and the request digest.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sample/model.h"

namespace sample {

// GET /v2/models/{name}: {"name","versions","platform","inputs":[...],"outputs":[...],
// "parameters":{"seed","weight_bytes"}}.
nlohmann::json MetadataJson(const std::string& name, const ModelSignature& sig, uint64_t seed,
                            uint64_t weight_bytes);

// Parses an inference request body against `sig`: inputs in signature order (a missing
// optional input has an empty name). On failure returns false with a message for the client.
struct ParsedRequest {
  std::string id;                  // the request's "id", echoed back
  std::vector<HostTensor> inputs;  // signature order
};
bool ParseInferRequest(const std::string& body, const ModelSignature& sig, ParsedRequest* out,
                       std::string* error);

// The request digest: FNV-1a 64 over the model name, a NUL, the seed (8 bytes little-endian),
// then for every present input in signature order its name, a NUL and each element as 4 bytes
// little-endian (int32 value or float32 bit pattern). Lower-case hex, 16 digits.
std::string RequestDigest(const std::string& model, uint64_t seed,
                          const std::vector<HostTensor>& inputs);

// The response: {"model_name","model_version":"1","id","outputs":[...]} with a final BYTES
// output "digest" holding RequestDigest.
std::string InferResponseJson(const std::string& model, const std::string& id,
                              const std::vector<HostTensor>& outputs, const std::string& digest);

}  // namespace sample
