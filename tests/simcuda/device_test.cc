// Tests of device queries, versions and error names against simcuda.
#include <cstring>
#include <set>
#include <string>

#include "test_util.h"

namespace {

using simcuda_test::RunHelper;

TEST(Device, CallsBeforeInitFail) { EXPECT_EQ(RunHelper({"uninit"}), 0); }

TEST(Device, CountNamesAndMemoryFollowConfig) {
  ASSERT_CU(cuInit(0));
  int count = 0;
  ASSERT_CU(cuDeviceGetCount(&count));
  EXPECT_EQ(count, 2);  // test_main: SIMCUDA_DEVICES=2x1GiB
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    ASSERT_CU(cuDeviceGet(&dev, i));
    size_t bytes = 0;
    ASSERT_CU(cuDeviceTotalMem(&bytes, dev));
    EXPECT_EQ(bytes, 1ull << 30);
    char name[256];
    ASSERT_CU(cuDeviceGetName(name, sizeof name, dev));
    EXPECT_GT(std::strlen(name), 0u);
  }
  CUdevice dev;
  EXPECT_CU_ERR(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
  size_t bytes;
  EXPECT_CU_ERR(cuDeviceTotalMem(&bytes, 5), CUDA_ERROR_INVALID_DEVICE);
}

TEST(Device, UuidsAreStableAndDistinct) {
  ASSERT_CU(cuInit(0));
  CUuuid a, b, a2;
  ASSERT_CU(cuDeviceGetUuid(&a, 0));
  ASSERT_CU(cuDeviceGetUuid(&b, 1));
  ASSERT_CU(cuDeviceGetUuid_v2(&a2, 0));
  EXPECT_EQ(std::memcmp(a.bytes, a2.bytes, 16), 0);
  EXPECT_NE(std::memcmp(a.bytes, b.bytes, 16), 0);
}

// Device 0's attribute `a` (-1 if the query failed, which is a test failure).
int Attribute(CUdevice_attribute a) {
  int v = -1;
  EXPECT_CU(cuDeviceGetAttribute(&v, a, 0));
  return v;
}

TEST(Device, AttributesAreRealistic) {
  ASSERT_CU(cuInit(0));
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE), 32);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 9);
  EXPECT_GT(Attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 0);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING), 1);
  EXPECT_EQ(Attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED), 1);
  EXPECT_GT(Attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE), 0);
  int v = 0;
  EXPECT_CU_ERR(cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(100000), 0),
                CUDA_ERROR_INVALID_VALUE);
}

TEST(Device, PciBusIdRoundTrips) {
  ASSERT_CU(cuInit(0));
  for (int i = 0; i < 2; ++i) {
    char bus[32];
    ASSERT_CU(cuDeviceGetPCIBusId(bus, sizeof bus, i));
    CUdevice dev = -1;
    ASSERT_CU(cuDeviceGetByPCIBusId(&dev, bus));
    EXPECT_EQ(dev, i) << bus;
  }
  CUdevice dev;
  EXPECT_CU_ERR(cuDeviceGetByPCIBusId(&dev, "0000:99:00.0"), CUDA_ERROR_INVALID_DEVICE);
}

TEST(Device, DriverVersionIsCuda13) {
  int version = 0;
  ASSERT_CU(cuDriverGetVersion(&version));
  EXPECT_EQ(version, 13000);
}

TEST(Errors, EveryCodeHasANameAndString) {
  const CUresult codes[] = {CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY,
                            CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_INVALID_CONTEXT,
                            CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_READY,
                            CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                            CUDA_ERROR_UNKNOWN};
  std::set<std::string> names;
  for (CUresult c : codes) {
    const char* name = nullptr;
    const char* text = nullptr;
    ASSERT_CU(cuGetErrorName(c, &name));
    ASSERT_CU(cuGetErrorString(c, &text));
    ASSERT_NE(name, nullptr);
    ASSERT_NE(text, nullptr);
    EXPECT_GT(std::strlen(text), 5u);
    names.insert(name);
  }
  EXPECT_EQ(names.size(), std::size(codes));
  const char* name = nullptr;
  EXPECT_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(cuGetErrorName(static_cast<CUresult>(123456), &name), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
