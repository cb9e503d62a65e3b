// Implementation of catalog.h: the TOML catalog reader and model math. The built-in catalog is
// in default_catalog.cc.
//
// File format (docs/workloads.md, "catalog"):
//   context = "400MiB"            # optional, per running instance
//   [[model]]
//   name = "resnet50"             # required, unique
//   weights = "49MiB"             # required, byte size (string with unit, or integer bytes)
//   activation = "64MiB"          # optional byte size, default 0
//   exec = "2.1ms"                # required duration: mean execution time
//   exec_cv = 0.1                 # optional number >= 0, default 0
//   slo = "10ms"                  # optional duration
//   prefill_per_token = "0.1ms"   # optional durations (token-driven models)
//   decode_per_token = "8ms"
//   share = 1.0                   # optional number >= 0, default 1
//   compute_demand = 0.3          # optional, (0, 1], default 1 (co-running only)
//   bandwidth_demand = 0.15       # optional, [0, 1], default 1 (co-running only)
#include "gshare/workload/catalog.h"

#include <chrono>
#include <cmath>
#include <set>

#include <toml++/toml.h>

#include "gshare/common/units.h"
#include "text.h"

namespace gshare::workload {
namespace {

// Reads typed values out of one TOML table, turning every problem into a message that names
// the source, the line and the key.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string_view source, std::string context)
      : table_(table), source_(source), context_(std::move(context)) {}

  Status CheckKeys(const std::set<std::string_view>& allowed) const {
    for (const auto& [key, node] : table_) {
      if (!allowed.count(key.str())) {
        return FailMalformed(Where(node) + "unknown key '" + std::string(key.str()) + "'");
      }
    }
    return Status::Ok();
  }

  Status String(std::string_view key, bool required, std::string* out) const {
    const toml::node* node = table_.get(key);
    if (!node) return Missing(key, required);
    if (!node->is_string()) {
      return FailMalformed(Where(*node) + std::string(key) + " must be a string");
    }
    *out = node->as_string()->get();
    return Status::Ok();
  }

  Status Bytes(std::string_view key, bool required, uint64_t* out) const {
    const toml::node* node = table_.get(key);
    if (!node) return Missing(key, required);
    if (const auto* i = node->as_integer()) {
      if (i->get() < 0) {
        return FailMalformed(Where(*node) + std::string(key) + " must not be negative");
      }
      *out = static_cast<uint64_t>(i->get());
      return Status::Ok();
    }
    if (!node->is_string()) {
      return FailMalformed(Where(*node) + std::string(key) +
                           " must be a byte size such as \"49MiB\"");
    }
    const auto value = ParseByteSize(node->as_string()->get());
    if (!value.ok()) {
      return FailMalformed(Where(*node) + std::string(key) + " " +
                           internal::Quote(node->as_string()->get()) + " is not a byte size (" +
                           value.status().message() + ")");
    }
    *out = *value;
    return Status::Ok();
  }

  Status Millis(std::string_view key, bool required, std::optional<double>* out) const {
    const toml::node* node = table_.get(key);
    if (!node) return Missing(key, required);
    if (!node->is_string()) {
      return FailMalformed(Where(*node) + std::string(key) +
                           " must be a duration such as \"2.1ms\"");
    }
    const auto value = ParseDuration(node->as_string()->get());
    if (!value.ok()) {
      return FailMalformed(Where(*node) + std::string(key) + " " +
                           internal::Quote(node->as_string()->get()) + " is not a duration (" +
                           value.status().message() + ")");
    }
    *out = std::chrono::duration<double, std::milli>(*value).count();
    return Status::Ok();
  }

  Status Number(std::string_view key, bool required, double* out) const {
    const toml::node* node = table_.get(key);
    if (!node) return Missing(key, required);
    if (const auto* i = node->as_integer()) {
      *out = static_cast<double>(i->get());
    } else if (const auto* f = node->as_floating_point()) {
      *out = f->get();
    } else {
      return FailMalformed(Where(*node) + std::string(key) + " must be a number");
    }
    if (!(*out >= 0) || !std::isfinite(*out)) {
      return FailMalformed(Where(*node) + std::string(key) + " must be a finite number >= 0");
    }
    return Status::Ok();
  }

  std::string Where(const toml::node& node) const { return Location(node.source().begin.line); }
  std::string Location(uint32_t line) const {
    std::string s(source_);
    if (line > 0) s += ":" + std::to_string(line);
    return s + ": " + context_;
  }

 private:
  Status Missing(std::string_view key, bool required) const {
    if (!required) return Status::Ok();
    return FailMalformed(Location(table_.source().begin.line) + "missing key '" +
                         std::string(key) + "'");
  }

