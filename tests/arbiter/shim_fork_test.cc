// fork() under the real shim with a real gshare-arbiter on simcuda (issue 16, item 8): a
// registered program (tests/preload's preload_probe, "fork-helper" mode) forks a helper child.
// The child must hold nothing of its parent's registration — no registration socket, no
// channel mapping or memfd, no doorbell — so a killed parent is unregistered (its reservation
// released) while the child lives on; a child that uses CUDA registers as itself (its own pid);
// a child that execs inherits no descriptor of the shim at all (close-on-exec). The child-side
// facts are read from /proc/<child>/fd and /proc/<child>/maps.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "gshare/arbiter/control_client.h"
#include "shim_test_env.h"
#include "test_util.h"

namespace gshare::arbiter::testing {
namespace {

using std::chrono::milliseconds;

// What one process holds, read from /proc.
struct Holdings {
  std::set<std::string> sockets;  // "socket:[inode]" -> the inode
  int channel_fds = 0;            // memfd:gshare-channel-*
  int eventfds = 0;               // anon_inode:[eventfd] (the doorbell)
  int channel_maps = 0;           // mappings of memfd:gshare-channel-*
  std::vector<std::string> targets;  // every fd's link target
};

Holdings Read(pid_t pid) {
  Holdings h;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(fd_dir, ec)) {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(entry.path().c_str(), buf, sizeof(buf) - 1);
    if (n <= 0) continue;
    const std::string target(buf, static_cast<size_t>(n));
    h.targets.push_back(target);
    if (target.rfind("socket:[", 0) == 0) h.sockets.insert(target.substr(8, target.size() - 9));
    if (target.find("memfd:gshare-channel") != std::string::npos) ++h.channel_fds;
    if (target == "anon_inode:[eventfd]") ++h.eventfds;
  }
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("memfd:gshare-channel") != std::string::npos) ++h.channel_maps;
  }
  return h;
}

// Unix sockets by inode: their path ("" if none) from /proc/net/unix.
std::map<std::string, std::string> UnixSocketPaths() {
  std::map<std::string, std::string> out;
  std::ifstream in("/proc/net/unix");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string num, refs, proto, flags, type, st, inode, path;
    fields >> num >> refs >> proto >> flags >> type >> st >> inode >> path;
    out[inode] = path;
  }
  return out;
}

// The sockets `child` shares with `parent`, except simcuda's own checkpoint listener (the
// simulated driver's, which it replaces when the child first calls it): "inode path" each.
std::vector<std::string> SharedShimSockets(const Holdings& parent, const Holdings& child) {
  const auto paths = UnixSocketPaths();
  std::vector<std::string> shared;
  for (const std::string& inode : child.sockets) {
    if (parent.sockets.count(inode) == 0) continue;
    const auto it = paths.find(inode);
    const std::string path = it == paths.end() ? "?" : it->second;
    if (path.find("simcuda-ckpt") != std::string::npos) continue;
    shared.push_back(inode + " " + path);
  }
  return shared;
}

std::string Describe(const Holdings& h) {
  std::string out;
  for (const std::string& t : h.targets) out += "  " + t + "\n";
  return out + "  channel mappings: " + std::to_string(h.channel_maps) + "\n";
}

bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

class ShimFork : public ::testing::Test {
 protected:
  ShimFork() : simcuda(::testing::UnitTest::GetInstance()->current_test_info()->name()) {}
  void SetUp() override {
    arb.env = simcuda.env();
    ASSERT_TRUE(arb.Start()) << ReadFile(arb.log());
  }
  void TearDown() override {
    for (pid_t pid : helpers) ::kill(pid, SIGKILL);  // reparented: reaped by init
  }

  nlohmann::json Control(const std::string& cmd) {
    auto reply = ControlCall(dir / "control.sock", {{"cmd", cmd}}, std::chrono::seconds(10));
    return reply.ok() ? *reply : nlohmann::json();
  }
  // The registered clients' pids.
  std::multiset<int> ClientPids() {
    std::multiset<int> pids;
    const nlohmann::json reply = Control("clients");
    if (reply.contains("clients")) {
      for (const auto& c : reply["clients"]) pids.insert(c["pid"].get<int>());
    }
    return pids;
  }
  // Polls until `pred` holds (safety net, scaled; not a measurement).
  template <typename Pred>
  bool Eventually(Pred pred, std::chrono::seconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return true;
  }

  // Starts `preload_probe fork-helper <child_does>` (768 MiB) and reads its pids.
  bool StartProbe(const std::string& child_does, std::vector<std::string> extra_env = {}) {
    log = dir / "probe.log";
    std::vector<std::string> env = ShimEnv(simcuda, arb.socket(), "768MiB", "forker", log);
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    probe = std::make_unique<test::ChildProcess>(
        std::vector<std::string>{PROBE_BIN, "fork-helper", child_does}, EnvMap(env));
    if (!probe->started()) return false;
    bool ready = false;
    std::string line;
    while (!(parent > 0 && child > 0 && ready) && probe->ReadLine(&line, LineWait())) {
      const std::string key = line.substr(0, line.find('='));
      const std::string value = line.substr(line.find('=') + 1);
      if (key == "parent_pid") parent = std::atoi(value.c_str());
      if (key == "child_pid") child = std::atoi(value.c_str());
      if (key == "child_ready") ready = true;
      kv[key] = value;
      if (child > 0 && helpers.empty()) helpers.push_back(child);
    }
    return parent > 0 && child > 0 && ready;
  }
  // SIGKILL the probe's parent process and reap it.
  void KillParent() {
    ::kill(parent, SIGKILL);
    (void)probe->Wait(ExitWait());
  }

