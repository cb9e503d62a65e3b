// Tests of stream-ordered allocation and memory pools.
#include "test_util.h"

namespace {

using PoolTest = simcuda_test::DriverTest;

TEST_F(PoolTest, AllocAsyncAndFreeInStreamOrder) {
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  size_t free0, free1, total;
  ASSERT_CU(cuMemGetInfo(&free0, &total));
  CUdeviceptr p;
  ASSERT_CU(cuMemAllocAsync(&p, 4 << 20, s));
  ASSERT_CU(cuMemsetD8Async(p, 1, 4 << 20, s));
  ASSERT_CU(cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free0 - free1, 4u << 20);
  CUmemoryPool pool = nullptr, def = nullptr;
  ASSERT_CU(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
  ASSERT_CU(cuDeviceGetDefaultMemPool(&def, 0));
  EXPECT_EQ(pool, def);
  cuuint64_t used = 0;
  ASSERT_CU(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
  EXPECT_GE(used, 4u << 20);
  // The free waits for earlier work in the stream.
  simcuda_test::StreamGate gate;
  ASSERT_CU(gate.Close(s));
  ASSERT_CU(cuMemFreeAsync(p, s));
  ASSERT_CU(cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free0 - free1, 4u << 20);  // not yet freed
  gate.Open();
  ASSERT_CU(cuStreamSynchronize(s));
  ASSERT_CU(cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free1, free0);
  ASSERT_CU(cuStreamDestroy(s));
}

TEST_F(PoolTest, ExplicitPoolsAndAttributes) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 1;
  CUmemoryPool pool;
  ASSERT_CU(cuMemPoolCreate(&pool, &props));
  cuuint64_t threshold = 1 << 30;
  ASSERT_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  cuuint64_t got = 0;
  ASSERT_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got));
  EXPECT_EQ(got, threshold);
  CUdeviceptr p;
  ASSERT_CU(cuMemAllocFromPoolAsync(&p, 1 << 20, pool, nullptr));
  int ordinal = -1;
  ASSERT_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
  EXPECT_EQ(ordinal, 1);
  cuuint64_t high = 0;
  ASSERT_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high));
  EXPECT_EQ(high, 1u << 20);
  ASSERT_CU(cuMemFreeAsync(p, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  ASSERT_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &got));
  EXPECT_EQ(got, 0u);
  ASSERT_CU(cuMemPoolTrimTo(pool, 0));
  ASSERT_CU(cuDeviceSetMemPool(1, pool));
  CUmemoryPool cur;
  ASSERT_CU(cuDeviceGetMemPool(&cur, 1));
  EXPECT_EQ(cur, pool);
  ASSERT_CU(cuMemPoolDestroy(pool));
  ASSERT_CU(cuDeviceGetMemPool(&cur, 1));
  EXPECT_NE(cur, pool);
  CUmemoryPool def;
  ASSERT_CU(cuDeviceGetDefaultMemPool(&def, 1));
  EXPECT_CU_ERR(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
