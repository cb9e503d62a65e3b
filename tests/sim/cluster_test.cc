// The cluster layer of gshare-sim --nodes (cluster.h): placement like the Kubernetes scheduler
// (filter by free vGPU-memory units; least-allocated spreads, most-allocated and the
// gshare-aware score pack; the gshare score keeps each node's predicted busy share under its
// cap), unschedulable instances, and the per-node simulation summed (one node = Simulate).
#include <gtest/gtest.h>

#include <string>

#include "gshare/sim/cluster.h"
#include "gshare/sim/inputs.h"

namespace gshare::sim {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

// `n` instances of `gib` GiB each, one request per instance per second of `exec_ms`, 100 s.
SimWorkload Instances(int n, uint64_t gib, Duration exec_ms = 10) {
  SimWorkload w;
  policy::FunctionSpec f;
  f.weights_bytes = gib * kGiB;
  f.slo = 1'000'000;
  for (int i = 0; i < n; ++i) w.functions.push_back(f);
  for (int s = 0; s < 100; ++s) {
    for (int i = 0; i < n; ++i) {
      w.requests.push_back({s * policy::kUsPerSecond + i, static_cast<FunctionId>(i), exec_ms * 1000});
    }
  }
  return w;
}

ClusterOptions Cluster(int nodes, NodeScore score, double overcommit = 1.0) {
  ClusterOptions o;
  o.nodes = nodes;
  policy::GpuSpec g;
  g.memory_bytes = 10 * kGiB;
  o.node.gpus.assign(2, g);  // 20 units per node at overcommit 1
  o.overcommit = overcommit;
  o.score = score;
  return o;
}

// The policy configuration of one of o's nodes.
policy::PolicyConfig NodeConfig(const ClusterOptions& o) {
  policy::PolicyConfig c;
  c.gpus = o.node.gpus;
  return c;
}

TEST(Cluster, LeastAllocatedSpreadsInstances) {
  const Placement p = PlaceInstances(Instances(4, 2), Cluster(4, NodeScore::kLeastAllocated));
  EXPECT_EQ(p.units_per_node, 20u);
  for (int node = 0; node < 4; ++node) EXPECT_EQ(p.node_of[static_cast<size_t>(node)], node);
}

TEST(Cluster, MostAllocatedAndGshareScorePack) {
  for (NodeScore score : {NodeScore::kMostAllocated, NodeScore::kGshare}) {
    SCOPED_TRACE(NodeScoreName(score));
    const Placement p = PlaceInstances(Instances(4, 2), Cluster(4, score));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(p.node_of[static_cast<size_t>(i)], 0);
  }
}

// The filter: a node without enough free units is never chosen, however it scores; with no
// node left, the instance is unschedulable (a pending pod).
TEST(Cluster, NodesWithoutFreeUnitsAreFilteredOut) {
  const Placement p = PlaceInstances(Instances(5, 8), Cluster(2, NodeScore::kMostAllocated));
  EXPECT_EQ(p.node_of[0], 0);
  EXPECT_EQ(p.node_of[1], 0);  // 16 of 20 units
  EXPECT_EQ(p.node_of[2], 1);  // would be 24 on node 0
  EXPECT_EQ(p.node_of[3], 1);
  EXPECT_EQ(p.node_of[4], -1);
  for (uint64_t used : p.units_used) EXPECT_LE(used, p.units_per_node);
  // Overcommit lets the device plugin advertise more units than the GPUs' memory (40 a node).
  const Placement over = PlaceInstances(Instances(5, 8), Cluster(2, NodeScore::kMostAllocated, 2.0));
  EXPECT_EQ(over.units_per_node, 40u);
  EXPECT_EQ(over.node_of[4], 0);
}

// The gshare score packs by predicted GPU time, not by memory: instances busy 40% of a GPU each
// (0.4 s per second), two GPUs per node, cap 0.5: two fit on a node (0.4 of its GPUs), the third
// would make it 0.6 and goes to the next node; most-allocated would put all three together.
TEST(Cluster, GshareScoreKeepsPredictedBusyUnderTheCap) {
  const SimWorkload w = Instances(3, 1, 400);
  ClusterOptions o = Cluster(3, NodeScore::kGshare);
  o.busy_cap = 0.5;
  const Placement p = PlaceInstances(w, o);
  EXPECT_EQ(p.node_of[0], 0);
  EXPECT_EQ(p.node_of[1], 0);
  EXPECT_EQ(p.node_of[2], 1);
  EXPECT_NEAR(p.predicted_busy[0], 0.4, 0.01);
  const Placement m = PlaceInstances(w, Cluster(3, NodeScore::kMostAllocated));
  EXPECT_EQ(m.node_of[2], 0);
}

TEST(Cluster, OneNodeIsTheNodeSimulation) {
  InputOptions in;
  in.synthetic = true;
  in.functions = 20;
  in.duration_s = 300;
  const SimWorkload w = LoadInputs(in)->workload;
  ClusterOptions o;
  o.nodes = 1;
  o.node.gpus.assign(8, policy::GpuSpec{});
  o.overcommit = 100;
  policy::PolicyConfig c;
  c.gpus = o.node.gpus;
  const auto simulated = SimulateCluster(w, o, "aggressive", c);
  ASSERT_TRUE(simulated.ok()) << simulated.status().ToString();
  const ClusterResult& cr = *simulated;
  const RunResult r = Simulate(w, o.node, *policy::Make("aggressive", c).value());
  EXPECT_EQ(cr.total.on_time, r.on_time);
  EXPECT_DOUBLE_EQ(cr.total.gpu_seconds, r.gpu_seconds);
  EXPECT_DOUBLE_EQ(cr.total.p99_ms, r.p99_ms);
  EXPECT_EQ(cr.nodes_used, 1);
}

// Requests of unschedulable instances are never served and count as misses; the others are
// simulated on their nodes and the totals add up.
TEST(Cluster, UnschedulableRequestsCountAsMisses) {
  const SimWorkload w = Instances(5, 8);
  ClusterOptions o = Cluster(2, NodeScore::kLeastAllocated);
  const auto simulated = SimulateCluster(w, o, "aggressive", NodeConfig(o));
  ASSERT_TRUE(simulated.ok()) << simulated.status().ToString();
  const ClusterResult& cr = *simulated;
  EXPECT_EQ(cr.unschedulable_instances, 1u);
  EXPECT_EQ(cr.unschedulable_requests, 100u);
  EXPECT_EQ(cr.total.requests, 500u);
  EXPECT_EQ(cr.total.completed, 400u);
  EXPECT_EQ(cr.total.unfinished, 100u);
  EXPECT_LE(cr.total.slo_attainment, 0.8);
  EXPECT_EQ(cr.nodes_used, 2);
  EXPECT_EQ(cr.total.violations, 0u);
  EXPECT_NEAR(cr.total.gpu_seconds, cr.node_gpu_seconds[0] + cr.node_gpu_seconds[1], 1e-9);
}

// An unknown policy is policy::Make's error, code and message unchanged.
TEST(Cluster, AnUnknownPolicyIsAnInvalidArgument) {
  const auto simulated =
      SimulateCluster(Instances(2, 8), Cluster(1, NodeScore::kLeastAllocated), "no-such-policy",
                      NodeConfig(Cluster(1, NodeScore::kLeastAllocated)));
  ASSERT_FALSE(simulated.ok());
  EXPECT_EQ(simulated.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(simulated.status().message(),
            "unknown policy 'no-such-policy' (known: keepalive, proxy-swap, fifo, dual-queue, "
            "aggressive[-no-<idea>...])");
}

}  // namespace
}  // namespace gshare::sim
