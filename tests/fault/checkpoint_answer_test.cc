// The arbiter's process checkpoint calls (arbiter/src/driver.h, DriverLib) when a call's answer
// was lost: simcuda bounds every cuCheckpointProcess* call (the reply bound, 1 s for Unlock and
// GetState), so on a loaded node an answer can come after its caller stopped waiting. The call
// may still have happened (a lock, a checkpoint, a restore) or been skipped (an unlock the target
// reached after its caller hung up), and the process is left locked or checkpointed where the
// arbiter believes otherwise. Each test puts an unmodified CUDA program (fault_worker, no shim)
// into the state such a lost answer leaves, with the raw entry points, then makes the call the
// arbiter makes next (its retry), and checks that the process runs again with every byte intact.
// Before the fix each retry failed for the state (CUDA_ERROR_ILLEGAL_STATE) for ever: a deep-
// evicted function waited for its grant for ever (ArbiterProcess.LongIdle...: the restore's
// unlock), or blocked in its next driver call (a lock).
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "driver.h"
#include "fault_env.h"

namespace gshare::fault {
namespace {

using arbiter::DeviceOrdinal;
using arbiter::DriverLib;
using arbiter::testing::ExitCode;
using arbiter::testing::ReadFile;
using arbiter::testing::WaitFor;

// The raw entry points of the driver DriverLib loaded (the same library handle).
struct RawCheckpoint {
  CUresult (*lock)(int, CUcheckpointLockArgs*) = nullptr;
  CUresult (*checkpoint)(int, CUcheckpointCheckpointArgs*) = nullptr;
  CUresult (*restore)(int, CUcheckpointRestoreArgs*) = nullptr;
};

class CheckpointAnswerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // This process calls the driver as the arbiter does: simcuda with the node's registry.
    for (const std::string& kv : node_.SimcudaEnv()) {
      const auto eq = kv.find('=');
      ::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    const std::string lib = std::string(SIMCUDA_DIR) + "/libcuda.so.1";
    auto driver = DriverLib::Open(lib);
    ASSERT_TRUE(driver.ok()) << driver.status().ToString();
    driver_ = *driver;
    ASSERT_TRUE(driver_.can_checkpoint() && driver_.can_query_state());
    void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    ASSERT_NE(handle, nullptr);
    raw_.lock = reinterpret_cast<decltype(raw_.lock)>(::dlsym(handle, "cuCheckpointProcessLock"));
    raw_.checkpoint =
        reinterpret_cast<decltype(raw_.checkpoint)>(::dlsym(handle, "cuCheckpointProcessCheckpoint"));
    raw_.restore = reinterpret_cast<decltype(raw_.restore)>(::dlsym(handle, "cuCheckpointProcessRestore"));
    ASSERT_TRUE(raw_.lock != nullptr && raw_.checkpoint != nullptr && raw_.restore != nullptr);

    // The function: fills its buffers and verifies every byte at every turn, until `done_`.
    done_ = node_.dir() / "done";
    out_ = node_.dir() / "worker.out";
    pid_ = node_.Track(arbiter::testing::Spawn(
        {WORKER_BIN, "run", "--seed", "5", "--big-mib", "16", "--budget-mib", "8", "--turns", "2",
         "--ops", "4", "--idle-ms", "5", "--turns-until", done_},
        out_, node_.dir() / "worker.err", node_.SimcudaEnv()));
    ASSERT_GT(pid_, 0);
    const auto end = std::chrono::steady_clock::now() + arbiter::testing::Scaled(std::chrono::seconds(60));
    while (ReadFile(out_).find("ready") == std::string::npos && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_NE(ReadFile(out_).find("ready"), std::string::npos) << ReadFile(node_.dir() / "worker.err");
  }

  // The arbiter's restore (where the process was) brings it back: it runs again, finishes its
  // turns and found every byte as it left it.
  void ExpectRestoredIntact() {
    const shm::Status s = driver_.RestoreAndUnlock(pid_, DeviceOrdinal{0}, DeviceOrdinal{0});
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(driver_.ProcessState(pid_), CU_PROCESS_STATE_RUNNING);
    { std::ofstream(done_) << "done\n"; }
    EXPECT_EQ(ExitCode(WaitFor(pid_, arbiter::testing::Scaled(std::chrono::seconds(60)))), 0)
        << ReadFile(out_) << ReadFile(node_.dir() / "worker.err");
    EXPECT_NE(ReadFile(out_).find("\"ok\":true"), std::string::npos) << ReadFile(out_);
  }

  void RawLock() {
    CUcheckpointLockArgs args{};
    args.timeoutMs = 10000;
    ASSERT_EQ(raw_.lock(pid_, &args), CUDA_SUCCESS);
  }

  FaultNode node_{"1x1GiB", "0", {}};
  DriverLib driver_;
  RawCheckpoint raw_;
  pid_t pid_ = -1;
  std::string done_;
  std::string out_;
};

// The restore happened but the unlock's answer was lost (the target skipped the unlock: its
// caller had hung up): locked. The arbiter's next try (a restore, after its back-off) finishes it.
TEST_F(CheckpointAnswerTest, RestoreWhoseUnlockWasLostIsFinishedByTheNextRestore) {
  ASSERT_TRUE(driver_.LockAndCheckpoint(pid_, 10000).ok());
  ASSERT_EQ(driver_.ProcessState(pid_), CU_PROCESS_STATE_CHECKPOINTED);
  CUcheckpointRestoreArgs args{};
  ASSERT_EQ(raw_.restore(pid_, &args), CUDA_SUCCESS);
  ASSERT_EQ(driver_.ProcessState(pid_), CU_PROCESS_STATE_LOCKED);
  ExpectRestoredIntact();
}

// The lock happened but its answer came after the caller's bound: locked, nobody to unlock it.
// The next deep eviction (or enforcement) goes on to the checkpoint.
TEST_F(CheckpointAnswerTest, LockWhoseAnswerWasLostIsTakenOverByTheNextLock) {
  RawLock();
  ASSERT_EQ(driver_.ProcessState(pid_), CU_PROCESS_STATE_LOCKED);
  const shm::Status s = driver_.LockAndCheckpoint(pid_, 1000);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(driver_.ProcessState(pid_), CU_PROCESS_STATE_CHECKPOINTED);
  ExpectRestoredIntact();
}

// The checkpoint happened but its answer was lost: frozen. The next try finds it checkpointed.
TEST_F(CheckpointAnswerTest, CheckpointWhoseAnswerWasLostCountsOnTheNextTry) {
  RawLock();
  ASSERT_EQ(raw_.checkpoint(pid_, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(driver_.ProcessState(pid_), CU_PROCESS_STATE_CHECKPOINTED);
  const shm::Status s = driver_.LockAndCheckpoint(pid_, 1000);
  EXPECT_TRUE(s.ok()) << s.ToString();
  ExpectRestoredIntact();
}

}  // namespace
}  // namespace gshare::fault