  TempDir dir;
  const Simcuda simcuda;
  ArbiterProcess arb{dir, {"--slice", "5ms"}};
  std::unique_ptr<test::ChildProcess> probe;
  std::string log;
  pid_t parent = -1;
  pid_t child = -1;
  std::map<std::string, std::string> kv;
  std::vector<pid_t> helpers;
};

// The 16-second story: a function forks a helper and is killed. The child's copy of the
// registration is gone at once (closed in the shim's atfork child handler), so the arbiter
// unregisters the parent and releases its 768 MiB while the child still lives.
TEST_F(ShimFork, KilledParentIsUnregisteredWhileItsForkedChildLives) {
  ASSERT_TRUE(StartProbe("sleep", {"GSHARE_CONTROL_SOCKET=" + dir / "shim-%p.sock"}))
      << ReadFile(log);
  ASSERT_TRUE(Eventually([&] { return ClientPids().count(parent) == 1; })) << ReadFile(arb.log());
  const Holdings p = Read(parent);
  const Holdings c = Read(child);
  // The parent's own registration, as a reference for what the child must not hold.
  ASSERT_EQ(p.channel_maps, 1) << Describe(p);
  ASSERT_GE(p.eventfds, 1) << Describe(p);
  EXPECT_EQ(SharedShimSockets(p, c), std::vector<std::string>{})
      << "the child holds its parent's sockets\nchild:\n" << Describe(c);
  EXPECT_EQ(c.channel_maps, 0) << "the parent's channel is mapped in the child\n" << Describe(c);
  EXPECT_EQ(c.channel_fds, 0) << Describe(c);
  EXPECT_EQ(c.eventfds, 0) << "the parent's doorbell is open in the child\n" << Describe(c);
  EXPECT_EQ(ClientPids().count(child), 0u);

  KillParent();
  EXPECT_TRUE(Eventually([&] { return ClientPids().count(parent) == 0; }))
      << "the killed parent is still registered\n" << ReadFile(arb.log());
  EXPECT_TRUE(Eventually([&] {
    const nlohmann::json status = Control("status");
    return status.contains("gpus") && status["gpus"][0]["reserved_bytes"].get<uint64_t>() == 0;
  })) << Control("status").dump();
  EXPECT_TRUE(Alive(child)) << "the helper child died with its parent";
}

// A forked child that uses CUDA is a fresh process to the shim: it registers as a client of
// its own with its own pid, beside its parent, and holds only its own registration.
TEST_F(ShimFork, ForkedChildThatUsesCudaRegistersAsItself) {
  ASSERT_TRUE(StartProbe("cuda")) << ReadFile(log);
  EXPECT_EQ(kv["child_init"], "0") << ReadFile(log);
  EXPECT_EQ(kv["child_alloc"], "0") << ReadFile(log);
  ASSERT_TRUE(Eventually([&] {
    const auto pids = ClientPids();
    return pids.count(parent) == 1 && pids.count(child) == 1;
  })) << Control("clients").dump() << ReadFile(log);
  EXPECT_EQ(ClientPids().size(), 2u) << Control("clients").dump();
  const Holdings p = Read(parent);
  const Holdings c = Read(child);
  EXPECT_EQ(SharedShimSockets(p, c), std::vector<std::string>{})
      << "the child holds its parent's sockets\nchild:\n" << Describe(c);
  EXPECT_EQ(c.channel_maps, 1) << "the child maps more than its own channel\n" << Describe(c);
  EXPECT_EQ(c.channel_fds, 1) << Describe(c);

  KillParent();
  EXPECT_TRUE(Eventually([&] {
    const auto pids = ClientPids();
    return pids.count(parent) == 0 && pids.count(child) == 1;
  })) << Control("clients").dump() << ReadFile(arb.log());
  ::kill(child, SIGKILL);
  EXPECT_TRUE(Eventually([&] { return ClientPids().empty(); })) << Control("clients").dump();
}

// A child that execs another program inherits no descriptor of the shim: the registration
// socket, the channel, the doorbell, the control socket and the log file are close-on-exec.
TEST_F(ShimFork, ExecedChildInheritsNoShimDescriptor) {
  ASSERT_TRUE(StartProbe("exec", {"GSHARE_CONTROL_SOCKET=" + dir / "shim-%p.sock"}))
      << ReadFile(log);
  ASSERT_TRUE(Eventually([&] {
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/" + std::to_string(child) + "/exe", ec)
               .filename() == "sleep";
  })) << "the child did not exec";
  const Holdings p = Read(parent);
  const Holdings c = Read(child);
  EXPECT_EQ(SharedShimSockets(p, c), std::vector<std::string>{}) << Describe(c);
  EXPECT_EQ(c.channel_maps + c.channel_fds + c.eventfds, 0) << Describe(c);
  for (const std::string& target : c.targets) EXPECT_NE(target, log) << Describe(c);
  // The parent does hold the log file (the check above is not vacuous).
  bool parent_has_log = false;
  for (const std::string& target : p.targets) parent_has_log |= target == log;
  EXPECT_TRUE(parent_has_log) << Describe(p);
}

}  // namespace
}  // namespace gshare::arbiter::testing
