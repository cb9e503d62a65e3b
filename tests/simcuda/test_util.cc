// Implementation of the test helpers (see test_util.h).
#include "test_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace simcuda_test {

void DriverTest::SetUp() {
  ASSERT_CU(cuInit(0));
  ASSERT_CU(cuDeviceGet(&dev_, 0));
  ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx_, dev_));
  ASSERT_CU(cuCtxSetCurrent(ctx_));
}

void DriverTest::TearDown() {
  if (ctx_ != nullptr) {
    EXPECT_CU(cuCtxSynchronize());
    EXPECT_CU(cuDevicePrimaryCtxRelease(dev_));
    cuCtxSetCurrent(nullptr);
  }
}

size_t FreeOn(int device) {
  CUcontext c;
  cuDevicePrimaryCtxRetain(&c, device);
  cuCtxPushCurrent(c);
  size_t free = 0, total = 0;
  cuMemGetInfo(&free, &total);
  cuCtxPopCurrent(&c);
  cuDevicePrimaryCtxRelease(device);
  return free;
}

std::string Child::ReadLine() {
  std::string line;
  char c;
  while (read(out_fd, &c, 1) == 1) {
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

int Child::Wait() {
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  pid = -1;
  if (out_fd >= 0) close(out_fd);
  out_fd = -1;
  return status;
}

void Child::Kill(int sig) {
  if (pid > 0) kill(pid, sig);
}

Child SpawnHelper(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
  return SpawnProgram(SIMCUDA_TEST_HELPER, args, extra_env);
}

Child SpawnProgram(const std::string& path, const std::vector<std::string>& args,
                   const std::vector<std::string>& extra_env) {
  int fds[2];
  Child child;
  if (pipe(fds) != 0) return child;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    for (const std::string& kv : extra_env) putenv(strdup(kv.c_str()));
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(path.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  child.pid = pid;
  child.out_fd = fds[0];
  return child;
}

int RunHelper(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
  Child c = SpawnHelper(args, extra_env);
  int status = c.Wait();
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace simcuda_test
