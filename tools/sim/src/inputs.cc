// Workload inputs of gshare-sim (see inputs.h).
#include "gshare/sim/inputs.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "fmt/format.h"
#include "gshare/workload/workload.h"

namespace gshare::sim {

namespace {

workload::Result<workload::Trace> ReadTrace(const InputOptions& o) {
  workload::ParseOptions parse;
  parse.time_compression = o.time_compression;
  parse.max_requests = o.max_requests;
  if (o.synthetic) {
    workload::SyntheticOptions s;
    s.functions = o.functions;
    s.duration_us = static_cast<int64_t>(o.duration_s * 1e6);
    s.seed = o.seed;
    s.rate_scale = o.rate_scale;
    s.max_requests = o.max_requests;
    auto r = workload::GenerateSynthetic(s);
    if (!r.ok()) return r.status();
    return std::move(r.value().trace);
  }
  std::string path = o.trace;
  if (path.empty() && o.format == "azure-llm") {
    auto shipped = workload::ShippedAzureLlmTracePath();
    if (!shipped.ok()) return shipped.status();
    path = shipped->string();
  }
  if (path.empty()) return workload::Fail("--trace FILE is required for --format " + o.format);
  if (o.format == "azure-llm") {
    workload::AzureLlmOptions a;
    a.parse = parse;
    a.functions = std::max<uint32_t>(1, o.functions);
    a.seed = o.seed;
    return workload::ParseAzureLlmTrace(path, a);
  }
  if (o.format == "azure-functions") {
    workload::AzureFunctionsOptions a;
    a.parse = parse;
    a.max_functions = o.functions;
    a.seed = o.seed;
    return workload::ParseAzureFunctionsTrace(path, a);
  }
  if (o.format == "csv") return workload::ParseCsvTrace(path, parse);
  return workload::Fail("unknown --format '" + o.format + "' (azure-llm, azure-functions, csv)");
}

// The catalog model of each function by name (see InputOptions::models_by_name).
workload::Result<std::vector<uint32_t>> ModelsByName(const workload::Trace& trace,
                                                     const workload::Catalog& catalog) {
  std::vector<uint32_t> models;
  for (const workload::FunctionInfo& f : trace.functions) {
    int m = catalog.Find(f.name);
    const size_t dash = f.name.rfind('-');
    if (m < 0 && dash != std::string::npos && dash + 1 < f.name.size() &&
        f.name.find_first_not_of("0123456789", dash + 1) == std::string::npos) {
      m = catalog.Find(std::string_view(f.name).substr(0, dash));
    }
    if (m < 0) {
      return workload::Fail("function '" + f.name + "' has no model of its name in catalog " +
                            catalog.source);
    }
    models.push_back(static_cast<uint32_t>(m));
  }
  return models;
}

}  // namespace

Result<Inputs> LoadInputs(const InputOptions& o) {
  Inputs in;
  workload::Catalog catalog = workload::DefaultCatalog();
  if (!o.catalog.empty()) {
    auto c = workload::LoadCatalog(o.catalog);
    if (!c.ok()) return c.status();
    catalog = std::move(c.value());
  }
  if (o.routing != "round-robin" && o.routing != "idle-first" && o.routing != "warm-first") {
    return workload::Fail("unknown routing '" + o.routing +
                          "' (round-robin, idle-first, warm-first)");
  }
  auto trace = ReadTrace(o);
  if (!trace.ok()) return trace.status();
  auto models = o.models_by_name ? ModelsByName(*trace, catalog)
                                 : workload::AssignModels(*trace, catalog, o.seed);
  if (!models.ok()) return models.status();
  workload::SampleExecTimes(&trace.value(), catalog, *models, o.seed);

  // Per trace function: its requests' execution times (for the empirical p90 behind the SLO)
  // and its offered load (for the instance count).
  const size_t nf = trace->functions.size();
  std::vector<std::vector<Duration>> execs(nf);
  for (const workload::Invocation& inv : trace->invocations) {
    execs[inv.function].push_back(
        std::max<Duration>(1, static_cast<Duration>(std::llround(inv.exec_ms.value_or(1.0) * 1000))));
  }
  const double span = std::max<double>(1.0, static_cast<double>(trace->SpanUs()));
  std::vector<FunctionId> first_instance(nf);
  std::vector<uint32_t> instances(nf, 1);
  SimWorkload& w = in.workload;
  for (size_t f = 0; f < nf; ++f) {
    const workload::ModelSpec& m = catalog.models[(*models)[f]];
    policy::FunctionSpec spec;
    spec.model = m.name;
    spec.weights_bytes = m.weights_bytes;
    spec.context_bytes = catalog.context_bytes + m.activation_bytes;
    spec.exec_p50 = static_cast<Duration>(std::llround(workload::ExecQuantileMs(m, 0.5) * 1000));
    spec.exec_p90 = static_cast<Duration>(std::llround(workload::ExecQuantileMs(m, 0.9) * 1000));
    spec.compute_demand = m.compute_demand;
    spec.bandwidth_demand = m.bandwidth_demand;
    // SLO: the paper's K x p90 of the function's execution time (measured on its requests when
    // it has enough of them: token-driven models differ from the catalog's log-normal), floored.
    double p90_ms = workload::ExecQuantileMs(m, 0.9);
    double load = 0;
    if (execs[f].size() >= 10) {
      std::vector<Duration> e = execs[f];
      const size_t k = e.size() * 9 / 10;
      std::nth_element(e.begin(), e.begin() + static_cast<long>(k), e.end());
      p90_ms = static_cast<double>(e[k]) / 1000.0;
    }
    for (Duration d : execs[f]) load += static_cast<double>(d);
    load /= span;
    spec.slo = static_cast<Duration>(std::llround(std::max(o.slo_floor_ms, o.slo_factor * p90_ms) * 1000));
    if (m.slo_ms) spec.slo = static_cast<Duration>(std::llround(*m.slo_ms * 1000));
    // A FaaS platform scales a busy function out to several instances; each instance is one
    // process (one vGPU) to gshare. Keep every instance's offered load under kMaxInstanceLoad.
    instances[f] = std::max<uint32_t>(1, static_cast<uint32_t>(std::ceil(load / o.max_instance_load)));
    first_instance[f] = static_cast<FunctionId>(w.functions.size());
    for (uint32_t i = 0; i < instances[f]; ++i) {
      w.functions.push_back(spec);
      w.group.push_back(first_instance[f]);
    }
  }
  std::vector<uint32_t> next_instance(nf, 0);
  std::vector<Time> free_at(w.functions.size(), 0);  // idle-first: when each instance frees
  const bool idle_first = o.routing == "idle-first";
  w.requests.reserve(trace->invocations.size());
  for (const workload::Invocation& inv : trace->invocations) {
    const double ms = inv.exec_ms.value_or(1.0);
    const Duration exec = std::max<Duration>(1, static_cast<Duration>(std::llround(ms * 1000)));
    const FunctionId first = first_instance[inv.function];
    FunctionId id = first + next_instance[inv.function]++ % instances[inv.function];
    if (idle_first) {
      id = first;
      for (FunctionId i = first; i < first + instances[inv.function]; ++i) {
        if (free_at[i] <= inv.arrival_us) {
          id = i;
          break;
        }
        if (free_at[i] < free_at[id]) id = i;
      }
      free_at[id] = std::max(free_at[id], inv.arrival_us) + exec;
    }
    w.requests.push_back({inv.arrival_us, id, exec});
  }
  in.description = fmt::format(
      "{}; catalog {}; slo = max({} ms, {} x p90); {} trace functions served by {} instances "
      "({} routing)",
      trace->description, catalog.source, o.slo_floor_ms, o.slo_factor, nf, w.functions.size(),
      o.routing);
  return in;
}

}  // namespace gshare::sim
