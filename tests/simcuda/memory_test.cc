// Tests of device memory allocation, accounting and queries.
#include <vector>

#include "test_util.h"

namespace {

using MemoryTest = simcuda_test::DriverTest;

TEST_F(MemoryTest, AllocFreeMovesFreeMemory) {
  size_t free0, total;
  ASSERT_CU(cuMemGetInfo(&free0, &total));
  EXPECT_EQ(total, 1ull << 30);
  EXPECT_LE(free0, total);
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 10 << 20));
  EXPECT_NE(p, 0u);
  size_t free1;
  ASSERT_CU(cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free0 - free1, 10u << 20);
  ASSERT_CU(cuMemFree(p));
  size_t free2;
  ASSERT_CU(cuMemGetInfo(&free2, &total));
  EXPECT_EQ(free2, free0);
  EXPECT_CU_ERR(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_CU(cuMemFree(0));
}

TEST_F(MemoryTest, OutOfMemoryAtDeviceCapacity) {
  std::vector<CUdeviceptr> ptrs;
  CUresult r = CUDA_SUCCESS;
  for (int i = 0; i < 10 && r == CUDA_SUCCESS; ++i) {
    CUdeviceptr p = 0;
    r = cuMemAlloc(&p, 256ull << 20);
    if (r == CUDA_SUCCESS) ptrs.push_back(p);
  }
  EXPECT_EQ(simcuda_test::CuName(r), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(ptrs.size(), 4u);  // 4 x 256 MiB = 1 GiB
  size_t free, total;
  ASSERT_CU(cuMemGetInfo(&free, &total));
  EXPECT_EQ(free, 0u);
  for (CUdeviceptr p : ptrs) ASSERT_CU(cuMemFree(p));
}

TEST_F(MemoryTest, DeviceMemoryIsTouchableHostMemory) {
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 4096));
  auto* bytes = reinterpret_cast<unsigned char*>(p);
  bytes[0] = 7;
  bytes[4095] = 9;
  EXPECT_EQ(bytes[0] + bytes[4095], 16);
  ASSERT_CU(cuMemFree(p));
}

TEST_F(MemoryTest, AddressRangeAndPitch) {
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 1000));
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_CU(cuMemGetAddressRange(&base, &size, p + 500));
  EXPECT_EQ(base, p);
  EXPECT_EQ(size, 1000u);
  int host = 0;
  EXPECT_CU_ERR(cuMemGetAddressRange(&base, &size, reinterpret_cast<CUdeviceptr>(&host)),
                CUDA_ERROR_NOT_FOUND);
  ASSERT_CU(cuMemFree(p));
  size_t pitch = 0;
  ASSERT_CU(cuMemAllocPitch(&p, &pitch, 100, 10, 4));
  EXPECT_GE(pitch, 100u);
  EXPECT_EQ(pitch % 256, 0u);
  ASSERT_CU(cuMemFree(p));
  EXPECT_CU_ERR(cuMemAllocPitch(&p, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MemoryTest, ZeroBytesIsInvalid) {
  CUdeviceptr p = 0;
  EXPECT_CU_ERR(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MemoryTest, ManagedMemoryIsCounted) {
  size_t free0, free1, total;
  ASSERT_CU(cuMemGetInfo(&free0, &total));
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAllocManaged(&p, 8 << 20, CU_MEM_ATTACH_GLOBAL));
  ASSERT_CU(cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free0 - free1, 8u << 20);
  reinterpret_cast<int*>(p)[0] = 5;
  CUmemLocation loc{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  ASSERT_CU(cuMemPrefetchAsync(p, 8 << 20, loc, 0, nullptr));
  ASSERT_CU(cuMemAdvise(p, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, loc));
  EXPECT_CU_ERR(cuMemPrefetchAsync(p, 9 << 20, loc, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(reinterpret_cast<int*>(p)[0], 5);
  ASSERT_CU(cuMemFree(p));
}

}  // namespace