  const toml::table& table_;
  std::string_view source_;
  std::string context_;
};

const std::set<std::string_view> kTopKeys = {"context", "model"};
const std::set<std::string_view> kModelKeys = {
    "name", "weights", "activation", "exec", "exec_cv", "slo", "prefill_per_token",
    "decode_per_token", "share", "compute_demand", "bandwidth_demand"};

Status ReadModel(const toml::table& table, std::string_view source, size_t index,
                 ModelSpec* model) {
  {
    const TableReader unnamed(table, source, "model #" + std::to_string(index + 1) + ": ");
    if (Status e = unnamed.String("name", true, &model->name); !e.ok()) return e;
    if (model->name.empty()) {
      return FailMalformed(unnamed.Location(table.source().begin.line) + "empty name");
    }
  }
  const TableReader reader(table, source, "model '" + model->name + "': ");
  if (Status e = reader.CheckKeys(kModelKeys); !e.ok()) return e;
  if (Status e = reader.Bytes("weights", true, &model->weights_bytes); !e.ok()) return e;
  if (model->weights_bytes == 0) {
    return FailMalformed(reader.Where(*table.get("weights")) + "weights must be positive");
  }
  if (Status e = reader.Bytes("activation", false, &model->activation_bytes); !e.ok()) return e;
  std::optional<double> exec, prefill, decode;
  if (Status e = reader.Millis("exec", true, &exec); !e.ok()) return e;
  if (!(*exec > 0)) {
    return FailMalformed(reader.Where(*table.get("exec")) + "exec must be positive");
  }
  model->exec_ms_mean = *exec;
  if (Status e = reader.Number("exec_cv", false, &model->exec_ms_cv); !e.ok()) return e;
  if (Status e = reader.Millis("slo", false, &model->slo_ms); !e.ok()) return e;
  if (Status e = reader.Millis("prefill_per_token", false, &prefill); !e.ok()) return e;
  if (Status e = reader.Millis("decode_per_token", false, &decode); !e.ok()) return e;
  model->prefill_ms_per_token = prefill.value_or(0);
  model->decode_ms_per_token = decode.value_or(0);
  if (Status e = reader.Number("share", false, &model->share); !e.ok()) return e;
  if (Status e = reader.Number("compute_demand", false, &model->compute_demand); !e.ok()) return e;
  if (!(model->compute_demand > 0) || model->compute_demand > 1) {
    return FailMalformed(reader.Where(*table.get("compute_demand")) +
                         "compute_demand must be in (0, 1]");
  }
  if (Status e = reader.Number("bandwidth_demand", false, &model->bandwidth_demand); !e.ok()) {
    return e;
  }
  if (model->bandwidth_demand > 1) {
    return FailMalformed(reader.Where(*table.get("bandwidth_demand")) +
                         "bandwidth_demand must be in [0, 1]");
  }
  return Status::Ok();
}

}  // namespace

int Catalog::Find(std::string_view name) const {
  for (size_t i = 0; i < models.size(); ++i) {
    if (models[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Result<Catalog> ParseCatalog(std::string_view toml_text, std::string_view source_name) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    return FailMalformed(std::string(source_name) + ":" + std::to_string(e.source().begin.line) +
                         ": " + std::string(e.description()));
  }
  Catalog catalog;
  catalog.source = std::string(source_name);
  TableReader top(root, source_name, "");
  if (Status e = top.CheckKeys(kTopKeys); !e.ok()) return e;
  if (Status e = top.Bytes("context", false, &catalog.context_bytes); !e.ok()) return e;
  const toml::node* models = root.get("model");
  if (!models) return FailMalformed(std::string(source_name) + ": no [[model]] tables");
  const toml::array* array = models->as_array();
  if (!array || !array->is_array_of_tables()) {
    return FailMalformed(top.Where(*models) + "'model' must be an array of tables ([[model]])");
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::table& table = *array->get(i)->as_table();
    ModelSpec model;
    if (Status e = ReadModel(table, source_name, i, &model); !e.ok()) return e;
    if (catalog.Find(model.name) >= 0) {
      return FailMalformed(top.Location(table.source().begin.line) + "model '" + model.name +
                           "' is defined twice");
    }
    catalog.models.push_back(std::move(model));
  }
  return catalog;
}

Result<Catalog> LoadCatalog(const std::filesystem::path& path) {
  Result<std::string> text = internal::ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ParseCatalog(*text, path.string());
}

double ExecQuantileMs(const ModelSpec& model, double p) {
  if (model.exec_ms_cv <= 0) return model.exec_ms_mean;
  // Log-normal with mean m and CV c: sigma^2 = ln(1 + c^2), mu = ln m - sigma^2 / 2.
  const double sigma2 = std::log1p(model.exec_ms_cv * model.exec_ms_cv);
  const double mu = std::log(model.exec_ms_mean) - 0.5 * sigma2;
  // Standard normal quantile by bisection on erfc (accurate enough, and p is a constant).
  double lo = -10, hi = 10;
  for (int i = 0; i < 80; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return std::exp(mu + std::sqrt(sigma2) * 0.5 * (lo + hi));
}

double SloMs(const ModelSpec& model, double factor, double floor_ms) {
  if (model.slo_ms) return *model.slo_ms;
  return std::max(floor_ms, factor * ExecQuantileMs(model, 0.9));
}

}  // namespace gshare::workload
