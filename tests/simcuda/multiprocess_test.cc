// Cross-process behaviour: device memory is accounted across processes, and a killed
// process's memory is reclaimed.
#include <signal.h>
#include <sys/wait.h>

#include "test_util.h"

namespace {

using simcuda_test::Child;
using simcuda_test::SpawnHelper;
using MultiProcess = simcuda_test::DriverTest;

TEST_F(MultiProcess, OutOfMemoryAcrossProcessesAndReclaimAfterKill) {
  // Another process holds 768 MiB of the 1 GiB device 1.
  Child holder = SpawnHelper({"hold", std::to_string(768ull << 20), "1"});
  ASSERT_EQ(holder.ReadLine().rfind("ready", 0), 0u);
  CUcontext c1;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&c1, 1));
  ASSERT_CU(cuCtxPushCurrent(c1));
  size_t free, total;
  ASSERT_CU(cuMemGetInfo(&free, &total));
  EXPECT_EQ(free, 256ull << 20);
  CUdeviceptr p = 0;
  EXPECT_CU_ERR(cuMemAlloc(&p, 512ull << 20), CUDA_ERROR_OUT_OF_MEMORY);
  // A third process sees the same shortage.
  Child other = SpawnHelper({"alloc", std::to_string(512ull << 20), "1"});
  EXPECT_EQ(other.ReadLine(), "CUDA_ERROR_OUT_OF_MEMORY");
  other.Wait();
  // kill -9 the holder: its memory comes back on the next allocation failure.
  holder.Kill(SIGKILL);
  int status = holder.Wait();
  EXPECT_TRUE(WIFSIGNALED(status));
  ASSERT_CU(cuMemAlloc(&p, 512ull << 20));
  ASSERT_CU(cuMemFree(p));
  CUcontext popped;
  ASSERT_CU(cuCtxPopCurrent(&popped));
  ASSERT_CU(cuDevicePrimaryCtxRelease(1));
}

TEST(MultiProcessAttach, DeadProcessMemoryIsReclaimedAtAttach) {
  // Nobody in this process has attached yet when the holder dies; a fresh process attaching
  // afterwards sees the full device.
  Child holder = SpawnHelper({"hold", std::to_string(900ull << 20), "0"});
  ASSERT_EQ(holder.ReadLine().rfind("ready", 0), 0u);
  holder.Kill(SIGKILL);
  holder.Wait();
  Child other = SpawnHelper({"alloc", std::to_string(1000ull << 20), "0"});
  EXPECT_EQ(other.ReadLine(), "ok");
  other.Wait();
}

TEST_F(MultiProcess, NormalExitReturnsMemoryAtOnce) {
  size_t free0 = simcuda_test::FreeOn(1);
  // The helper allocates and exits without freeing.
  EXPECT_EQ(simcuda_test::RunHelper({"alloc", std::to_string(256ull << 20), "1"}), 0);
  EXPECT_EQ(simcuda_test::FreeOn(1), free0);
}

// An LD_PRELOADed shim sees the program's calls, never simcuda's calls to itself.
TEST(Interposition, InternalCallsBypassPreloadedHooks) {
  // (ASAN_OPTIONS: in sanitizer builds the preloaded library comes before the ASan runtime.)
  EXPECT_EQ(simcuda_test::RunHelper({"interposed"}, {"LD_PRELOAD=" SIMCUDA_TEST_INTERPOSER,
                                                     "ASAN_OPTIONS=verify_asan_link_order=0"}),
            0);
}

}  // namespace
