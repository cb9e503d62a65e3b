// Tests of pointer attributes, page-locked host memory and host registration.
#include <cstring>
#include <vector>

#include "test_util.h"

namespace {

using PointerTest = simcuda_test::DriverTest;

TEST_F(PointerTest, DeviceAllocationAttributes) {
  CUdeviceptr p;
  ASSERT_CU(cuMemAlloc(&p, 5000));
  unsigned type = 0;
  ASSERT_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 10));
  EXPECT_EQ(type, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
  CUcontext c = nullptr;
  ASSERT_CU(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, p));
  EXPECT_EQ(c, ctx_);
  CUdeviceptr start = 0;
  size_t size = 0;
  ASSERT_CU(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 4999));
  ASSERT_CU(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 4999));
  EXPECT_EQ(start, p);
  EXPECT_EQ(size, 5000u);
  int ordinal = -1;
  ASSERT_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
  EXPECT_EQ(ordinal, 0);
  bool managed = true;
  ASSERT_CU(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
  EXPECT_FALSE(managed);
  unsigned long long id1 = 0, id2 = 0;
  ASSERT_CU(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
  CUdeviceptr q;
  ASSERT_CU(cuMemAlloc(&q, 16));
  ASSERT_CU(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, q));
  EXPECT_NE(id1, id2);
  void* host = nullptr;
  EXPECT_CU_ERR(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(p));
  ASSERT_CU(cuMemFree(q));
  EXPECT_CU_ERR(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(PointerTest, ManagedAndUnknownPointers) {
  CUdeviceptr m;
  ASSERT_CU(cuMemAllocManaged(&m, 100, CU_MEM_ATTACH_GLOBAL));
  bool managed = false;
  ASSERT_CU(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
  EXPECT_TRUE(managed);
  ASSERT_CU(cuMemFree(m));
  int local = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED};
  CUcontext c = ctx_;
  unsigned type = 7;
  bool is_managed = true;
  void* data[] = {&c, &type, &is_managed};
  ASSERT_CU(cuPointerGetAttributes(3, attrs, data, reinterpret_cast<CUdeviceptr>(&local)));
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(type, 0u);
  EXPECT_FALSE(is_managed);
}

TEST_F(PointerTest, HostAllocAndRegistration) {
  void* h = nullptr;
  ASSERT_CU(cuMemHostAlloc(&h, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP));
  unsigned flags = 0;
  ASSERT_CU(cuMemHostGetFlags(&flags, h));
  EXPECT_EQ(flags, static_cast<unsigned>(CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr d = 0;
  ASSERT_CU(cuMemHostGetDevicePointer(&d, h, 0));
  EXPECT_EQ(d, reinterpret_cast<CUdeviceptr>(h));
  unsigned type = 0;
  ASSERT_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
  EXPECT_EQ(type, static_cast<unsigned>(CU_MEMORYTYPE_HOST));
  CUdeviceptr dev;
  ASSERT_CU(cuMemAlloc(&dev, 1 << 20));
  std::memset(h, 0x42, 1 << 20);
  ASSERT_CU(cuMemcpyHtoD(dev, h, 1 << 20));
  EXPECT_EQ(reinterpret_cast<unsigned char*>(dev)[12345], 0x42);
  ASSERT_CU(cuMemFreeHost(h));
  EXPECT_CU_ERR(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
  void* h2 = nullptr;
  ASSERT_CU(cuMemAllocHost(&h2, 64));
  ASSERT_CU(cuMemFreeHost(h2));

  std::vector<unsigned char> mine(8192);
  ASSERT_CU(cuMemHostRegister(mine.data(), mine.size(), CU_MEMHOSTREGISTER_PORTABLE));
  EXPECT_CU_ERR(cuMemHostRegister(mine.data() + 100, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  ASSERT_CU(cuMemHostGetDevicePointer(&d, mine.data() + 100, 0));
  EXPECT_EQ(d, reinterpret_cast<CUdeviceptr>(mine.data() + 100));
  void* hp = nullptr;
  ASSERT_CU(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, d));
  EXPECT_EQ(hp, mine.data() + 100);
  ASSERT_CU(cuMemHostUnregister(mine.data()));
  EXPECT_CU_ERR(cuMemHostUnregister(mine.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  ASSERT_CU(cuMemFree(dev));
}

TEST_F(PointerTest, VmmMappingAttributes) {
  CUdeviceptr va;
  const size_t g = 2u << 20;
  ASSERT_CU(cuMemAddressReserve(&va, g, 0, 0, 0));
  const CUmemAllocationProp prop = simcuda_test::PinnedOn(1);
  CUmemGenericAllocationHandle h;
  ASSERT_CU(cuMemCreate(&h, g, &prop, 0));
  ASSERT_CU(cuMemMap(va, g, 0, h, 0));
  int ordinal = -1;
  ASSERT_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + 5));
  EXPECT_EQ(ordinal, 1);
  unsigned access = 99;
  ASSERT_CU(cuPointerGetAttribute(&access, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, va));
  EXPECT_EQ(access, 0u);
  ASSERT_CU(cuMemUnmap(va, g));
  ASSERT_CU(cuMemRelease(h));
  ASSERT_CU(cuMemAddressFree(va, g));
}

}  // namespace
