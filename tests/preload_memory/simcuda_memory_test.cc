// VgpuMemory on the simulated driver (simcuda), resolved with dlsym as the shim resolves the real
// driver: data integrity across swaps with random allocation patterns, capacity really released
// to another process, swap-in onto the other device, kernels reading swapped-in data, and
// stream-ordered frees on real streams.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstring>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gshare/memory/vgpu_memory.h"
#include "simcuda/kernels/kernel_math.h"
#include "simcuda/kernels/ptx.h"

extern char** environ;

namespace gshare::memory {
namespace {

#define ASSERT_CU(expr) ASSERT_EQ((expr), CUDA_SUCCESS) << #expr

void* ResolveFromProcess(const char* name, void* /*ctx*/) { return dlsym(RTLD_DEFAULT, name); }

// Runs simcuda_alloc_helper DEVICE BYTES in a child process; returns its exit code.
int RunAllocHelper(int device, uint64_t bytes) {
  const std::string dev = std::to_string(device);
  const std::string size = std::to_string(bytes);
  char* argv[] = {const_cast<char*>(SIMCUDA_ALLOC_HELPER), const_cast<char*>(dev.c_str()),
                  const_cast<char*>(size.c_str()), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, SIMCUDA_ALLOC_HELPER, nullptr, nullptr, argv, environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

struct Live {
  size_t bytes;
  uint64_t checksum;
};

class SimcudaVgpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_CU(cuInit(0));
    ASSERT_CU(cuDeviceGet(&dev_, 0));
    ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx_, dev_));
    ASSERT_CU(cuCtxSetCurrent(ctx_));
    std::string missing;
    ASSERT_EQ(ResolveDeviceApi(ResolveFromProcess, nullptr, &api_, &missing), CUDA_SUCCESS)
        << missing;
    options_.quota_bytes = 2 * kGiB;
    options_.device = 0;
  }
  void TearDown() override {
    (void)cuCtxSetCurrent(nullptr);
    (void)cuDevicePrimaryCtxRelease(dev_);
  }

  static size_t DeviceFree() {
    size_t free_bytes = 0, total = 0;
    EXPECT_EQ(cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
    return free_bytes;
  }

  // Allocates `bytes` through `mem`, uploads a pattern, remembers its checksum.
  void AllocFilled(VgpuMemory& mem, size_t bytes, uint64_t seed) {
    CUdeviceptr p = 0;
    ASSERT_CU(mem.Allocate(bytes, &p));
    std::vector<uint8_t> host(bytes);
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < bytes; i += 8) {
      const uint64_t v = rng();
      std::memcpy(host.data() + i, &v, std::min<size_t>(8, bytes - i));
    }
    ASSERT_CU(OnItsDevice(p, [&] { return cuMemcpyHtoD(p, host.data(), bytes); }));
    live_[p] = Live{bytes, simcuda::kernels::HostChecksum(host.data(), bytes)};
  }
  // Runs `copy` with the primary context of the device `p` lives on current (as on a GPU, a
  // context of another device cannot reach VMM memory mapped without access for it).
  template <typename Copy>
  static CUresult OnItsDevice(CUdeviceptr p, Copy copy) {
    int device = 0;
    if (CUresult r = cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
        r != CUDA_SUCCESS) {
      return r;
    }
    CUcontext there = nullptr;
    if (CUresult r = cuDevicePrimaryCtxRetain(&there, device); r != CUDA_SUCCESS) return r;
    CUresult result = cuCtxPushCurrent(there);
    if (result == CUDA_SUCCESS) {
      result = copy();
      CUcontext popped = nullptr;
      (void)cuCtxPopCurrent(&popped);
    }
    (void)cuDevicePrimaryCtxRelease(device);
    return result;
  }
  void ExpectAllIntact() {
    for (const auto& [p, l] : live_) {
      std::vector<uint8_t> host(l.bytes);
      ASSERT_CU(OnItsDevice(p, [&] { return cuMemcpyDtoH(host.data(), p, l.bytes); }));
      ASSERT_EQ(simcuda::kernels::HostChecksum(host.data(), l.bytes), l.checksum)
          << "allocation at " << std::hex << p << " of " << std::dec << l.bytes << " bytes";
    }
  }
  void FreeAll(VgpuMemory& mem) {
    for (const auto& [p, l] : live_) ASSERT_CU(mem.Free(p));
    live_.clear();
  }

  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  DeviceApi api_;
  VgpuMemoryOptions options_;
  std::map<CUdeviceptr, Live> live_;
};

