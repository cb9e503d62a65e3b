// MPS mode (docs/simcuda.md "MPS mode"): simcuda-mps-control and its clients as real processes,
// each test with a private registry, pipe directory and log directory. Timing checks compare
// simulated durations with bounds far from both outcomes (co-running vs serialised).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using simcuda_test::Child;

// True while `pid` runs (a zombie does not: the daemon is nobody's child and may stay one).
bool Running(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

class Mps : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/simcuda-mps-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    root_ = dir;
    pipe_ = root_ + "/pipe";
    log_ = root_ + "/log";
    static int counter = 0;
    registry_ = "/simcuda-mps-test-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
    env_ = {"SIMCUDA_REGISTRY=" + registry_, "SIMCUDA_TIME_SCALE=1",
            "SIMCUDA_DEVICES=1GiB:mem_gbps=0.1:link_gbps=0", "CUDA_MPS_PIPE_DIRECTORY=" + pipe_,
            "CUDA_MPS_LOG_DIRECTORY=" + log_};
  }
  void TearDown() override {
    for (Child& c : children_) {
      c.Kill(SIGKILL);
      c.Wait();
    }
    StopDaemon();
    shm_unlink(registry_.c_str());
    std::system(("rm -rf " + root_).c_str());
  }

  std::vector<std::string> Env(std::vector<std::string> extra = {}) const {
    std::vector<std::string> all = env_;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  }

  // Starts simcuda-mps-control -d (it returns once the daemon serves); its pid.
  int StartDaemon(std::vector<std::string> extra = {}) {
    Child d = simcuda_test::SpawnProgram(SIMCUDA_TEST_MPS_CONTROL, {"-d"}, Env(std::move(extra)));
    const int status = d.Wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "simcuda-mps-control -d failed";
    std::ifstream state(pipe_ + "/simcuda-mps");
    std::string key;
    daemon_pid_ = 0;
    while (state >> key) {
      if (key == "pid") state >> daemon_pid_;
    }
    EXPECT_GT(daemon_pid_, 0);
    return daemon_pid_;
  }
  void StopDaemon() {
    if (daemon_pid_ <= 0) return;
    kill(daemon_pid_, SIGTERM);
    for (int i = 0; i < 200 && Running(daemon_pid_); ++i) usleep(10000);
    daemon_pid_ = 0;
  }

  // A helper running `script` steps (helper_main.cc), kept until the test ends.
  Child& Script(const std::vector<std::string>& steps, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"script"};
    args.insert(args.end(), steps.begin(), steps.end());
    children_.push_back(simcuda_test::SpawnHelper(args, Env(std::move(extra))));
    return children_.back();
  }
  // Runs `steps` to the end; the lines printed.
  std::vector<std::string> RunScript(const std::vector<std::string>& steps, std::vector<std::string> extra = {}) {
    Child& c = Script(steps, std::move(extra));
    std::vector<std::string> lines;
    for (std::string line; !(line = c.ReadLine()).empty();) lines.push_back(line);
    c.Wait();
    return lines;
  }
  // The control client's output for `commands` (one per line).
  std::string Control(const std::string& commands) {
    const std::string cmd = "printf '" + commands + "' | CUDA_MPS_PIPE_DIRECTORY=" + pipe_ + " " +
                            SIMCUDA_TEST_MPS_CONTROL;
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[256];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
    return out;
  }

  static double Elapsed(const std::string& line) {
    if (line.rfind("elapsed ", 0) != 0) {
      ADD_FAILURE() << "not an elapsed time: " << line;
      return -1;
    }
    return std::atof(line.c_str() + 8);
  }

  // Two clients that start kernel `step` at the same time; their simulated durations.
  std::pair<double, double> Pair(const std::string& step, const std::string& share) {
    std::vector<std::string> steps = {"init", "ctx", "wait", step};
    Child& a = Script(steps, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + share});
    Child& b = Script(steps, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + share});
    for (Child* c : {&a, &b}) {
      EXPECT_EQ(c->ReadLine(), "init CUDA_SUCCESS");
      EXPECT_EQ(c->ReadLine(), "ctx CUDA_SUCCESS");
      EXPECT_EQ(c->ReadLine(), "ready");
    }
    a.Kill(SIGUSR1);
    b.Kill(SIGUSR1);
    return {Elapsed(a.ReadLine()), Elapsed(b.ReadLine())};
  }

  std::string root_, pipe_, log_, registry_;
  std::vector<std::string> env_;
  std::deque<Child> children_;  // references stay valid as children are added
  int daemon_pid_ = 0;
};

