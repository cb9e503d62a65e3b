// gshare in real containers (podman + runc; CTest label `container`): unmodified sample-cnn
// servers in containers with their own pid, ipc and mount namespaces, the shim injected through
// the spec gshare-cdi generates, one arbiter on the host. Each test is one of issue 18's
// scenarios; a node whose runtime cannot run fails with the reason.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "container_node.h"

namespace gshare::container_test {
namespace {

using arbiter::testing::FreeTcpPort;
using arbiter::testing::ReadFile;
using arbiter::testing::Scaled;

#define ASSERT_NODE_READY(node) ASSERT_EQ((node).error(), "") << "the container runtime cannot run here"

// The arbiter's clients as pid -> function.
std::map<int, std::string> ClientsByPid(ContainerNode& node) {
  std::map<int, std::string> out;
  const nlohmann::json reply = node.Ctl({"clients"});
  if (!reply.is_object() || !reply.contains("clients")) return out;
  for (const auto& c : reply["clients"]) out[c["pid"].get<int>()] = c["function"].get<std::string>();
  return out;
}

int Counter(const nlohmann::json& summary, const char* name) {
  return summary.is_object() && summary.contains(name) ? summary[name].get<int>() : -1;
}

// Three containers whose vGPUs (400 MiB each) do not fit together on one simulated 1 GiB GPU:
// they register with the host arbiter under their host pids, every answer is correct, and the
// arbiter swaps them in and out.
TEST(Containers, ThreeContainersShareOneGpu) {
  ContainerNode node({.devices = "1x1GiB", .link_gbps = "0", .arbiter_args = {"--slice", "5ms"}});
  ASSERT_NODE_READY(node);
  std::vector<std::pair<std::string, int>> targets;
  std::map<int, std::string> pids;
  for (const char* name : {"c0", "c1", "c2"}) {
    const int port = FreeTcpPort();
    const pid_t pid = node.StartSample(name, port, "400MiB");
    ASSERT_GT(pid, 0) << node.error();
    targets.emplace_back(name, port);
    pids[pid] = name;
  }
  ASSERT_TRUE(node.WaitForClients(3)) << node.Logs();
  EXPECT_EQ(ClientsByPid(node), pids);  // host pids, as the real driver names processes
  const auto load = node.Load(targets, 15, 6);
  EXPECT_EQ(load.code, 0) << load.out << load.err << node.ContainerLog("c0");
  const nlohmann::json summary = node.StopArbiter();
  ASSERT_TRUE(summary.is_object()) << node.ArbiterLog();
  EXPECT_GT(Counter(summary, "swap_ins"), 0) << summary.dump();
  EXPECT_GT(Counter(summary, "swap_outs"), 0) << summary.dump();
}

// A container's idle process is deep-evicted (checkpointed by its host pid) and restored when
// requests come; with three 600 MiB vGPUs on two 1 GiB GPUs the arbiter also moves processes
// between the GPUs (lock, checkpoint, restore with the GPU pair, unlock). Every answer correct.
TEST(Containers, DeepEvictionRestoreAndMoveOfContainedProcesses) {
  ContainerNode node({.devices = "2x1GiB",
                      .link_gbps = "0",
                      .arbiter_args = {"--slice", "5ms", "--deep-evict-after", "300ms"}});
  ASSERT_NODE_READY(node);
  std::vector<std::pair<std::string, int>> targets;
  for (const char* name : {"d0", "d1", "d2"}) {
    const int port = FreeTcpPort();
    ASSERT_GT(node.StartSample(name, port, "600MiB"), 0) << node.error();
    targets.emplace_back(name, port);
  }
  ASSERT_TRUE(node.WaitForClients(3)) << node.Logs();
  auto load = node.Load(targets, 15, 5);
  EXPECT_EQ(load.code, 0) << load.out << load.err;
  // Idle now: each is checkpointed once its idle time passes.
  const auto until = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(30));
  while (ReadFile(node.dir() / "arbiter.log").find("(deep eviction)") == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  load = node.Load(targets, 15, 5);
  EXPECT_EQ(load.code, 0) << load.out << load.err;
  const std::string log = node.ArbiterLog();
  // No failed driver call, but for a lock that timed out: the driver's word that the process
  // did not reach a safe point in time (a loaded machine); the arbiter leaves it running.
  for (size_t at = log.find("cuCheckpointProcess"); at != std::string::npos;
       at = log.find("cuCheckpointProcess", at + 1))
    EXPECT_EQ(log.compare(at, 46, "cuCheckpointProcessLock failed: CUDA_ERROR_TIM"), 0)
        << log.substr(at, 120) << "\n" << log;
  const nlohmann::json summary = node.StopArbiter();
  ASSERT_TRUE(summary.is_object()) << log;
  EXPECT_GT(Counter(summary, "deep_evictions"), 0) << summary.dump();
  EXPECT_GT(Counter(summary, "restores"), 0) << summary.dump();
  EXPECT_GT(Counter(summary, "context_moves"), 0) << summary.dump() << log;
}

// The arbiter restarts; every container given the tenant directory (gshare-cdi's spec) sees the
// new socket and registers again by itself, and is served. A container given a bind mount of the
// socket file instead (by hand) keeps the old socket's inode and never registers again: why the
// spec mounts the directory.
TEST(Containers, EveryContainerReRegistersAfterTheArbiterRestarts) {
  ContainerNode node({.devices = "1x1GiB", .link_gbps = "0", .arbiter_args = {"--slice", "5ms"}});
  ASSERT_NODE_READY(node);
  std::vector<std::pair<std::string, int>> targets;
  std::map<int, std::string> pids;
  for (const char* name : {"r0", "r1"}) {
    const int port = FreeTcpPort();
    const pid_t pid = node.StartSample(name, port, "400MiB");
    ASSERT_GT(pid, 0) << node.error();
    targets.emplace_back(name, port);
    pids[pid] = name;
  }
  const pid_t file_mounted = node.StartSample("file", FreeTcpPort(), "100MiB", ContainerNode::Gshare::kSocketFileMount);
  ASSERT_GT(file_mounted, 0) << node.error();
  ASSERT_TRUE(node.WaitForClients(3)) << node.Logs();
  ASSERT_TRUE(node.StopArbiter().is_object()) << node.ArbiterLog();
  ASSERT_TRUE(node.StartArbiter()) << node.error();
  ASSERT_TRUE(node.WaitForClients(2)) << node.Logs();
  EXPECT_EQ(ClientsByPid(node), pids);
  // The shims retry every 50 ms; 60 tries later the file-mounted one is still not back.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(ClientsByPid(node), pids) << "the container given the socket file registered again";
  const auto load = node.Load(targets, 10, 4);
  EXPECT_EQ(load.code, 0) << load.out << load.err;
}

// With the arbiter's default layout (no socket paths configured), a container given the tenant
// directory /run/gshare sees one socket, the registration socket: no control command reaches the
// arbiter from inside (the default path, or any socket it can find), and it cannot put a file
// beside the registration socket. The operator's gshare-ctl on the host works. A container
// without the gshare device runs without the shim.
TEST(Containers, TenantsCannotReachTheControlSocketAndNoDeviceMeansNoShim) {
  ContainerNode node(
      {.devices = "1x1GiB", .link_gbps = "0", .arbiter_args = {"--slice", "5ms"}, .default_layout = true});
  ASSERT_NODE_READY(node);
  EXPECT_EQ(node.control_socket(), "/run/gshare-operator/control.sock");
  const nlohmann::json host = node.Ctl({"status"});
  ASSERT_TRUE(host.is_object() && host.value("ok", false)) << host.dump();

  const auto sockets = node.RunInContainer(
      {"/usr/bin/find", "/", "-path", "/proc", "-prune", "-o", "-path", "/sys", "-prune", "-o", "-type", "s", "-print"});
  EXPECT_EQ(sockets.out, node.tenant_dir() + "/arbiter.sock\n") << sockets.err;
  for (const std::string& socket : {std::string("/run/gshare-operator/control.sock"), node.control_socket(),
                                    node.tenant_dir() + "/control.sock", node.tenant_dir() + "/arbiter.sock"}) {
    for (const char* command : {"status", "clients", "drain", "undrain"}) {
      std::vector<std::string> argv = {"/usr/local/bin/gshare-ctl", "--socket", socket, command};
      if (std::string(command) == "drain" || std::string(command) == "undrain") argv.push_back("0");
      const auto r = node.RunInContainer(argv);
      EXPECT_NE(r.code, 0) << socket << " " << command << ": " << r.out << r.err;
      EXPECT_EQ(r.out.find("\"ok\": true"), std::string::npos) << r.out;
    }
  }
  const auto plant = node.RunInContainer({"/bin/sh", "-c", "echo x > " + node.tenant_dir() + "/planted"});
  EXPECT_NE(plant.code, 0) << "a container wrote into the tenant directory";
  const nlohmann::json after = node.Ctl({"status"});
  EXPECT_TRUE(after.is_object() && after.value("ok", false)) << after.dump();
  EXPECT_EQ(node.ArbiterLog().find("drained"), std::string::npos);

  // Without the gshare device: plain CUDA on the node's GPU, no shim, not a client.
  const int port = FreeTcpPort();
  const pid_t pid = node.StartSample("plain", port, "", ContainerNode::Gshare::kNone);
  ASSERT_GT(pid, 0) << node.error();
  const auto load = node.Load({{"plain", port}}, 10, 3);
  EXPECT_EQ(load.code, 0) << load.out << load.err;
  EXPECT_EQ(ReadFile("/proc/" + std::to_string(pid) + "/maps").find("libgshare"), std::string::npos);
  EXPECT_TRUE(ClientsByPid(node).empty());
}

// A container killed while its vGPU is being swapped out: its reservation is released, and the
// other containers keep being served correctly.
TEST(Containers, ContainerKilledMidSwapReleasesItsReservation) {
  // A slow link, so a swap-out of the sample's ~62 MiB takes a while.
  // (A long preemption grace: at that speed the weights' upload outlasts the default grace.)
  ContainerNode node({.devices = "1x1GiB",
                      .link_gbps = "0.05",
                      .arbiter_args = {"--slice", "5ms", "--preempt-grace", "10s"}});
  ASSERT_NODE_READY(node);
  std::vector<std::pair<std::string, int>> all, others;
  for (const char* name : {"k0", "k1", "k2"}) {
    const int port = FreeTcpPort();
    ASSERT_GT(node.StartSample(name, port, "300MiB"), 0) << node.error();
    all.emplace_back(name, port);
    if (std::string(name) != "k0") others.emplace_back(name, port);
  }
  ASSERT_TRUE(node.WaitForClients(3)) << node.Logs();
  const auto ready = node.Load(all, 3, 1);  // all three loaded and serving
  ASSERT_EQ(ready.code, 0) << ready.out << ready.err;
  int victim = -1;
  nlohmann::json clients;
  const auto until = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(20));
  while (victim < 0 && std::chrono::steady_clock::now() < until) {
    clients = node.Ctl({"clients"});
    for (const auto& c : clients["clients"])
      if (c["function"] == "k0" && c["state"] == "resident" && !c["holding"].get<bool>())
        victim = c["client"].get<int>();
  }
  ASSERT_GE(victim, 0) << clients.dump();
  // The swap-out order goes out before `evict` answers; at 0.05 GB/s its ~62 MiB take over a
  // second, and the container is killed at once.
  const nlohmann::json evict = node.Ctl({"evict", std::to_string(victim)});
  ASSERT_TRUE(evict.is_object() && evict.value("ok", false)) << evict.dump();
  node.KillContainer("k0");
  ASSERT_TRUE(node.WaitForClients(2)) << node.Logs();
  // It died mid-swap: its swap-out was never acknowledged.
  const std::string acked = "client " + std::to_string(victim) + ": swap-out acknowledged";
  EXPECT_EQ(node.ArbiterLog().find(acked), std::string::npos) << node.ArbiterLog();
  // Nothing of it is left: no client, no orphan holding memory.
  const nlohmann::json status = node.Ctl({"status"});
  ASSERT_TRUE(status.is_object()) << status.dump();
  EXPECT_TRUE(status["orphans"].empty()) << status.dump();
  // Its 300 MiB are released (reserved: at most the two others' quotas, nothing orphaned).
  EXPECT_LE(status["gpus"][0]["reserved_bytes"].get<uint64_t>(), uint64_t{600} << 20) << status.dump();
  EXPECT_EQ(status["gpus"][0]["orphaned_bytes"].get<uint64_t>(), 0u) << status.dump();
  const auto load = node.Load(others, 10, 4);
  EXPECT_EQ(load.code, 0) << load.out << load.err;
  const nlohmann::json summary = node.StopArbiter();
  ASSERT_TRUE(summary.is_object()) << node.ArbiterLog();
  for (const auto& gpu : summary["gpus"]) EXPECT_EQ(gpu["overshoot_events"], 0) << summary.dump();
}

// A container whose image sets CUDA_VISIBLE_DEVICES=1 on a node of two GPUs: its process sees
// GPU 1 as its device 0. Its registration names that device by UUID, and the arbiter places its
// vGPU on GPU 1 and keeps it there (confined; docs/protocol.md, "Which GPU is which"); every
// answer is correct. Before wire version 6 it was registered on GPU 0, the emptiest, while its
// memory went to GPU 1.
TEST(Containers, AContainerSeeingOneGpuIsPlacedOnItAndConfined) {
  ContainerNode node({.devices = "2x512MiB", .link_gbps = "0", .arbiter_args = {"--slice", "5ms"}});
  ASSERT_NODE_READY(node);
  const int port = FreeTcpPort();
  ASSERT_GT(node.StartSample("one", port, "200MiB", ContainerNode::Gshare::kDevice, {"CUDA_VISIBLE_DEVICES=1"}), 0)
      << node.error();
  ASSERT_TRUE(node.WaitForClients(1)) << node.Logs();
  const nlohmann::json reply = node.Ctl({"clients"});
  ASSERT_TRUE(reply.is_object() && reply.contains("clients") && reply["clients"].size() == 1) << reply.dump();
  const nlohmann::json& c = reply["clients"][0];
  EXPECT_EQ(c["gpu"], 1) << reply.dump() << node.Logs();
  EXPECT_EQ(c["confined"], true) << reply.dump();
  const auto load = node.Load({{"one", port}}, 10, 3);
  EXPECT_EQ(load.code, 0) << load.out << load.err << node.ContainerLog("one");
  EXPECT_NE(node.ContainerLog("one").find("this process's devices as the arbiter's GPUs: 0 = GPU 1"),
            std::string::npos)
      << node.ContainerLog("one");
  const nlohmann::json summary = node.StopArbiter();
  ASSERT_TRUE(summary.is_object()) << node.ArbiterLog();
  for (const auto& gpu : summary["gpus"]) EXPECT_EQ(gpu["overshoot_events"], 0) << summary.dump();
}

}  // namespace
}  // namespace gshare::container_test
