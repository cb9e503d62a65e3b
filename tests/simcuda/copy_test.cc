// Tests of copies and memsets (1D, 2D, 3D, sync and async, per-thread stream variants).
#include <cstring>
#include <numeric>
#include <vector>

#include "test_util.h"

extern "C" CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr, const void*, size_t);
extern "C" CUresult cuMemcpyDtoH_v2_ptds(void*, CUdeviceptr, size_t);

namespace {

using CopyTest = simcuda_test::DriverTest;

std::vector<unsigned char> Pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed) & 0xff);
  return v;
}

TEST_F(CopyTest, HostDeviceRoundTrip) {
  const size_t n = 3 << 20;
  std::vector<unsigned char> in = Pattern(n, 1), out(n);
  CUdeviceptr a, b;
  ASSERT_CU(cuMemAlloc(&a, n));
  ASSERT_CU(cuMemAlloc(&b, n));
  ASSERT_CU(cuMemcpyHtoD(a, in.data(), n));
  ASSERT_CU(cuMemcpyDtoD(b, a, n));
  ASSERT_CU(cuMemcpyDtoH(out.data(), b, n));
  EXPECT_EQ(in, out);
  std::vector<unsigned char> out2(n);
  ASSERT_CU(cuMemcpy(reinterpret_cast<CUdeviceptr>(out2.data()), b, n));  // unified addressing
  EXPECT_EQ(in, out2);
  ASSERT_CU(cuMemFree(a));
  ASSERT_CU(cuMemFree(b));
}

TEST_F(CopyTest, PerThreadStreamVariants) {
  const size_t n = 4096;
  std::vector<unsigned char> in = Pattern(n, 3), out(n);
  CUdeviceptr a;
  ASSERT_CU(cuMemAlloc(&a, n));
  ASSERT_CU(cuMemcpyHtoD_v2_ptds(a, in.data(), n));
  ASSERT_CU(cuMemcpyDtoH_v2_ptds(out.data(), a, n));
  EXPECT_EQ(in, out);
  ASSERT_CU(cuMemFree(a));
}

TEST_F(CopyTest, AsyncCopiesOnAStream) {
  const size_t n = 1 << 20;
  std::vector<unsigned char> in = Pattern(n, 5), out(n);
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr a;
  ASSERT_CU(cuMemAlloc(&a, n));
  ASSERT_CU(cuMemcpyHtoDAsync(a, in.data(), n, s));
  ASSERT_CU(cuMemsetD8Async(a + 10, 0xee, 5, s));
  ASSERT_CU(cuMemcpyDtoHAsync(out.data(), a, n, s));
  ASSERT_CU(cuStreamSynchronize(s));
  std::memset(in.data() + 10, 0xee, 5);
  EXPECT_EQ(in, out);
  ASSERT_CU(cuMemFree(a));
  ASSERT_CU(cuStreamDestroy(s));
}

TEST_F(CopyTest, BadPointersAreRejected) {
  std::vector<unsigned char> host(64);
  CUdeviceptr a;
  ASSERT_CU(cuMemAlloc(&a, 64));
  EXPECT_CU_ERR(cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(host.data()), host.data(), 64),
                CUDA_ERROR_INVALID_VALUE);
  EXPECT_CU_ERR(cuMemcpyHtoD(a, host.data(), 65), CUDA_ERROR_INVALID_VALUE);  // past the end
  EXPECT_CU_ERR(cuMemcpyDtoH(host.data(), 0, 8), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(a));
}

TEST_F(CopyTest, Memsets) {
  CUdeviceptr a;
  ASSERT_CU(cuMemAlloc(&a, 1024));
  ASSERT_CU(cuMemsetD32(a, 0xdeadbeef, 256));
  std::vector<uint32_t> w(256);
  ASSERT_CU(cuMemcpyDtoH(w.data(), a, 1024));
  for (uint32_t x : w) ASSERT_EQ(x, 0xdeadbeefu);
  ASSERT_CU(cuMemsetD16(a, 0x1234, 512));
  std::vector<uint16_t> h(512);
  ASSERT_CU(cuMemcpyDtoH(h.data(), a, 1024));
  for (uint16_t x : h) ASSERT_EQ(x, 0x1234);
  ASSERT_CU(cuMemsetD8(a, 0x5a, 1024));
  std::vector<unsigned char> b(1024);
  ASSERT_CU(cuMemcpyDtoH(b.data(), a, 1024));
  for (unsigned char x : b) ASSERT_EQ(x, 0x5a);
  EXPECT_CU_ERR(cuMemsetD32(a + 1, 0, 4), CUDA_ERROR_INVALID_VALUE);  // misaligned
  // 2D: 4 rows of 8 bytes at pitch 64.
  ASSERT_CU(cuMemsetD8(a, 0, 1024));
  ASSERT_CU(cuMemsetD2D8(a, 64, 0x77, 8, 4));
  ASSERT_CU(cuMemcpyDtoH(b.data(), a, 1024));
  for (size_t i = 0; i < 1024; ++i) {
    bool inside = i < 4 * 64 && (i % 64) < 8;
    ASSERT_EQ(b[i], inside ? 0x77 : 0) << i;
  }
  ASSERT_CU(cuMemsetD2D32(a, 64, 0x01020304, 2, 2));
  ASSERT_CU(cuMemFree(a));
}

