// Tests of primary and created contexts and the per-thread current-context stack.
#include <thread>

#include "test_util.h"

namespace {

TEST(Context, NoCurrentContextIsAnError) {
  ASSERT_CU(cuInit(0));
  std::thread([] {
    CUcontext cur = reinterpret_cast<CUcontext>(1);
    EXPECT_CU(cuCtxGetCurrent(&cur));
    EXPECT_EQ(cur, nullptr);
    CUdevice dev;
    EXPECT_CU_ERR(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
    CUdeviceptr p;
    EXPECT_CU_ERR(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_CU_ERR(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext popped;
    EXPECT_CU_ERR(cuCtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
  }).join();
}

TEST(Context, PrimaryRetainReleaseAndState) {
  ASSERT_CU(cuInit(0));
  unsigned flags = 99;
  int active = 1;
  ASSERT_CU(cuDevicePrimaryCtxGetState(1, &flags, &active));
  EXPECT_EQ(active, 0);
  ASSERT_CU(cuDevicePrimaryCtxSetFlags(1, CU_CTX_SCHED_BLOCKING_SYNC));
  CUcontext a, b;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&a, 1));
  ASSERT_CU(cuDevicePrimaryCtxRetain(&b, 1));
  EXPECT_EQ(a, b);
  ASSERT_CU(cuDevicePrimaryCtxGetState(1, &flags, &active));
  EXPECT_EQ(active, 1);
  EXPECT_EQ(flags, static_cast<unsigned>(CU_CTX_SCHED_BLOCKING_SYNC));
  ASSERT_CU(cuCtxPushCurrent(a));
  unsigned ctx_flags = 0;
  ASSERT_CU(cuCtxGetFlags(&ctx_flags));
  EXPECT_EQ(ctx_flags, static_cast<unsigned>(CU_CTX_SCHED_BLOCKING_SYNC));
  CUdevice dev = -1;
  ASSERT_CU(cuCtxGetDevice(&dev));
  EXPECT_EQ(dev, 1);
  CUcontext popped;
  ASSERT_CU(cuCtxPopCurrent(&popped));
  EXPECT_EQ(popped, a);
  ASSERT_CU(cuDevicePrimaryCtxRelease(1));
  ASSERT_CU(cuDevicePrimaryCtxRelease(1));
  ASSERT_CU(cuDevicePrimaryCtxGetState(1, &flags, &active));
  EXPECT_EQ(active, 0);
  EXPECT_CU_ERR(cuDevicePrimaryCtxRelease(1), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_CU(cuDevicePrimaryCtxReset(1));
}

TEST(Context, CreatePushPopDestroy) {
  ASSERT_CU(cuInit(0));
  CUcontext c1, c2, cur;
  ASSERT_CU(cuCtxCreate(&c1, nullptr, 0, 0));  // cuCtxCreate_v4: pushed and current
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, c1);
  ASSERT_CU(cuCtxCreate(&c2, nullptr, 0, 1));
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, c2);
  unsigned version = 0;
  ASSERT_CU(cuCtxGetApiVersion(c2, &version));
  EXPECT_GE(version, 3020u);
  CUcontext popped;
  ASSERT_CU(cuCtxPopCurrent(&popped));
  EXPECT_EQ(popped, c2);
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, c1);
  ASSERT_CU(cuCtxDestroy(c2));
  EXPECT_CU_ERR(cuCtxPushCurrent(c2), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_CU(cuCtxSetCurrent(c1));
  ASSERT_CU(cuCtxSynchronize());
  ASSERT_CU(cuCtxDestroy(c1));
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, nullptr);
}

TEST(Context, StackIsPerThread) {
  ASSERT_CU(cuInit(0));
  CUcontext c;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&c, 0));
  ASSERT_CU(cuCtxSetCurrent(c));
  std::thread([] {
    CUcontext cur = reinterpret_cast<CUcontext>(1);
    EXPECT_CU(cuCtxGetCurrent(&cur));
    EXPECT_EQ(cur, nullptr);
  }).join();
  ASSERT_CU(cuCtxSetCurrent(nullptr));
  ASSERT_CU(cuDevicePrimaryCtxRelease(0));
}

TEST(Context, DestroyingAContextFreesItsMemory) {
  ASSERT_CU(cuInit(0));
  CUcontext c;
  ASSERT_CU(cuCtxCreate(&c, nullptr, 0, 1));
  size_t free0, total;
  ASSERT_CU(cuMemGetInfo(&free0, &total));
  CUdeviceptr p;
  ASSERT_CU(cuMemAlloc(&p, 64 << 20));
  size_t free1;
  ASSERT_CU(cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free0 - free1, 64u << 20);
  ASSERT_CU(cuCtxDestroy(c));
  CUcontext p2;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&p2, 1));
  ASSERT_CU(cuCtxSetCurrent(p2));
  size_t free2;
  ASSERT_CU(cuMemGetInfo(&free2, &total));
  EXPECT_EQ(free2, free0);
  ASSERT_CU(cuCtxSetCurrent(nullptr));
  ASSERT_CU(cuDevicePrimaryCtxRelease(1));
}

}  // namespace
