// Open Inference Protocol JSON for the samples (see oip_codec.h). Never throws: the body is
// parsed with exceptions off and every value's type is checked before it is read.
#include "sample/oip_codec.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace sample {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxElements = uint64_t{1} << 24;

json ShapeJson(const std::vector<int64_t>& shape) {
  json s = json::array();
  for (int64_t d : shape) s.push_back(d);
  return s;
}

json TensorSpecJson(const TensorSpec& t) {
  return {{"name", t.name}, {"datatype", DataTypeName(t.datatype)}, {"shape", ShapeJson(t.shape)}};
}

// Appends the leaves of a (possibly nested) JSON array to `out`, in row-major order.
bool Flatten(const json& data, std::vector<const json*>* out) {
  if (!data.is_array()) {
    out->push_back(&data);
    return true;
  }
  for (const json& e : data) {
    if (out->size() > kMaxElements || !Flatten(e, out)) return false;
  }
  return true;
}

bool ParseTensor(const json& in, const TensorSpec& spec, HostTensor* t, std::string* error) {
  const std::string where = "input '" + spec.name + "'";
  t->name = spec.name;
  t->datatype = spec.datatype;
  const json* dt = in.contains("datatype") ? &in["datatype"] : nullptr;
  if (dt == nullptr || !dt->is_string()) {
    *error = where + ": \"datatype\" (a string) is required";
    return false;
  }
  if (dt->get<std::string>() != DataTypeName(spec.datatype)) {
    *error = where + ": datatype " + dt->get<std::string>() + " is not " +
             DataTypeName(spec.datatype);
    return false;
  }
  const json* shape = in.contains("shape") ? &in["shape"] : nullptr;
  if (shape == nullptr || !shape->is_array()) {
    *error = where + ": \"shape\" (an array of sizes) is required";
    return false;
  }
  if (shape->size() != spec.shape.size()) {
    *error = where + ": shape has " + std::to_string(shape->size()) + " dimensions, expected " +
             ShapeJson(spec.shape).dump() + " (-1: any size)";
    return false;
  }
  uint64_t elements = 1;
  for (size_t i = 0; i < shape->size(); ++i) {
    const json& d = (*shape)[i];
    if (!d.is_number_integer() || d.get<int64_t>() < 0 ||
        (spec.shape[i] >= 0 && d.get<int64_t>() != spec.shape[i])) {
      *error = where + ": shape " + shape->dump() + " does not match " +
               ShapeJson(spec.shape).dump() + " (-1: any size)";
      return false;
    }
    t->shape.push_back(d.get<int64_t>());
    elements *= static_cast<uint64_t>(d.get<int64_t>());
    if (elements > kMaxElements) {
      *error = where + ": too many elements (at most " + std::to_string(kMaxElements) + ")";
      return false;
    }
  }
  const json* data = in.contains("data") ? &in["data"] : nullptr;
  std::vector<const json*> leaves;
  if (data == nullptr || !data->is_array() || !Flatten(*data, &leaves)) {
    *error = where + ": \"data\" (an array of values) is required";
    return false;
  }
  if (leaves.size() != elements) {
    *error = where + ": data has " + std::to_string(leaves.size()) + " values, shape " +
             shape->dump() + " needs " + std::to_string(elements);
    return false;
  }
  for (size_t i = 0; i < leaves.size(); ++i) {
    const json& v = *leaves[i];
    if (spec.datatype == DataType::kInt32) {
      const bool in_range =
          (v.is_number_integer() && v.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
           v.get<int64_t>() <= std::numeric_limits<int32_t>::max()) ||
          (v.is_number_unsigned() && v.get<uint64_t>() <= std::numeric_limits<int32_t>::max());
      if (!in_range) {
        *error = where + ": value " + std::to_string(i) + " (" + v.dump() + ") is not an INT32";
        return false;
      }
      t->i32.push_back(static_cast<int32_t>(v.get<int64_t>()));
    } else {
      if (!v.is_number() || !std::isfinite(v.get<double>())) {
        *error = where + ": value " + std::to_string(i) + " (" + v.dump() +
                 ") is not a finite FP32 number";
        return false;
      }
      t->f32.push_back(static_cast<float>(v.get<double>()));
    }
  }
  return true;
}

void Fnv(uint64_t* h, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    *h ^= b[i];
    *h *= 0x100000001B3ull;
  }
}

void FnvLe(uint64_t* h, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    const unsigned char b = static_cast<unsigned char>(v >> (8 * i));
    Fnv(h, &b, 1);
  }
}

}  // namespace

const char* DataTypeName(DataType t) { return t == DataType::kInt32 ? "INT32" : "FP32"; }

