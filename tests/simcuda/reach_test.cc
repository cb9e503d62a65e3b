// What a context's device can reach, as on a real GPU: a kernel faults
// (CUDA_ERROR_ILLEGAL_ADDRESS, refused at launch here) when a pointer parameter points into
// another device's memory or into a VMM mapping without access for its device; a copy or memset
// touching a VMM mapping without access for the stream's device fails (CUDA_ERROR_INVALID_VALUE).
// Plain memory of another device stays reachable by copies (the driver stages them).
#include <cstring>
#include <vector>

#include "simcuda/kernels/ptx.h"
#include "test_util.h"

namespace {

constexpr size_t kGran = 2u << 20;

class ReachTest : public simcuda_test::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_CU(cuModuleLoadData(&mod0_, basic_kernels_ptx));
    ASSERT_CU(cuModuleGetFunction(&saxpy0_, mod0_, "saxpy"));
    ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx1_, 1));
    ASSERT_CU(cuCtxPushCurrent(ctx1_));
    ASSERT_CU(cuModuleLoadData(&mod1_, basic_kernels_ptx));
    ASSERT_CU(cuModuleGetFunction(&saxpy1_, mod1_, "saxpy"));
    CUcontext popped = nullptr;
    ASSERT_CU(cuCtxPopCurrent(&popped));
  }
  void TearDown() override {
    if (mod0_ != nullptr) {
      EXPECT_CU(cuModuleUnload(mod0_));
    }
    if (ctx1_ != nullptr) {
      EXPECT_CU(cuDevicePrimaryCtxRelease(1));
    }
    DriverTest::TearDown();
  }
  // y = 2 * y + y on `n` floats at `p` in the current context.
  static CUresult Triple(CUfunction saxpy, CUdeviceptr p, unsigned long long n) {
    float a = 2.0f;
    void* params[] = {&a, &p, &p, &n};
    CUresult r = cuLaunchKernel(saxpy, static_cast<unsigned>((n + 255) / 256), 1, 1, 256, 1, 1, 0,
                                nullptr, params, nullptr);
    return r != CUDA_SUCCESS ? r : cuCtxSynchronize();
  }
  // A mapping of physical memory of `device` readable and writable by `access_device` only.
  static void MapOn(int device, int access_device, CUdeviceptr* va, CUmemGenericAllocationHandle* h) {
    ASSERT_CU(cuMemAddressReserve(va, kGran, 0, 0, 0));
    const CUmemAllocationProp p = simcuda_test::PinnedOn(device);
    ASSERT_CU(cuMemCreate(h, kGran, &p, 0));
    ASSERT_CU(cuMemMap(*va, kGran, 0, *h, 0));
    const CUmemAccessDesc d = simcuda_test::ReadWriteOn(access_device);
    ASSERT_CU(cuMemSetAccess(*va, kGran, &d, 1));
  }
  CUmodule mod0_ = nullptr, mod1_ = nullptr;
  CUfunction saxpy0_ = nullptr, saxpy1_ = nullptr;
  CUcontext ctx1_ = nullptr;
};

TEST_F(ReachTest, VmmMemoryIsReachableOnlyFromDevicesGrantedAccess) {
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle h = 0;
  MapOn(1, 1, &va, &h);
  const size_t n = kGran / sizeof(float);
  std::vector<float> in(n, 1.0f), out(n, 0.0f);
  // Device 0's context (current): nothing reaches the mapping.
  EXPECT_CU_ERR(cuMemcpyHtoD(va, in.data(), kGran), CUDA_ERROR_INVALID_VALUE);
  EXPECT_CU_ERR(cuMemcpyDtoH(out.data(), va, kGran), CUDA_ERROR_INVALID_VALUE);
  EXPECT_CU_ERR(cuMemsetD32(va, 0, n), CUDA_ERROR_INVALID_VALUE);
  EXPECT_CU_ERR(Triple(saxpy0_, va, n), CUDA_ERROR_ILLEGAL_ADDRESS);
  // Device 1's context: everything works.
  ASSERT_CU(cuCtxPushCurrent(ctx1_));
  ASSERT_CU(cuMemcpyHtoD(va, in.data(), kGran));
  ASSERT_CU(Triple(saxpy1_, va, n));
  ASSERT_CU(cuMemcpyDtoH(out.data(), va, kGran));
  CUcontext popped = nullptr;
  ASSERT_CU(cuCtxPopCurrent(&popped));
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[n - 1], 3.0f);
  // Granting device 0 access makes it reachable from device 0 as well.
  const CUmemAccessDesc d = simcuda_test::ReadWriteOn(0);
  ASSERT_CU(cuMemSetAccess(va, kGran, &d, 1));
  ASSERT_CU(Triple(saxpy0_, va, n));
  ASSERT_CU(cuMemcpyDtoH(out.data(), va, kGran));
  EXPECT_EQ(out[0], 9.0f);
  ASSERT_CU(cuMemUnmap(va, kGran));
  ASSERT_CU(cuMemRelease(h));
  ASSERT_CU(cuMemAddressFree(va, kGran));
}

TEST_F(ReachTest, KernelsFaultOnAnotherDevicesMemoryCopiesDoNot) {
  ASSERT_CU(cuCtxPushCurrent(ctx1_));
  CUdeviceptr on1 = 0;
  const size_t n = 4096;
  ASSERT_CU(cuMemAlloc(&on1, n * sizeof(float)));
  CUcontext popped = nullptr;
  ASSERT_CU(cuCtxPopCurrent(&popped));
  std::vector<float> in(n, 2.0f), out(n, 0.0f);
  ASSERT_CU(cuMemcpyHtoD(on1, in.data(), n * sizeof(float)));  // staged by the driver
  EXPECT_CU_ERR(Triple(saxpy0_, on1, n), CUDA_ERROR_ILLEGAL_ADDRESS);
  ASSERT_CU(cuMemcpyDtoH(out.data(), on1, n * sizeof(float)));
  EXPECT_EQ(out[0], 2.0f);  // the refused kernel did not run
  ASSERT_CU(cuCtxPushCurrent(ctx1_));
  ASSERT_CU(Triple(saxpy1_, on1, n));
  ASSERT_CU(cuMemcpyDtoH(out.data(), on1, n * sizeof(float)));
  EXPECT_EQ(out[0], 6.0f);
  ASSERT_CU(cuMemFree(on1));
  ASSERT_CU(cuCtxPopCurrent(&popped));
}

}  // namespace
