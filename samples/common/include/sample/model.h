// The interface between a sample model and the Open Inference Protocol server: the model's
// signature (input and output tensors), its start-up (weights to the GPU) and one inference.
//
// Thread-safety: the server calls Load once, then Infer from one thread at a time (it holds a
// lock), always with the model's context current on the calling thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sample {

enum class DataType { kInt32, kFp32 };
const char* DataTypeName(DataType t);  // "INT32", "FP32"

// A declared tensor; -1 in `shape` means "any size".
struct TensorSpec {
  std::string name;
  DataType datatype = DataType::kFp32;
  std::vector<int64_t> shape;
};

// A tensor's values on the host (exactly one of the vectors is used, by datatype).
struct HostTensor {
  std::string name;
  DataType datatype = DataType::kFp32;
  std::vector<int64_t> shape;
  std::vector<int32_t> i32;
  std::vector<float> f32;

  uint64_t elements() const;
};

struct ModelSignature {
  std::string platform;            // e.g. "sample-cnn"
  std::vector<TensorSpec> inputs;  // required inputs unless `optional_inputs` lists them
  std::vector<std::string> optional_inputs;
  std::vector<TensorSpec> outputs;
};

// What an inference returns: outputs, or an error that is the client's fault (bad_request:
// HTTP 400) or the server's (HTTP 500).
struct InferResult {
  std::vector<HostTensor> outputs;
  std::string error;
  bool bad_request = false;

  static InferResult BadRequest(std::string message) { return {{}, std::move(message), true}; }
  static InferResult Internal(std::string message) { return {{}, std::move(message), false}; }
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelSignature& signature() const = 0;
  // Allocates and uploads the weights, loads kernels. REQUIRES: context current. "" or error.
  virtual std::string Load(uint64_t seed) = 0;
  // Bytes of weights on the device after Load.
  virtual uint64_t weight_bytes() const = 0;
  // One request. `inputs` are in signature order, datatype and rank already checked; a missing
  // optional input has an empty name. REQUIRES: Load succeeded; context current.
  virtual InferResult Infer(const std::vector<HostTensor>& inputs) = 0;
};

}  // namespace sample
