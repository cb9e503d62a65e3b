// gshare-sim: replays a workload (a trace or a synthetic one) on a simulated node under each
// requested scheduling policy and reports SLO attainment, latency, GPU time and cost (table,
// JSON, plots); with --exact, also grades the policies against the exact optimum on a small
// instance. See docs/scheduling.md.
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "gshare/common/units.h"
#include "gshare/sim/bounds.h"
#include "gshare/sim/cluster.h"
#include "gshare/sim/engine.h"
#include "gshare/sim/exact_report.h"
#include "gshare/sim/inputs.h"
#include "gshare/sim/report.h"

namespace {

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// gshare-sim --nodes: every (policy, score) pair on the cluster; 0, 1, 2 or 3 like main.
int RunCluster(const gshare::sim::Inputs& inputs, const gshare::sim::SimOptions& node,
               const gshare::policy::PolicyConfig& config, int nodes,
               const std::vector<std::string>& policies, const std::vector<std::string>& scores,
               const std::string& unit, gshare::sim::ClusterOptions cluster,
               const std::string& json_out, bool quiet, const gshare::sim::WorkloadBounds& bounds) {
  using namespace gshare;
  const auto unit_bytes = ParseByteSize(unit);
  if (!unit_bytes.ok() || *unit_bytes == 0) {
    fmt::print(stderr, "gshare-sim: --vgpu-unit '{}': {}\n", unit,
               unit_bytes.ok() ? "must be positive" : unit_bytes.status().message());
    return 2;
  }
  cluster.nodes = nodes;
  cluster.node = node;
  cluster.unit_bytes = *unit_bytes;
  std::vector<sim::ClusterResult> results;
  for (const std::string& score : scores) {
    if (!sim::ParseNodeScore(score, &cluster.score)) {
      fmt::print(stderr, "gshare-sim: unknown --node-score '{}' (least-allocated, most-allocated, gshare)\n", score);
      return 2;
    }
    for (const std::string& name : policies) {
      auto result = sim::SimulateCluster(inputs.workload, cluster, name, config);
      if (!result.ok()) {
        fmt::print(stderr, "gshare-sim: {}\n", result.status().message());
        return 2;
      }
      results.push_back(std::move(*result));
    }
  }
  if (!quiet) {
    fmt::print("workload: {} ({} functions, {} requests) on {} nodes of {} GPUs\n", inputs.description,
               inputs.workload.functions.size(), inputs.workload.requests.size(), nodes, node.gpus.size());
    fmt::print("{}", sim::FormatClusterTable(results, bounds));
  }
  if (!json_out.empty()) {
    std::ofstream out(json_out);
    out << sim::FormatClusterJson(results, inputs.description, nodes, bounds);
    if (!out) {
      fmt::print(stderr, "gshare-sim: cannot write {}\n", json_out);
      return 1;
    }
  }
  int violations = 0;
  for (const auto& c : results) {
    if (c.total.violations || c.total.memory_overcommits) {
      fmt::print(stderr, "gshare-sim: policy {} broke the protocol {} times; first: {}\n", c.policy,
                 c.total.violations, c.total.first_violation);
      ++violations;
    }
  }
  return violations ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gshare;
  CLI::App app{"gshare-sim: trace-driven simulation of gshare's GPU scheduling policies"};
  sim::InputOptions in;
  std::string gpu_memory = "40GiB";
  double link_gbps = 24.0;
  double price = 3.06;
  int gpus = 64;
  std::string policies = "keepalive,proxy-swap,fifo,dual-queue,aggressive";
  std::string json_out, plot_dir;
  bool exact = false;
  bool quiet = false;
  double restore_ms = 2.0;
  app.add_option("--trace", in.trace, "trace file (azure-llm: default is the shipped 2023 trace)");
  app.add_option("--format", in.format, "trace format: azure-llm | azure-functions | csv")
      ->check(CLI::IsMember({"azure-llm", "azure-functions", "csv"}));
  app.add_flag("--synthetic", in.synthetic, "generate an Azure-like synthetic workload instead");
  app.add_option("--catalog", in.catalog, "model catalog (TOML); default: the built-in catalog");
  app.add_option("--functions", in.functions, "number of functions (see docs/scheduling.md)");
  app.add_option("--duration", in.duration_s, "synthetic: trace length in seconds");
  app.add_option("--rate-scale", in.rate_scale, "synthetic: multiply every function's rate");
  app.add_option("--max-instance-load", in.max_instance_load, "scale a function out to more instances above this load");
  app.add_option("--routing", in.routing,
                 "requests to instances: round-robin | idle-first | warm-first (at arrival, to a "
                 "warm idle instance, seeing the policy's placement)")
      ->check(CLI::IsMember({"round-robin", "idle-first", "warm-first"}));
  app.add_option("--time-compression", in.time_compression, "divide trace times by this");
  app.add_option("--max-requests", in.max_requests, "replay at most this many requests (0: all)");
  app.add_option("--gpus", gpus, "GPUs on the node (with --nodes: per node)")->check(CLI::PositiveNumber);
  app.add_option("--gpu-memory", gpu_memory, "memory of each GPU (e.g. 40GiB)");
  app.add_option("--link-gbps", link_gbps, "host link bandwidth, GB/s per GPU")->check(CLI::PositiveNumber);
  double policy_link_gbps = 0;
  app.add_option("--policy-link-gbps", policy_link_gbps,
                 "link bandwidth the policy is told (default: --link-gbps; the live arbiter tells "
                 "it 24 and the policy learns the real one from swap-ins)")
      ->check(CLI::PositiveNumber);
  bool swap_out_copies = false;
  app.add_flag("--swap-out-copies", swap_out_copies,
               "evictions copy what they free to the host over the link first, as the live "
               "arbiter does (the policy is told so too); default: swap-outs are free");
  bool corun = false;
  app.add_flag("--corun", corun,
               "mark every GPU for co-running (MPS; the policy's corun idea, the contention model "
               "of docs/scheduling.md); default: time slicing only");
  bool corun_across_domains = false;
  app.add_flag("--corun-across-domains", corun_across_domains,
               "with --corun: functions of different fault domains may co-run");
  double slice_ms = 0;
  app.add_option("--slice-ms", slice_ms, "grant slices of this length (0: whole bursts; the arbiter's --slice)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--models-by-name", in.models_by_name,
               "each function runs the catalog model named like it ('cnn-3' runs 'cnn')");
  app.add_option("--restore-ms", restore_ms, "fixed cost of a deep restore besides the copy");
  app.add_option("--price", price, "USD per GPU-hour");
  int pool = 0;
  app.add_option("--pool", pool, "proxy-swap: GPUs in its fixed pool (0: all of --gpus)");
  app.add_option("--policy", policies, "comma-separated policies (aggressive-no-<idea> for ablations)");
  app.add_option("--slo-factor", in.slo_factor, "SLO = max(floor, K x p90 solo execution)");
  app.add_option("--slo-floor-ms", in.slo_floor_ms, "SLO floor in milliseconds");
  app.add_option("--seed", in.seed, "seed for model assignment, execution times, synthetic trace");
  app.add_option("--json", json_out, "write the JSON report here");
  app.add_option("--plot", plot_dir, "write SVG plots (gnuplot) into this directory");
  app.add_flag("--exact", exact, "grade the policies against the exact optimum (small instances)");
  sim::ExactOptions exact_options;
  app.add_option("--exact-choices", exact_options.max_choices,
                 "--exact: start steps per request (a finer grid: a tighter optimum, slower)")
      ->check(CLI::PositiveNumber);
  app.add_option("--exact-steps", exact_options.max_steps, "--exact: most time steps per window")
      ->check(CLI::PositiveNumber);
  app.add_flag("--exact-detail", exact_options.detail,
               "--exact: print every window's schedules (the optimum's, each policy's) on stderr");
  app.add_flag("--quiet", quiet, "no table on stdout");
  int nodes = 0;
  app.add_option("--nodes", nodes,
                 "simulate a cluster of this many nodes (--gpus then counts GPUs per node): "
                 "instances placed by a Kubernetes-like scheduler, each node its own policy")
      ->check(CLI::PositiveNumber);
  std::string node_scores = "least-allocated,gshare";
  app.add_option("--node-score", node_scores,
                 "--nodes: comma-separated placement scores: least-allocated (Kubernetes' "
                 "default), most-allocated, gshare (pack by predicted GPU time)");
  std::string vgpu_unit = "1GiB";
  app.add_option("--vgpu-unit", vgpu_unit, "--nodes: one vGPU-memory unit of the extended resource");
  sim::ClusterOptions cluster;
  app.add_option("--node-overcommit", cluster.overcommit,
                 "--nodes: units a node advertises = its GPU memory x this / --vgpu-unit")
      ->check(CLI::PositiveNumber);
  app.add_option("--node-busy-cap", cluster.busy_cap,
                 "--nodes, gshare score: most predicted busy share of a node's GPUs")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const auto mem = ParseByteSize(gpu_memory);
  if (!mem.ok()) {
    fmt::print(stderr, "gshare-sim: --gpu-memory '{}': {}\n", gpu_memory, mem.status().message());
    return 2;
  }
  auto loaded = sim::LoadInputs(in);
  if (!loaded.ok()) {
    fmt::print(stderr, "gshare-sim: {}\n", loaded.status().message());
    return 1;
  }
  const sim::Inputs inputs = std::move(loaded).value();
  sim::SimOptions options;
  policy::GpuSpec gpu;
  gpu.memory_bytes = *mem;
  gpu.link_bytes_per_us = link_gbps * 1000.0;
  gpu.price_per_hour = price;
  gpu.restore_overhead = static_cast<policy::Duration>(restore_ms * 1000);
  gpu.corun = corun;
  options.gpus.assign(static_cast<size_t>(gpus), gpu);
  options.swap_out_copies = swap_out_copies;
  options.corun_across_domains = corun_across_domains;
  options.warm_routing = in.routing == "warm-first";
  for (const auto& f : inputs.workload.functions) {
    if (policy::FootprintBytes(f, policy::Residency::kResident) > gpu.memory_bytes) {
      fmt::print(stderr, "gshare-sim: model {} needs {} but a GPU has {}\n", f.model,
                 FormatByteSize(policy::FootprintBytes(f, policy::Residency::kResident)),
                 FormatByteSize(gpu.memory_bytes));
      return 1;
    }
  }
  policy::PolicyConfig config;
  config.gpus = options.gpus;
  if (policy_link_gbps > 0) {
    for (policy::GpuSpec& g : config.gpus) g.link_bytes_per_us = policy_link_gbps * 1000.0;
  }
  config.pool_gpus = pool;
  config.swap_out_copies = swap_out_copies;
  config.corun_across_domains = corun_across_domains;
  config.slice = static_cast<policy::Duration>(slice_ms * 1000);

  const sim::WorkloadBounds bounds = sim::ComputeBounds(inputs.workload, gpu);
  if (nodes > 0) return RunCluster(inputs, options, config, nodes, SplitCommas(policies),
                                   SplitCommas(node_scores), vgpu_unit, cluster, json_out, quiet, bounds);
  std::vector<sim::RunResult> runs;
  for (const std::string& name : SplitCommas(policies)) {
    auto made = policy::Make(name, config);
    if (!made.ok()) {
      fmt::print(stderr, "gshare-sim: {}\n", made.status().message());
      return 2;
    }
    runs.push_back(sim::Simulate(inputs.workload, options, **made));
  }
  if (!quiet) {
    fmt::print("workload: {} ({} functions, {} requests)\n", inputs.description,
               inputs.workload.functions.size(), inputs.workload.requests.size());
    fmt::print("{}", sim::FormatTable(runs));
    fmt::print("{}", sim::FormatMissCauses(runs));
    fmt::print("{}", sim::FormatChurn(runs));
    fmt::print("{}", sim::FormatLimits(runs, bounds));
  }
  if (exact) {
    const std::string text =
        sim::ExactReport(inputs.workload, options, SplitCommas(policies), exact_options);
    fmt::print("{}", text);
  }
  if (!json_out.empty()) {
    std::ofstream out(json_out);
    out << sim::FormatJson(runs, inputs.description, &bounds);
    if (!out) {
      fmt::print(stderr, "gshare-sim: cannot write {}\n", json_out);
      return 1;
    }
  }
  if (!plot_dir.empty()) {
    const std::string perr = sim::WritePlots(runs, plot_dir);
    if (!perr.empty()) {
      fmt::print(stderr, "gshare-sim: plots: {}\n", perr);
      return 1;
    }
  }
  int violations = 0;
  for (const auto& r : runs) {
    if (r.violations || r.memory_overcommits) {
      fmt::print(stderr, "gshare-sim: policy {} broke the protocol {} times; first: {}\n", r.policy,
                 r.violations, r.first_violation);
      ++violations;
    }
  }
  return violations ? 3 : 0;
}