TEST_F(SimcudaVgpuTest, RandomPatternsSurviveSwapsAtTheSameAddresses) {
  VgpuMemory mem(api_, options_);
  std::mt19937_64 rng(2026);
  uint64_t seed = 1;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 30; ++i) {
      const int kind = static_cast<int>(rng() % 20);
      size_t bytes = kind < 12   ? 1 + rng() % 4096
                     : kind < 19 ? 4096 + rng() % (6 * kMiB)
                                 : 40 * kMiB + rng() % (160 * kMiB);
      if (mem.counters().used_bytes + bytes > 400 * kMiB) bytes = 777;
      AllocFilled(mem, bytes, seed++);
      if (!live_.empty() && rng() % 3 == 0) {
        auto it = live_.begin();
        std::advance(it, static_cast<long>(rng() % live_.size()));
        ASSERT_CU(mem.Free(it->first));
        live_.erase(it);
      }
    }
    const uint64_t backed = mem.counters().backed_bytes;
    const size_t free_before = DeviceFree();
    SwapStats out;
    ASSERT_CU(mem.SwapOut({}, &out));
    EXPECT_EQ(out.bytes, backed);
    EXPECT_EQ(DeviceFree(), free_before + backed);  // the device really got it back
    SwapStats in;
    ASSERT_CU(mem.SwapIn(0, &in));
    EXPECT_EQ(in.bytes, backed);
    EXPECT_EQ(DeviceFree(), free_before);
    ExpectAllIntact();
  }
  FreeAll(mem);
  EXPECT_EQ(mem.counters().physical_handles, 0u);
}

TEST_F(SimcudaVgpuTest, SwappedOutCapacityIsUsableByAnotherProcess) {
  VgpuMemory mem(api_, options_);
  for (int i = 0; i < 3; ++i) AllocFilled(mem, 128 * kMiB, 100 + i);
  AllocFilled(mem, 12345, 99);
  EXPECT_EQ(RunAllocHelper(0, 256 * kMiB), 3);  // device 0 is 512 MiB and 386 MiB are ours
  ASSERT_CU(mem.SwapOut({}, nullptr));
  EXPECT_EQ(RunAllocHelper(0, 256 * kMiB), 0);  // released capacity: another process gets it
  ASSERT_CU(mem.SwapIn(0, nullptr));
  ExpectAllIntact();
  FreeAll(mem);
}

TEST_F(SimcudaVgpuTest, SwapInOntoTheOtherDevice) {
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 3000, 7);
  AllocFilled(mem, 200 * kMiB, 8);
  const size_t free0 = DeviceFree();
  ASSERT_CU(mem.SwapOut({}, nullptr));
  ASSERT_CU(mem.SwapIn(1, nullptr));
  EXPECT_EQ(mem.counters().device, 1);
  EXPECT_EQ(DeviceFree(), free0 + mem.counters().backed_bytes);  // device 0 fully released
  EXPECT_EQ(RunAllocHelper(1, 400 * kMiB), 3);  // device 1 (512 MiB) now holds the vGPU
  ExpectAllIntact();
  FreeAll(mem);
}

// The driver frees page-locked memory with the context that allocated it. The shim swaps from
// threads with no context of their own (the arbiter client's service thread), so the engine
// pushes a primary context just for the swap; when nobody else holds that device's primary
// context, popping and releasing it tears the context down. Regression (repro-crash.sh): the
// swap image was pinned in such a context, freed with it, and the next swap-in copied from
// unmapped host memory (SIGSEGV in the copy engine).
TEST_F(SimcudaVgpuTest, SwapImageSurvivesTheSwapContextGoingAway) {
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 3000, 11);
  AllocFilled(mem, 40 * kMiB, 12);
  const auto on_a_bare_thread = [&](auto fn) {
    std::thread t([&] {
      CUcontext none = nullptr;
      ASSERT_CU(cuCtxGetCurrent(&none));
      ASSERT_EQ(none, nullptr);
      fn();
    });
    t.join();
  };
  on_a_bare_thread([&] {
    ASSERT_CU(mem.SwapOut({}, nullptr));
    ASSERT_CU(mem.SwapIn(1, nullptr));  // device 1: only the engine ever retains its context
  });
  AllocFilled(mem, 64 * kMiB, 13);  // the image grows: the next swap-out pins a new staging
  on_a_bare_thread([&] {
    ASSERT_CU(mem.SwapOut({}, nullptr));  // from device 1, with its primary context pushed
    ASSERT_CU(mem.SwapIn(0, nullptr));
  });
  ExpectAllIntact();
  FreeAll(mem);
}