uint64_t HostTensor::elements() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

json MetadataJson(const std::string& name, const ModelSignature& sig, uint64_t seed,
                  uint64_t weight_bytes) {
  json j = {{"name", name}, {"versions", json::array({"1"})}, {"platform", sig.platform}};
  j["inputs"] = json::array();
  for (const TensorSpec& t : sig.inputs) j["inputs"].push_back(TensorSpecJson(t));
  j["outputs"] = json::array();
  for (const TensorSpec& t : sig.outputs) j["outputs"].push_back(TensorSpecJson(t));
  j["outputs"].push_back({{"name", "digest"}, {"datatype", "BYTES"}, {"shape", json::array({1})}});
  j["parameters"] = {{"seed", seed}, {"weight_bytes", weight_bytes}};
  if (!sig.optional_inputs.empty()) j["parameters"]["optional_inputs"] = sig.optional_inputs;
  return j;
}

bool ParseInferRequest(const std::string& body, const ModelSignature& sig, ParsedRequest* out,
                       std::string* error) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    *error = "request body is not valid JSON";
    return false;
  }
  if (!j.is_object()) {
    *error = "request body must be a JSON object with \"inputs\"";
    return false;
  }
  if (j.contains("id")) {
    if (!j["id"].is_string()) {
      *error = "\"id\" must be a string";
      return false;
    }
    out->id = j["id"].get<std::string>();
  }
  if (!j.contains("inputs") || !j["inputs"].is_array()) {
    *error = "\"inputs\" (an array of tensors) is required";
    return false;
  }
  out->inputs.assign(sig.inputs.size(), HostTensor{});
  for (const json& in : j["inputs"]) {
    if (!in.is_object() || !in.contains("name") || !in["name"].is_string()) {
      *error = "every input needs a \"name\" (a string)";
      return false;
    }
    const std::string name = in["name"].get<std::string>();
    size_t k = 0;
    while (k < sig.inputs.size() && sig.inputs[k].name != name) ++k;
    if (k == sig.inputs.size()) {
      *error = "unknown input '" + name + "'";
      return false;
    }
    if (!out->inputs[k].name.empty()) {
      *error = "input '" + name + "' given twice";
      return false;
    }
    if (!ParseTensor(in, sig.inputs[k], &out->inputs[k], error)) return false;
  }
  for (size_t k = 0; k < sig.inputs.size(); ++k) {
    bool optional = false;
    for (const std::string& o : sig.optional_inputs) optional |= o == sig.inputs[k].name;
    if (out->inputs[k].name.empty() && !optional) {
      *error = "input '" + sig.inputs[k].name + "' is required";
      return false;
    }
  }
  return true;
}

std::string RequestDigest(const std::string& model, uint64_t seed,
                          const std::vector<HostTensor>& inputs) {
  uint64_t h = 0xCBF29CE484222325ull;
  const unsigned char nul = 0;
  Fnv(&h, model.data(), model.size());
  Fnv(&h, &nul, 1);
  FnvLe(&h, seed, 8);
  for (const HostTensor& t : inputs) {
    if (t.name.empty()) continue;
    Fnv(&h, t.name.data(), t.name.size());
    Fnv(&h, &nul, 1);
    for (int32_t v : t.i32) FnvLe(&h, static_cast<uint32_t>(v), 4);
    for (float f : t.f32) {
      uint32_t bits = 0;
      std::memcpy(&bits, &f, 4);
      FnvLe(&h, bits, 4);
    }
  }
  char hex[17];
  for (int i = 0; i < 16; ++i) hex[i] = "0123456789abcdef"[(h >> (60 - 4 * i)) & 0xF];
  hex[16] = '\0';
  return hex;
}

std::string InferResponseJson(const std::string& model, const std::string& id,
                              const std::vector<HostTensor>& outputs, const std::string& digest) {
  json j = {{"model_name", model}, {"model_version", "1"}};
  if (!id.empty()) j["id"] = id;
  j["outputs"] = json::array();
  for (const HostTensor& t : outputs) {
    json o = {{"name", t.name}, {"datatype", DataTypeName(t.datatype)}, {"shape", ShapeJson(t.shape)}};
    if (t.datatype == DataType::kInt32) {
      o["data"] = t.i32;
    } else {
      o["data"] = t.f32;
    }
    j["outputs"].push_back(std::move(o));
  }
  j["outputs"].push_back({{"name", "digest"}, {"datatype", "BYTES"}, {"shape", json::array({1})}, {"data", json::array({digest})}});
  return j.dump();
}

}  // namespace sample
