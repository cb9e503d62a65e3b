// The cluster layer of gshare-sim --nodes N: instances are placed on nodes the way the
// Kubernetes scheduler places pods that request an extended resource — each node advertises
// vGPU-memory units (its GPUs' memory times an overcommit factor, in units of unit_bytes), each
// instance requests its resident footprint in units; nodes without enough free units are
// filtered out, the rest scored — and then every node runs the existing node model (Simulate)
// under its own policy instance with the requests of the instances placed on it.
//
// Scores: "least-allocated" (kube-scheduler's default NodeResourcesFit strategy: the most free
// units after placement), "most-allocated" (its bin-packing strategy: the fewest), and
// "gshare" (gshare-aware: pack by predicted GPU time — the node whose predicted busy share,
// the placed instances' execution seconds per second over its GPUs, is highest while it stays
// at or below busy_cap with this instance added; if none, the least busy node). Ties go to the
// lowest-numbered node (deterministic). Instances are placed in id order, as pods in creation
// order.
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gshare/common/status.h"
#include "gshare/policy/policy.h"
#include "gshare/sim/engine.h"

namespace gshare::sim {

enum class NodeScore : uint8_t { kLeastAllocated, kMostAllocated, kGshare };
const char* NodeScoreName(NodeScore s);
// "least-allocated", "most-allocated", "gshare"; false if unknown.
bool ParseNodeScore(const std::string& name, NodeScore* out);

struct ClusterOptions {
  int nodes = 1;
  SimOptions node;               // every node's GPUs (and simulator options)
  uint64_t unit_bytes = 1ull << 30;  // one vGPU-memory unit (the extended resource's quantum)
  double overcommit = 4.0;       // units a node advertises: its GPU memory x this / unit_bytes
  NodeScore score = NodeScore::kLeastAllocated;
  // gshare score: most predicted busy share per node. 0.2: about what aggressive runs its GPUs
  // at on the synthetic workloads (docs/scheduling.md, "Several nodes": 0.1-0.5 measured).
  double busy_cap = 0.2;
};

struct Placement {
  std::vector<int> node_of;            // per instance; -1: unschedulable (no node had room)
  std::vector<uint64_t> units_used;    // per node
  uint64_t units_per_node = 0;
  std::vector<double> predicted_busy;  // per node: placed instances' load / its GPUs
};

// Places every instance of `workload` (its offered load: its requests' execution over the
// workload's span).
Placement PlaceInstances(const SimWorkload& workload, const ClusterOptions& options);

struct ClusterResult {
  std::string policy;
  NodeScore score = NodeScore::kLeastAllocated;
  RunResult total;             // summed over nodes; p50/p99 over all requests; peak_gpus summed
  int nodes_used = 0;          // nodes with at least one instance
  uint64_t unschedulable_instances = 0;
  uint64_t unschedulable_requests = 0;  // never served (counted as misses in total)
  std::vector<double> node_gpu_seconds;
};

// Places the instances, then simulates each node under a fresh `policy` made with
// `node_config` (whose gpus are one node's). The requests of unschedulable instances count as
// never completed. An error is policy::Make's (kInvalidArgument: an unknown policy name, a
// config without GPUs), unchanged.
gshare::Result<ClusterResult> SimulateCluster(const SimWorkload& workload,
                                              const ClusterOptions& options,
                                              const std::string& policy,
                                              const policy::PolicyConfig& node_config);

}  // namespace gshare::sim