// 50 ms of sleep_ns on 132 blocks of 1024 threads: half the SMs of the 132-SM device (d = 0.5).
const std::string kHalfGpuKernel = "sleep:132:50000000";

TEST_F(Mps, EnabledAttributeOnlyWithALiveDaemon) {
  EXPECT_EQ(RunScript({"init", "attr"}), (std::vector<std::string>{"init CUDA_SUCCESS", "mps 0"}));
  StartDaemon();
  EXPECT_EQ(RunScript({"init", "attr"}), (std::vector<std::string>{"init CUDA_SUCCESS", "mps 1"}));
  struct stat st{};
  EXPECT_EQ(stat((log_ + "/control.log").c_str(), &st), 0) << "the daemon writes control.log";
  // A second daemon on the same pipe directory refuses to start.
  Child second = simcuda_test::SpawnProgram(SIMCUDA_TEST_MPS_CONTROL, {"-d"}, Env());
  const int status = second.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  // A daemon serving another registry does not make this process a client.
  EXPECT_EQ(RunScript({"init", "attr"}, {"SIMCUDA_REGISTRY=" + registry_ + "-other"}),
            (std::vector<std::string>{"init CUDA_SUCCESS", "mps 0"}));
  shm_unlink((registry_ + "-other").c_str());
}

TEST_F(Mps, ComputeBoundPairCoRunsOnlyUnderMps) {
  // Without a daemon the two are time-sliced: the second waits for the first.
  auto [alone_a, alone_b] = Pair(kHalfGpuKernel, "50");
  EXPECT_GT(std::max(alone_a, alone_b), 85) << alone_a << " " << alone_b;
  StartDaemon();
  // Each needs half the GPU and gets 50%: together they take the time of one.
  auto [a, b] = Pair(kHalfGpuKernel, "50");
  EXPECT_LT(a, 75);
  EXPECT_LT(b, 75);
  EXPECT_GT(a, 45);
  EXPECT_GT(b, 45);
}

TEST_F(Mps, BandwidthBoundPairIsStretched) {
  StartDaemon();
  // fill_u32 of 1.25 M words (5 MB at 0.1 GB/s: 50 ms alone) on a quarter of the SMs: the SMs
  // suffice for both, the memory bandwidth does not.
  auto [a, b] = Pair("fill:66:1250000", "50");
  EXPECT_GT(a, 80);
  EXPECT_GT(b, 80);
  EXPECT_LT(a, 150);
  EXPECT_LT(b, 150);
}

