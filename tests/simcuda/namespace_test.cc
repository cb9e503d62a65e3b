// simcuda for processes in pid, ipc and mount namespaces of their own, as a container runs
// them: a helper process is started as pid 1 of a new pid namespace, with a private /dev/shm and
// its own /proc and its own network namespace, and sees the node's simulated GPUs only through a
// directory mounted into it (SIMCUDA_DIR). Its device memory counts on the node's GPUs, other
// processes attaching do not take it for dead, and this process checkpoints, moves and restores
// it by its host pid (the pid the arbiter, like the real driver, names processes by).
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using NamespaceTest = simcuda_test::DriverTest;
using simcuda_test::FreeOn;

// Writes `text` to `path` (uid_map and friends); false on failure.
bool WriteFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// A helper running as pid 1 of its own pid namespace, started through an intermediate process
// (`via`: this process's child, which reports the helper's host pid, passes its output on and
// mirrors its exit status).
struct ContainedHelper {
  pid_t host_pid = -1;  // as this process's namespace names it
  simcuda_test::Child via;
  std::string error;    // why it could not start

  std::string ReadLine() { return via.ReadLine(); }
  int Wait() { return via.Wait(); }
  ~ContainedHelper() {
    if (host_pid > 0 && via.pid > 0) kill(host_pid, SIGKILL);
    via.Wait();
  }
};

// Starts simcuda_test_helper `args` in new pid and mount namespaces (a user namespace too when
// this process is not root) with a fresh tmpfs on /dev/shm and /proc of its pid namespace; the
// node's /dev/shm is mounted at `node_dir` and named by SIMCUDA_DIR.
void StartContained(const std::vector<std::string>& args, const std::string& node_dir, ContainedHelper* h) {
  int out[2], report[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(report, O_CLOEXEC), 0);
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  const pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    auto fail = [&](const char* what) {
      char msg[256];
      const int n = std::snprintf(msg, sizeof msg, "-1 %s: %s\n", what, std::strerror(errno));
      (void)!write(report[1], msg, static_cast<size_t>(n));
      _exit(120);
    };
    int flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET;
    if (uid != 0) flags |= CLONE_NEWUSER;
    if (unshare(flags) != 0) fail("unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET)");
    if (uid != 0 && (!WriteFile("/proc/self/setgroups", "deny") ||
                     !WriteFile("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
                     !WriteFile("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"))) {
      fail("user namespace maps");
    }
    const pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) {  // pid 1 of the new namespace
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(121);
      if (mount("/dev/shm", node_dir.c_str(), nullptr, MS_BIND, nullptr) != 0) _exit(122);
      if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) _exit(123);
      if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) _exit(124);
      dup2(out[1], STDOUT_FILENO);
      setenv("SIMCUDA_DIR", node_dir.c_str(), 1);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(SIMCUDA_TEST_HELPER));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(SIMCUDA_TEST_HELPER, argv.data());
      _exit(127);
    }
    const std::string line = std::to_string(child) + "\n";
    (void)!write(report[1], line.data(), line.size());
    close(out[1]);
    int status = 0;
    waitpid(child, &status, 0);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  close(out[1]);
  close(report[1]);
  h->via.pid = parent;
  h->via.out_fd = out[0];
  std::string line;
  char c;
  while (read(report[0], &c, 1) == 1 && c != '\n') line += c;
  close(report[0]);
  h->host_pid = std::atoi(line.c_str());
  if (h->host_pid <= 0) {
    h->host_pid = -1;
    h->error = line.empty() ? "the namespace's first process did not start" : line.substr(line.find(' ') + 1);
  }
}

// A directory for the node's /dev/shm to be mounted at inside the namespaces.
std::string MakeNodeDir() {
  char tmpl[] = "/tmp/simcuda-node-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  return dir != nullptr ? dir : "";
}

TEST_F(NamespaceTest, ContainedProcessSharesTheNodesGpusAndIsCheckpointedByItsHostPid) {
  const std::string node = MakeNodeDir();
  ASSERT_FALSE(node.empty());
  CUdeviceptr mine = 0;  // this process's own memory must not be taken for a dead process's
  ASSERT_CU(cuMemAlloc(&mine, 16u << 20));
  const size_t free0 = FreeOn(0), free1 = FreeOn(1);

  ContainedHelper target;
  StartContained({"checkpoint-target"}, node, &target);
  ASSERT_GT(target.host_pid, 0) << "cannot start a process in namespaces of its own: " << target.error;
  ASSERT_EQ(target.ReadLine(), "ready");
  const size_t held = (8u << 20) + (4u << 20);
  // One set of GPUs for the node: the contained process's memory is on this process's devices.
  EXPECT_EQ(free0 - FreeOn(0), held);
  // A process attaching afterwards (it reclaims dead processes' slots) leaves both alone.
  EXPECT_EQ(simcuda_test::RunHelper({"alloc", "4096", "0"}), 0);
  EXPECT_EQ(free0 - FreeOn(0), held);

  // The checkpoint API takes the host pid.
  CUprocessState state = CU_PROCESS_STATE_FAILED;
  ASSERT_CU(cuCheckpointProcessGetState(target.host_pid, &state));
  EXPECT_EQ(state, CU_PROCESS_STATE_RUNNING);
  CUcheckpointLockArgs lock{};
  lock.timeoutMs = 10000;
  ASSERT_CU(cuCheckpointProcessLock(target.host_pid, &lock));
  ASSERT_CU(cuCheckpointProcessCheckpoint(target.host_pid, nullptr));
  EXPECT_EQ(FreeOn(0), free0);  // its device memory released on the node's GPU
  CUcheckpointGpuPair pair{};
  ASSERT_CU(cuDeviceGetUuid(&pair.oldUuid, 0));
  ASSERT_CU(cuDeviceGetUuid(&pair.newUuid, 1));
  CUcheckpointRestoreArgs restore{};
  restore.gpuPairs = &pair;
  restore.gpuPairsCount = 1;
  ASSERT_CU(cuCheckpointProcessRestore(target.host_pid, &restore));
  EXPECT_EQ(free1 - FreeOn(1), held);  // moved to the node's GPU 1
  ASSERT_CU(cuCheckpointProcessUnlock(target.host_pid, nullptr));
  kill(target.host_pid, SIGUSR1);
  EXPECT_EQ(target.ReadLine(), "verified 1 1");
  const int status = target.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(FreeOn(1), free1);
  EXPECT_CU(cuMemFree(mine));
  rmdir(node.c_str());
}

TEST_F(NamespaceTest, KilledContainedProcessIsReclaimedOnTheNodesGpus) {
  const std::string node = MakeNodeDir();
  ASSERT_FALSE(node.empty());
  ASSERT_EQ(simcuda_test::RunHelper({"alloc", "4096", "0"}), 0);  // reclaims what others left
  const size_t free0 = FreeOn(0);
  ContainedHelper holder;
  StartContained({"hold", std::to_string(64u << 20), "0"}, node, &holder);
  ASSERT_GT(holder.host_pid, 0) << "cannot start a process in namespaces of its own: " << holder.error;
  ASSERT_EQ(holder.ReadLine().rfind("ready", 0), 0u);
  EXPECT_EQ(free0 - FreeOn(0), size_t{64} << 20);
  kill(holder.host_pid, SIGKILL);
  holder.Wait();
  EXPECT_EQ(simcuda_test::RunHelper({"alloc", "4096", "0"}), 0);  // attaching reclaims it
  EXPECT_EQ(FreeOn(0), free0);
  rmdir(node.c_str());
}

}  // namespace