// Same with the application's own context: swapping with it current, then destroying it, must
// not take the swap image with it.
TEST_F(SimcudaVgpuTest, SwapImageSurvivesTheApplicationDestroyingItsContext) {
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 50 * kMiB, 21);
  CUcontext own = nullptr;
  ASSERT_CU(cuCtxCreate(&own, nullptr, 0, dev_));  // current on this thread
  ASSERT_CU(mem.SwapOut({}, nullptr));
  ASSERT_CU(cuCtxDestroy(own));
  ASSERT_CU(cuCtxSetCurrent(ctx_));
  ASSERT_CU(mem.SwapIn(0, nullptr));
  ExpectAllIntact();
  FreeAll(mem);
}

TEST_F(SimcudaVgpuTest, KernelsReadTheRightDataAfterSwapIn) {
  CUmodule module = nullptr;
  ASSERT_CU(cuModuleLoadData(&module, basic_kernels_ptx));
  CUfunction checksum = nullptr;
  ASSERT_CU(cuModuleGetFunction(&checksum, module, "checksum"));
  VgpuMemory mem(api_, options_);
  AllocFilled(mem, 100 * kMiB + 3, 41);
  AllocFilled(mem, 5000, 42);
  CUdeviceptr out = 0;
  ASSERT_CU(mem.Allocate(sizeof(uint64_t), &out));
  ASSERT_CU(mem.SwapOut({}, nullptr));
  ASSERT_CU(mem.SwapIn(0, nullptr));
  for (const auto& [p, l] : live_) {
    ASSERT_CU(cuMemsetD8(out, 0, sizeof(uint64_t)));
    CUdeviceptr data = p;
    uint64_t n = l.bytes;
    void* params[] = {&data, &n, &out};
    ASSERT_CU(cuLaunchKernel(checksum, 64, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
    uint64_t result = 0;
    ASSERT_CU(cuMemcpyDtoH(&result, out, sizeof(result)));
    EXPECT_EQ(result, l.checksum) << l.bytes;
  }
  ASSERT_CU(mem.Free(out));
  FreeAll(mem);
  ASSERT_CU(cuModuleUnload(module));
}

// A host function that blocks its stream until the test opens the gate.
void WaitForGate(void* gate) { static_cast<std::shared_future<void>*>(gate)->wait(); }

TEST_F(SimcudaVgpuTest, StreamOrderedFreeWaitsForTheStream) {
  CUstream stream = nullptr;
  ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  VgpuMemory mem(api_, options_);
  CUdeviceptr p = 0;
  ASSERT_CU(mem.AllocateAsync(64 * kMiB, stream, &p));
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  ASSERT_CU(cuLaunchHostFunc(stream, WaitForGate, &gate));  // the stream cannot pass this yet
  ASSERT_CU(mem.FreeAsync(p, stream));
  mem.ReclaimCompletedFrees();
  EXPECT_EQ(mem.counters().pending_async_frees, 1u);  // the stream has not passed the free
  EXPECT_EQ(mem.counters().used_bytes, 64 * kMiB);
  EXPECT_EQ(mem.LookupRange(p, nullptr, nullptr), CUDA_ERROR_NOT_FOUND);
  open.set_value();
  ASSERT_CU(cuStreamSynchronize(stream));
  mem.ReclaimCompletedFrees();
  EXPECT_EQ(mem.counters().pending_async_frees, 0u);
  EXPECT_EQ(mem.counters().used_bytes, 0u);
  ASSERT_CU(cuStreamDestroy(stream));
}

}  // namespace
}  // namespace gshare::memory