TEST_F(CopyTest, TwoDAndThreeDCopies) {
  // A 16x8 host matrix (pitch 16) into device rows of pitch 64, then back out of a sub-box.
  std::vector<unsigned char> host = Pattern(16 * 8, 9);
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, 64 * 8));
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = host.data();
  c.srcPitch = 16;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = d;
  c.dstPitch = 64;
  c.WidthInBytes = 16;
  c.Height = 8;
  ASSERT_CU(cuMemcpy2D(&c));
  for (int y = 0; y < 8; ++y) {
    ASSERT_EQ(std::memcmp(reinterpret_cast<void*>(d + y * 64), host.data() + y * 16, 16), 0);
  }
  // 3D: read back rows 2..3 of slices (depth 2 of height 4) into a packed buffer.
  std::vector<unsigned char> out(4 * 2 * 2);
  CUDA_MEMCPY3D c3{};
  c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c3.srcDevice = d;
  c3.srcPitch = 64;
  c3.srcHeight = 4;
  c3.srcXInBytes = 4;
  c3.srcY = 2;
  c3.dstMemoryType = CU_MEMORYTYPE_HOST;
  c3.dstHost = out.data();
  c3.dstPitch = 4;
  c3.dstHeight = 2;
  c3.WidthInBytes = 4;
  c3.Height = 2;
  c3.Depth = 2;
  ASSERT_CU(cuMemcpy3D(&c3));
  for (int z = 0; z < 2; ++z) {
    for (int y = 0; y < 2; ++y) {
      int src_row = z * 4 + 2 + y;
      ASSERT_EQ(std::memcmp(out.data() + (z * 2 + y) * 4, host.data() + src_row * 16 + 4, 4), 0);
    }
  }
  ASSERT_CU(cuMemFree(d));
}

TEST_F(CopyTest, PeerCopyBetweenDevices) {
  CUcontext other;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&other, 1));
  CUdeviceptr a, b;
  ASSERT_CU(cuMemAlloc(&a, 4096));
  ASSERT_CU(cuCtxPushCurrent(other));
  ASSERT_CU(cuMemAlloc(&b, 4096));
  CUcontext popped;
  ASSERT_CU(cuCtxPopCurrent(&popped));
  std::vector<unsigned char> in = Pattern(4096, 11), out(4096);
  ASSERT_CU(cuMemcpyHtoD(a, in.data(), 4096));
  ASSERT_CU(cuMemcpyPeer(b, other, a, ctx_, 4096));
  ASSERT_CU(cuMemcpyDtoH(out.data(), b, 4096));
  EXPECT_EQ(in, out);
  // The same through the 3D peer form, rows 1..2 of a 4x1024 box.
  std::vector<unsigned char> zero(4096, 0);
  ASSERT_CU(cuMemcpyHtoD(b, zero.data(), 4096));
  CUDA_MEMCPY3D_PEER p{};
  p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  p.srcDevice = a;
  p.srcContext = ctx_;
  p.srcPitch = 1024;
  p.srcY = 1;
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.dstDevice = b;
  p.dstContext = other;
  p.dstPitch = 1024;
  p.dstY = 1;
  p.WidthInBytes = 1024;
  p.Height = 2;
  p.Depth = 1;
  ASSERT_CU(cuMemcpy3DPeer(&p));
  ASSERT_CU(cuMemcpyDtoH(out.data(), b, 4096));
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(out[i], (i >= 1024 && i < 3072) ? in[i] : 0) << i;
  ASSERT_CU(cuMemFree(a));
  ASSERT_CU(cuMemFree(b));
  ASSERT_CU(cuDevicePrimaryCtxRelease(1));
}

}  // namespace