TEST_F(Mps, ShareCapsALoneClient) {
  StartDaemon();
  // 20 ms on every SM (d = 1): at 25% it takes four times as long.
  const std::vector<std::string> steps = {"init", "ctx", "sleep:264:20000000"};
  std::vector<std::string> full = RunScript(steps);
  std::vector<std::string> quarter = RunScript(steps, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"});
  ASSERT_EQ(full.size(), 3u);
  ASSERT_EQ(quarter.size(), 3u);
  EXPECT_LT(Elapsed(full[2]), 35);
  EXPECT_GT(Elapsed(quarter[2]), 60);
}

TEST_F(Mps, MalformedVariablesFailInit) {
  StartDaemon();
  for (const char* bad : {"0", "101", "fifty", "50%"}) {
    EXPECT_EQ(RunScript({"init"}, {std::string("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=") + bad}),
              std::vector<std::string>{"init CUDA_ERROR_INVALID_VALUE"}) << bad;
  }
  for (const char* bad : {"lots", "0=", "1=1G", "0=1G,x"}) {
    EXPECT_EQ(RunScript({"init"}, {std::string("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=") + bad}),
              std::vector<std::string>{"init CUDA_ERROR_INVALID_VALUE"}) << bad;
  }
  EXPECT_EQ(RunScript({"init"}, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G"}),
            std::vector<std::string>{"init CUDA_SUCCESS"});
}

TEST_F(Mps, MemoryLimitIsEnforced) {
  StartDaemon();
  for (const char* limit : {"0=64M", "64M"}) {
    EXPECT_EQ(RunScript({"init", "ctx", "alloc:33554432", "alloc:33554432", "alloc:4096"},
                        {std::string("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=") + limit}),
              (std::vector<std::string>{"init CUDA_SUCCESS", "ctx CUDA_SUCCESS", "alloc CUDA_SUCCESS",
                                        "alloc CUDA_SUCCESS", "alloc CUDA_ERROR_OUT_OF_MEMORY"}))
        << limit;
  }
}

TEST_F(Mps, ClientLimit) {
  StartDaemon({"SIMCUDA_MPS_MAX_CLIENTS=3"});
  std::vector<Child*> holders;
  for (int i = 0; i < 3; ++i) {
    Child& h = Script({"init", "ctx", "hold"});
    EXPECT_EQ(h.ReadLine(), "init CUDA_SUCCESS");
    EXPECT_EQ(h.ReadLine(), "ctx CUDA_SUCCESS");
    EXPECT_EQ(h.ReadLine(), "holding");
    holders.push_back(&h);
  }
  EXPECT_EQ(RunScript({"init", "ctx"}),
            (std::vector<std::string>{"init CUDA_SUCCESS", "ctx CUDA_ERROR_MPS_MAX_CLIENTS_REACHED"}));
  // A killed client's slot is reclaimed.
  holders[0]->Kill(SIGKILL);
  holders[0]->Wait();
  EXPECT_EQ(RunScript({"init", "ctx"}), (std::vector<std::string>{"init CUDA_SUCCESS", "ctx CUDA_SUCCESS"}));
}

TEST_F(Mps, ContextMemoryGrowsWithShare) {
  StartDaemon();
  auto used = [&](const char* share) {
    std::vector<std::string> lines =
        RunScript({"init", "ctx", "free"}, {std::string("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=") + share});
    EXPECT_EQ(lines.size(), 3u);
    return lines.size() == 3 ? (1ull << 30) - std::stoull(lines[2].substr(5)) : 0;
  };
  EXPECT_EQ(used("100"), 132ull * (2 << 20));  // 2 MiB per SM of the share
  EXPECT_EQ(used("25"), 33ull * (2 << 20));
  // Released with the context: a new process sees the whole device.
  EXPECT_EQ(RunScript({"init", "ctx", "free"}, {"CUDA_MPS_PIPE_DIRECTORY=" + root_ + "/none"}),
            (std::vector<std::string>{"init CUDA_SUCCESS", "ctx CUDA_SUCCESS", "free " + std::to_string(1ull << 30)}));
}

TEST_F(Mps, FaultReachesCoRunnersAndServerRefusesUntilAllExit) {
  StartDaemon();
  Child& victim = Script({"init", "ctx", "sync", "poll"});
  EXPECT_EQ(victim.ReadLine(), "init CUDA_SUCCESS");
  EXPECT_EQ(victim.ReadLine(), "ctx CUDA_SUCCESS");
  EXPECT_EQ(victim.ReadLine(), "sync CUDA_SUCCESS");
  Child& culprit = Script({"init", "ctx", "fault", "sync", "hold"});
  EXPECT_EQ(culprit.ReadLine(), "init CUDA_SUCCESS");
  EXPECT_EQ(culprit.ReadLine(), "ctx CUDA_SUCCESS");
  EXPECT_EQ(culprit.ReadLine(), "fault CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_EQ(culprit.ReadLine(), "sync CUDA_ERROR_ILLEGAL_ADDRESS");  // sticky
  EXPECT_EQ(culprit.ReadLine(), "holding");
  EXPECT_EQ(victim.ReadLine(), "sync CUDA_ERROR_ILLEGAL_ADDRESS");   // the co-runner too
  victim.Wait();
  // The culprit still lives: new clients are refused.
  EXPECT_EQ(RunScript({"init", "ctx"}),
            (std::vector<std::string>{"init CUDA_SUCCESS", "ctx CUDA_ERROR_MPS_SERVER_NOT_READY"}));
  culprit.Kill(SIGKILL);
  culprit.Wait();
  EXPECT_EQ(RunScript({"init", "ctx", "sync"}),
            (std::vector<std::string>{"init CUDA_SUCCESS", "ctx CUDA_SUCCESS", "sync CUDA_SUCCESS"}));
}

TEST_F(Mps, TerminateClientEndsOneClientOnly) {
  const int daemon = StartDaemon();
  Child& a = Script({"init", "ctx", "wait", "sync"});
  Child& b = Script({"init", "ctx", "wait", "sync"});
  for (Child* c : {&a, &b}) {
    EXPECT_EQ(c->ReadLine(), "init CUDA_SUCCESS");
    EXPECT_EQ(c->ReadLine(), "ctx CUDA_SUCCESS");
    EXPECT_EQ(c->ReadLine(), "ready");
  }
  const std::string server = std::to_string(daemon + 1);
  EXPECT_EQ(Control("get_server_list\\n"), server + "\n");
  const std::string clients = Control("get_client_list " + server + "\\n");
  EXPECT_NE(clients.find(std::to_string(a.pid) + "\n"), std::string::npos) << clients;
  EXPECT_NE(clients.find(std::to_string(b.pid) + "\n"), std::string::npos) << clients;
  EXPECT_EQ(Control("terminate_client " + server + " " + std::to_string(a.pid) + "\\n"), "");
  EXPECT_NE(Control("terminate_client " + server + " 1\\n").find("ERROR"), std::string::npos);
  a.Kill(SIGUSR1);
  b.Kill(SIGUSR1);
  EXPECT_EQ(a.ReadLine(), "sync CUDA_ERROR_MPS_CLIENT_TERMINATED");
  EXPECT_EQ(b.ReadLine(), "sync CUDA_SUCCESS");
}

TEST_F(Mps, KilledDaemonFailsItsClientsAndNewProcessesRunTimeSliced) {
  const int daemon = StartDaemon();
  Child& a = Script({"init", "ctx", "sync", "poll"});
  EXPECT_EQ(a.ReadLine(), "init CUDA_SUCCESS");
  EXPECT_EQ(a.ReadLine(), "ctx CUDA_SUCCESS");
  EXPECT_EQ(a.ReadLine(), "sync CUDA_SUCCESS");
  kill(daemon, SIGKILL);
  daemon_pid_ = 0;
  EXPECT_EQ(a.ReadLine(), "sync CUDA_ERROR_MPS_CONNECTION_FAILED");
  // New processes: no live daemon (its lock died with it), so time-sliced, and the share ignored.
  EXPECT_EQ(RunScript({"init", "attr", "ctx", "sleep:264:20000000"}, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"})
                .at(1),
            "mps 0");
  std::vector<std::string> lines =
      RunScript({"init", "ctx", "sleep:264:20000000"}, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_LT(Elapsed(lines[2]), 35);
}

// NVIDIA's MPS server remaps the devices of its control daemon's CUDA_VISIBLE_DEVICES: a client
// sees those alone, numbered from 0, and what it does on its device 0 happens on the GPU the
// daemon serves (registry device 1 here), as a process outside MPS sees it.
TEST_F(Mps, AClientSeesOnlyTheDaemonsDevicesNumberedFromZero) {
  const std::string two = "SIMCUDA_DEVICES=2x1GiB:mem_gbps=0.1:link_gbps=0";
  StartDaemon({two, "CUDA_VISIBLE_DEVICES=1"});
  const std::vector<std::string> outside = {two, "CUDA_MPS_PIPE_DIRECTORY=" + root_ + "/none"};
  const std::vector<std::string> seen = RunScript({"init", "count", "uuid:1", "ctx:1", "free"}, outside);
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[1], "count 2");
  const std::string gpu1 = seen[2];
  ASSERT_EQ(gpu1.size(), 5u + 32u) << gpu1;
  const std::string free_before = seen[4];

  Child& client = Script({"init", "count", "attr", "uuid:0", "uuid:1", "ctx:0", "alloc:268435456", "hold"}, {two});
  EXPECT_EQ(client.ReadLine(), "init CUDA_SUCCESS");
  EXPECT_EQ(client.ReadLine(), "count 1");
  EXPECT_EQ(client.ReadLine(), "mps 1");
  EXPECT_EQ(client.ReadLine(), gpu1);  // its device 0 is registry device 1
  EXPECT_EQ(client.ReadLine(), "uuid CUDA_ERROR_INVALID_DEVICE");
  EXPECT_EQ(client.ReadLine(), "ctx CUDA_SUCCESS");
  EXPECT_EQ(client.ReadLine(), "alloc CUDA_SUCCESS");
  EXPECT_EQ(client.ReadLine(), "holding");

  // The 256 MiB (and the client's context memory) are on registry device 1, not on device 0.
  const std::vector<std::string> after =
      RunScript({"init", "ctx:1", "free", "ctx:0", "free"}, outside);
  ASSERT_EQ(after.size(), 5u);
  const long long before1 = std::atoll(free_before.c_str() + 5);
  const long long after1 = std::atoll(after[2].c_str() + 5);
  EXPECT_LE(after1, before1 - (256LL << 20)) << free_before << " -> " << after[2];
  EXPECT_EQ(after[4], "free " + std::to_string(1LL << 30));
}

// A process outside MPS sees the devices CUDA_VISIBLE_DEVICES names, numbered from 0 in the
// list's order, as NVIDIA's driver shows them: the list ends at its first entry that is not an
// ordinal (or repeats one), and a list that names none leaves no device (cuInit fails).
TEST_F(Mps, CudaVisibleDevicesChoosesAndRenumbersTheDevicesOutsideMps) {
  const std::string two = "SIMCUDA_DEVICES=2x1GiB:mem_gbps=0.1:link_gbps=0";
  const std::string no_mps = "CUDA_MPS_PIPE_DIRECTORY=" + root_ + "/none";
  const std::vector<std::string> all = RunScript({"init", "count", "uuid:0", "uuid:1"}, {two, no_mps});
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[1], "count 2");
  EXPECT_EQ(RunScript({"init", "count", "uuid:0", "uuid:1"}, {two, no_mps, "CUDA_VISIBLE_DEVICES=1,0"}),
            (std::vector<std::string>{"init CUDA_SUCCESS", "count 2", all[3], all[2]}));
  EXPECT_EQ(RunScript({"init", "count", "uuid:0", "uuid:1"}, {two, no_mps, "CUDA_VISIBLE_DEVICES=1,7,0"}),
            (std::vector<std::string>{"init CUDA_SUCCESS", "count 1", all[3], "uuid CUDA_ERROR_INVALID_DEVICE"}));
  EXPECT_EQ(RunScript({"init", "count", "uuid:0"}, {two, no_mps, "CUDA_VISIBLE_DEVICES=1,1"}),
            (std::vector<std::string>{"init CUDA_SUCCESS", "count 1", all[3]}));
  EXPECT_EQ(RunScript({"init"}, {two, no_mps, "CUDA_VISIBLE_DEVICES=9"}),
            (std::vector<std::string>{"init CUDA_ERROR_NO_DEVICE"}));
  EXPECT_EQ(RunScript({"init"}, {two, no_mps, "CUDA_VISIBLE_DEVICES="}),
            (std::vector<std::string>{"init CUDA_ERROR_NO_DEVICE"}));
  // Its device 0's memory is registry device 1's.
  const std::vector<std::string> before = RunScript({"init", "ctx:1", "free"}, {two, no_mps});
  Child& one = Script({"init", "ctx:0", "alloc:268435456", "hold"}, {two, no_mps, "CUDA_VISIBLE_DEVICES=1"});
  EXPECT_EQ(one.ReadLine(), "init CUDA_SUCCESS");
  EXPECT_EQ(one.ReadLine(), "ctx CUDA_SUCCESS");
  EXPECT_EQ(one.ReadLine(), "alloc CUDA_SUCCESS");
  EXPECT_EQ(one.ReadLine(), "holding");
  const std::vector<std::string> after = RunScript({"init", "ctx:1", "free", "ctx:0", "free"}, {two, no_mps});
  ASSERT_EQ(before.size(), 3u);
  ASSERT_EQ(after.size(), 5u);
  EXPECT_LE(std::atoll(after[2].c_str() + 5), std::atoll(before[2].c_str() + 5) - (256LL << 20));
  EXPECT_EQ(after[4], "free " + std::to_string(1LL << 30));
}

TEST_F(Mps, QuitStopsTheDaemon) {
  StartDaemon();
  EXPECT_EQ(Control("quit\\n"), "");
  for (int i = 0; i < 200 && Running(daemon_pid_); ++i) usleep(10000);
  EXPECT_FALSE(Running(daemon_pid_));
  daemon_pid_ = 0;
  EXPECT_EQ(RunScript({"init", "attr"}), (std::vector<std::string>{"init CUDA_SUCCESS", "mps 0"}));
}

}  // namespace
