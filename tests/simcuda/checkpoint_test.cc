// Tests of the process checkpoint API driven from this process on a helper process: lock
// (blocks the target's driver calls), checkpoint (device capacity released), restore onto the
// other simulated GPU (accounting moves; every byte preserved at the same addresses), unlock;
// calls on a stopped target time out.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>

#include "test_util.h"

namespace {

using CheckpointTest = simcuda_test::DriverTest;
using simcuda_test::FreeOn;

bool Readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) > 0;
}

CUprocessState State(int pid) {
  CUprocessState st = CU_PROCESS_STATE_FAILED;
  EXPECT_CU(cuCheckpointProcessGetState(pid, &st));
  return st;
}

TEST_F(CheckpointTest, CheckpointAndRestoreOntoTheOtherGpuPreservesEveryByte) {
  size_t free0 = FreeOn(0), free1 = FreeOn(1);
  simcuda_test::Child target = simcuda_test::SpawnHelper({"checkpoint-target"});
  ASSERT_EQ(target.ReadLine(), "ready");
  const size_t held = (8u << 20) + (4u << 20);
  EXPECT_EQ(free0 - FreeOn(0), held);
  EXPECT_EQ(State(target.pid), CU_PROCESS_STATE_RUNNING);
  int tid = 0;
  ASSERT_CU(cuCheckpointProcessGetRestoreThreadId(target.pid, &tid));
  EXPECT_GT(tid, 0);

  CUcheckpointLockArgs lock{};
  lock.timeoutMs = 10000;
  ASSERT_CU(cuCheckpointProcessLock(target.pid, &lock));
  EXPECT_EQ(State(target.pid), CU_PROCESS_STATE_LOCKED);
  target.Kill(SIGUSR1);  // the target now calls cuMemcpyDtoH, which must block
  EXPECT_FALSE(Readable(target.out_fd, 200));

  ASSERT_CU(cuCheckpointProcessCheckpoint(target.pid, nullptr));
  EXPECT_EQ(State(target.pid), CU_PROCESS_STATE_CHECKPOINTED);
  EXPECT_EQ(FreeOn(0), free0);  // all device memory released

  CUcheckpointGpuPair pair{};
  ASSERT_CU(cuDeviceGetUuid(&pair.oldUuid, 0));
  ASSERT_CU(cuDeviceGetUuid(&pair.newUuid, 1));
  CUcheckpointRestoreArgs restore{};
  restore.gpuPairs = &pair;
  restore.gpuPairsCount = 1;
  ASSERT_CU(cuCheckpointProcessRestore(target.pid, &restore));
  EXPECT_EQ(State(target.pid), CU_PROCESS_STATE_LOCKED);
  EXPECT_EQ(FreeOn(0), free0);
  EXPECT_EQ(free1 - FreeOn(1), held);  // the accounting moved to GPU 1
  EXPECT_FALSE(Readable(target.out_fd, 50));

  ASSERT_CU(cuCheckpointProcessUnlock(target.pid, nullptr));
  EXPECT_EQ(target.ReadLine(), "verified 1 1");
  int status = target.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(FreeOn(1), free1);
}

TEST_F(CheckpointTest, StateMachineAndBadTargets) {
  EXPECT_CU_ERR(cuCheckpointProcessLock(0x7ffffff0, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUprocessState st;
  EXPECT_CU_ERR(cuCheckpointProcessGetState(0x7ffffff0, &st), CUDA_ERROR_INVALID_VALUE);
  simcuda_test::Child target = simcuda_test::SpawnHelper({"checkpoint-target"});
  ASSERT_EQ(target.ReadLine(), "ready");
  EXPECT_CU_ERR(cuCheckpointProcessUnlock(target.pid, nullptr), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_CU_ERR(cuCheckpointProcessCheckpoint(target.pid, nullptr), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_CU_ERR(cuCheckpointProcessRestore(target.pid, nullptr), CUDA_ERROR_ILLEGAL_STATE);
  ASSERT_CU(cuCheckpointProcessLock(target.pid, nullptr));
  EXPECT_CU_ERR(cuCheckpointProcessLock(target.pid, nullptr), CUDA_ERROR_ILLEGAL_STATE);
  ASSERT_CU(cuCheckpointProcessCheckpoint(target.pid, nullptr));
  EXPECT_CU_ERR(cuCheckpointProcessUnlock(target.pid, nullptr), CUDA_ERROR_ILLEGAL_STATE);
  ASSERT_CU(cuCheckpointProcessRestore(target.pid, nullptr));  // same GPU
  ASSERT_CU(cuCheckpointProcessUnlock(target.pid, nullptr));
  target.Kill(SIGUSR1);
  EXPECT_EQ(target.ReadLine(), "verified 0 0");
  target.Wait();
}

// A stopped target cannot answer: the calls return CUDA_ERROR_TIMEOUT instead of blocking the
// caller (the arbiter asks for process states from its event loop), the target skips the
// requests its callers gave up on (the Lock below must not lock it once it runs again), and the
// API works again after SIGCONT.
TEST_F(CheckpointTest, StoppedTargetTimesOutAndAnswersAgainAfterSigcont) {
  simcuda_test::Child target = simcuda_test::SpawnHelper({"checkpoint-target"});
  ASSERT_EQ(target.ReadLine(), "ready");
  ASSERT_EQ(State(target.pid), CU_PROCESS_STATE_RUNNING);
  // Whatever fails below, the target does not outlive the test (stopped or locked).
  std::shared_ptr<void> reap(nullptr, [&target](void*) {
    if (target.pid > 0 && kill(target.pid, 0) == 0) {
      target.Kill(SIGKILL);
      target.Wait();
    }
  });
  target.Kill(SIGSTOP);
  int wstatus = 0;
  ASSERT_EQ(waitpid(target.pid, &wstatus, WUNTRACED), target.pid);  // it is stopped now
  ASSERT_TRUE(WIFSTOPPED(wstatus));
  // Safety net only (a call that blocks forever fails here instead of hanging the suite).
  auto bounded = [](auto call) {
    auto f = std::async(std::launch::async, call);
    EXPECT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the call did not return";
    return f.get();
  };
  CUprocessState st = CU_PROCESS_STATE_FAILED;
  EXPECT_CU_ERR(bounded([&] { return cuCheckpointProcessGetState(target.pid, &st); }), CUDA_ERROR_TIMEOUT);
  int tid = 0;
  EXPECT_CU_ERR(bounded([&] { return cuCheckpointProcessGetRestoreThreadId(target.pid, &tid); }),
                CUDA_ERROR_TIMEOUT);
  EXPECT_CU_ERR(bounded([&] { return cuCheckpointProcessUnlock(target.pid, nullptr); }), CUDA_ERROR_TIMEOUT);
  CUcheckpointLockArgs lock{};
  lock.timeoutMs = 200;
  EXPECT_CU_ERR(bounded([&] { return cuCheckpointProcessLock(target.pid, &lock); }), CUDA_ERROR_TIMEOUT);

  target.Kill(SIGCONT);
  EXPECT_EQ(State(target.pid), CU_PROCESS_STATE_RUNNING);  // the stale Lock was skipped
  lock.timeoutMs = 10000;
  ASSERT_CU(cuCheckpointProcessLock(target.pid, &lock));
  EXPECT_EQ(State(target.pid), CU_PROCESS_STATE_LOCKED);
  ASSERT_CU(cuCheckpointProcessUnlock(target.pid, nullptr));
  target.Kill(SIGUSR1);
  EXPECT_EQ(target.ReadLine(), "verified 0 0");
  wstatus = target.Wait();
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
}

}  // namespace
