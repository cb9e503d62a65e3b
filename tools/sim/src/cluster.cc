// The cluster layer of gshare-sim --nodes (see cluster.h).
#include "gshare/sim/cluster.h"

#include <algorithm>
#include <cmath>

namespace gshare::sim {

const char* NodeScoreName(NodeScore s) {
  switch (s) {
    case NodeScore::kLeastAllocated: return "least-allocated";
    case NodeScore::kMostAllocated: return "most-allocated";
    case NodeScore::kGshare: return "gshare";
  }
  return "?";
}

bool ParseNodeScore(const std::string& name, NodeScore* out) {
  for (NodeScore s : {NodeScore::kLeastAllocated, NodeScore::kMostAllocated, NodeScore::kGshare}) {
    if (name == NodeScoreName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

Placement PlaceInstances(const SimWorkload& w, const ClusterOptions& o) {
  Placement p;
  const size_t nodes = static_cast<size_t>(std::max(1, o.nodes));
  uint64_t node_memory = 0;
  for (const policy::GpuSpec& g : o.node.gpus) node_memory += g.memory_bytes;
  p.units_per_node = static_cast<uint64_t>(
      std::floor(static_cast<double>(node_memory) * o.overcommit / static_cast<double>(o.unit_bytes)));
  p.units_used.assign(nodes, 0);
  p.predicted_busy.assign(nodes, 0.0);
  p.node_of.assign(w.functions.size(), -1);
  // Offered load per instance: execution seconds per second of the workload.
  std::vector<double> load(w.functions.size(), 0.0);
  Time first = 0, last = 0;
  if (!w.requests.empty()) {
    first = w.requests.front().arrival;
    last = w.requests.back().arrival;
  }
  const double span = std::max<double>(1.0, static_cast<double>(last - first));
  for (const SimRequest& r : w.requests) load[r.function] += static_cast<double>(r.exec) / span;
  const double gpus = static_cast<double>(std::max<size_t>(1, o.node.gpus.size()));
  for (FunctionId f = 0; f < w.functions.size(); ++f) {
    const uint64_t bytes = policy::FootprintBytes(w.functions[f], policy::Residency::kResident);
    const uint64_t units = (bytes + o.unit_bytes - 1) / o.unit_bytes;
    const double busy = load[f] / gpus;
    int best = -1;
    double best_score = 0;
    for (size_t n = 0; n < nodes; ++n) {
      if (p.units_used[n] + units > p.units_per_node) continue;  // filter
      const double free_after =
          static_cast<double>(p.units_per_node - p.units_used[n] - units) / static_cast<double>(p.units_per_node);
      double score = 0;
      switch (o.score) {
        case NodeScore::kLeastAllocated: score = free_after; break;
        case NodeScore::kMostAllocated: score = 1.0 - free_after; break;
        case NodeScore::kGshare: {
          const double after = p.predicted_busy[n] + busy;
          // Fits under the cap: the busiest such node; else only ahead of nothing (the least
          // busy node wins among the nodes over the cap).
          score = after <= o.busy_cap ? 1.0 + after : -after;
          break;
        }
      }
      if (best < 0 || score > best_score) {
        best = static_cast<int>(n);
        best_score = score;
      }
    }
    p.node_of[f] = best;
    if (best < 0) continue;
    p.units_used[static_cast<size_t>(best)] += units;
    p.predicted_busy[static_cast<size_t>(best)] += busy;
  }
  return p;
}

gshare::Result<ClusterResult> SimulateCluster(const SimWorkload& w, const ClusterOptions& o,
                                              const std::string& name,
                                              const policy::PolicyConfig& node_config) {
  ClusterResult c;
  c.policy = name;
  c.score = o.score;
  const Placement p = PlaceInstances(w, o);
  const size_t nodes = p.units_used.size();
  // Per node: its instances renumbered densely, its requests (global index kept).
  std::vector<SimWorkload> parts(nodes);
  std::vector<std::vector<size_t>> request_index(nodes);
  std::vector<FunctionId> local(w.functions.size(), policy::kNoFunction);
  for (FunctionId f = 0; f < w.functions.size(); ++f) {
    if (p.node_of[f] < 0) {
      ++c.unschedulable_instances;
      continue;
    }
    SimWorkload& part = parts[static_cast<size_t>(p.node_of[f])];
    local[f] = static_cast<FunctionId>(part.functions.size());
    part.functions.push_back(w.functions[f]);
  }
  // Warm routing stays within a node: a function's instances on one node form its group there
  // (the first of them placed there stands for it).
  if (!w.group.empty()) {
    std::vector<std::vector<FunctionId>> first_here(nodes, std::vector<FunctionId>(w.functions.size(), policy::kNoFunction));
    for (FunctionId f = 0; f < w.functions.size(); ++f) {
      if (p.node_of[f] < 0) continue;
      const auto n = static_cast<size_t>(p.node_of[f]);
      FunctionId& rep = first_here[n][w.group[f]];
      if (rep == policy::kNoFunction) rep = local[f];
      parts[n].group.push_back(rep);
    }
  }
  for (size_t i = 0; i < w.requests.size(); ++i) {
    const SimRequest& r = w.requests[i];
    if (p.node_of[r.function] < 0) {
      ++c.unschedulable_requests;
      continue;
    }
    const auto n = static_cast<size_t>(p.node_of[r.function]);
    parts[n].requests.push_back({r.arrival, local[r.function], r.exec});
    request_index[n].push_back(i);
  }
  RunResult& t = c.total;
  t.policy = name;
  t.requests = w.requests.size();
  t.unfinished = c.unschedulable_requests;
  t.latencies.assign(w.requests.size(), -1);
  c.node_gpu_seconds.assign(nodes, 0.0);
  SimOptions node = o.node;
  node.record_timeline = false;
  for (size_t n = 0; n < nodes; ++n) {
    if (parts[n].functions.empty()) continue;
    ++c.nodes_used;
    auto made = policy::Make(name, node_config);
    if (!made.ok()) return made.status();
    const RunResult r = Simulate(parts[n], node, **made);
    c.node_gpu_seconds[n] = r.gpu_seconds;
    t.on_time += r.on_time;
    t.completed += r.completed;
    t.unfinished += r.unfinished;
    t.solo_feasible += r.solo_feasible;
    t.dedicated_on_time += r.dedicated_on_time;
    t.late_host += r.late_host;
    t.late_parked += r.late_parked;
    t.late_resident += r.late_resident;
    t.late_execution += r.late_execution;
    t.late_self_queue += r.late_self_queue;
    t.late_cold_start += r.late_cold_start;
    t.late_swap_in += r.late_swap_in;
    t.late_gpu_queue += r.late_gpu_queue;
    t.gpu_seconds += r.gpu_seconds;
    t.gpu_seconds_to_last_use += r.gpu_seconds_to_last_use;
    t.busy_seconds += r.busy_seconds;
    t.peak_gpus += r.peak_gpus;
    t.swap_bytes += r.swap_bytes;
    t.swap_ins += r.swap_ins;
    t.swap_in_bytes += r.swap_in_bytes;
    t.migrations += r.migrations;
    t.evictions += r.evictions;
    t.cost_usd += r.cost_usd;
    t.events += r.events;
    t.violations += r.violations;
    if (t.first_violation.empty()) t.first_violation = r.first_violation;
    t.memory_overcommits += r.memory_overcommits;
    t.rerouted += r.rerouted;
    t.end_time = std::max(t.end_time, r.end_time);
    for (size_t i = 0; i < r.latencies.size(); ++i) t.latencies[request_index[n][i]] = r.latencies[i];
  }
  t.slo_attainment = t.requests ? static_cast<double>(t.on_time) / static_cast<double>(t.requests) : 1.0;
  SummariseLatencies(&t);
  return c;
}

}  // namespace gshare::sim
