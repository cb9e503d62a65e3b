// Tests of modules, libraries and kernel launches on the kernel set's CPU twins: parameter
// passing (kernelParams and the packed `extra` buffer), copies taken at launch time, simulated
// kernel durations, and the serialisation of two processes' kernels on one simulated GPU.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "simcuda/kernels/ptx.h"
#include "test_util.h"

namespace {

using u64 = unsigned long long;

class LaunchTest : public simcuda_test::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_CU(cuModuleLoadData(&mod_, basic_kernels_ptx));
  }
  void TearDown() override {
    if (mod_ != nullptr) {
      EXPECT_CU(cuModuleUnload(mod_));
    }
    DriverTest::TearDown();
  }
  CUfunction Fn(const char* name) {
    CUfunction f = nullptr;
    EXPECT_CU(cuModuleGetFunction(&f, mod_, name));
    return f;
  }
  CUmodule mod_ = nullptr;
};

TEST_F(LaunchTest, VectorAddWithKernelParams) {
  const u64 n = 1000;
  std::vector<float> a(n), b(n), c(n);
  for (u64 i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 2.0f * static_cast<float>(i);
  }
  CUdeviceptr da, db, dc;
  ASSERT_CU(cuMemAlloc(&da, n * 4));
  ASSERT_CU(cuMemAlloc(&db, n * 4));
  ASSERT_CU(cuMemAlloc(&dc, n * 4));
  ASSERT_CU(cuMemcpyHtoD(da, a.data(), n * 4));
  ASSERT_CU(cuMemcpyHtoD(db, b.data(), n * 4));
  void* params[] = {&da, &db, &dc, const_cast<u64*>(&n)};
  ASSERT_CU(cuLaunchKernel(Fn("vector_add"), 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
  ASSERT_CU(cuMemcpyDtoH(c.data(), dc, n * 4));
  for (u64 i = 0; i < n; ++i) ASSERT_FLOAT_EQ(c[i], 3.0f * static_cast<float>(i)) << i;
  for (CUdeviceptr p : {da, db, dc}) ASSERT_CU(cuMemFree(p));
}

TEST_F(LaunchTest, SaxpyWithPackedExtraBuffer) {
  const u64 n = 64;
  std::vector<float> x(n, 2.0f), y(n, 1.0f);
  CUdeviceptr dx, dy;
  ASSERT_CU(cuMemAlloc(&dx, n * 4));
  ASSERT_CU(cuMemAlloc(&dy, n * 4));
  ASSERT_CU(cuMemcpyHtoD(dx, x.data(), n * 4));
  ASSERT_CU(cuMemcpyHtoD(dy, y.data(), n * 4));
  // saxpy(float alpha, const float* x, float* y, u64 n): offsets 0, 8, 16, 24.
  unsigned char buffer[32] = {};
  float alpha = 3.0f;
  std::memcpy(buffer, &alpha, 4);
  std::memcpy(buffer + 8, &dx, 8);
  std::memcpy(buffer + 16, &dy, 8);
  std::memcpy(buffer + 24, &n, 8);
  size_t size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  ASSERT_CU(cuLaunchKernel(Fn("saxpy"), 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, extra));
  ASSERT_CU(cuMemcpyDtoH(y.data(), dy, n * 4));
  for (float v : y) ASSERT_FLOAT_EQ(v, 7.0f);
  size_t small = 16;
  void* short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &small, CU_LAUNCH_PARAM_END};
  EXPECT_CU_ERR(cuLaunchKernel(Fn("saxpy"), 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, short_extra),
                CUDA_ERROR_INVALID_VALUE);
  EXPECT_CU_ERR(cuLaunchKernel(Fn("saxpy"), 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr),
                CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(dx));
  ASSERT_CU(cuMemFree(dy));
}

TEST_F(LaunchTest, ParameterValuesAreCopiedAtLaunch) {
  const u64 n = 256;
  CUdeviceptr first, second;
  ASSERT_CU(cuMemAlloc(&first, n * 4));
  ASSERT_CU(cuMemAlloc(&second, n * 4));
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  simcuda_test::StreamGate gate;
  ASSERT_CU(gate.Close(s));
  unsigned seed = 11;
  CUdeviceptr out = first;
  void* params[] = {&out, const_cast<u64*>(&n), &seed};
  ASSERT_CU(cuLaunchKernel(Fn("fill_u32"), 1, 1, 1, 256, 1, 1, 0, s, params, nullptr));
  seed = 99;  // must not affect the queued launch
  out = second;
  gate.Open();
  ASSERT_CU(cuStreamSynchronize(s));
  seed = 11;
  ASSERT_CU(cuLaunchKernel(Fn("fill_u32"), 1, 1, 1, 256, 1, 1, 0, s, params, nullptr));
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(first), reinterpret_cast<void*>(second), n * 4), 0);
  ASSERT_CU(cuStreamDestroy(s));
  ASSERT_CU(cuMemFree(first));
  ASSERT_CU(cuMemFree(second));
}

TEST_F(LaunchTest, KernelDurationInSimulatedTime) {
  CUstream s;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e0, e1;
  ASSERT_CU(cuEventCreate(&e0, 0));
  ASSERT_CU(cuEventCreate(&e1, 0));
  simcuda_test::StreamGate gate;
  ASSERT_CU(gate.Close(s));
  ASSERT_CU(cuEventRecord(e0, s));
  u64 ns = 10'000'000;
  void* params[] = {&ns};
  ASSERT_CU(cuLaunchKernel(Fn("sleep_ns"), 1, 1, 1, 1, 1, 1, 0, s, params, nullptr));
  ASSERT_CU(cuLaunchKernel(Fn("sleep_ns"), 1, 1, 1, 1, 1, 1, 0, s, params, nullptr));
  ASSERT_CU(cuEventRecord(e1, s));
  gate.Open();
  ASSERT_CU(cuEventSynchronize(e1));
  float ms = 0;
  ASSERT_CU(cuEventElapsedTime(&ms, e0, e1));
  EXPECT_NEAR(ms, 20.010, 0.002);  // 2 x (10 ms + 5 us launch overhead)
  ASSERT_CU(cuEventDestroy(e0));
  ASSERT_CU(cuEventDestroy(e1));
  ASSERT_CU(cuStreamDestroy(s));
}

TEST_F(LaunchTest, LaunchKernelExAndCooperative) {
  const u64 n = 16;
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, n * 4));
  unsigned seed = 5;
  void* params[] = {&d, const_cast<u64*>(&n), &seed};
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 16;
  config.blockDimY = config.blockDimZ = 1;
  ASSERT_CU(cuLaunchKernelEx(&config, Fn("fill_u32"), params, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  std::vector<unsigned> a(n), b(n);
  ASSERT_CU(cuMemcpyDtoH(a.data(), d, n * 4));
  ASSERT_CU(cuMemsetD8(d, 0, n * 4));
  ASSERT_CU(cuLaunchCooperativeKernel(Fn("fill_u32"), 1, 1, 1, 16, 1, 1, 0, nullptr, params));
  ASSERT_CU(cuMemcpyDtoH(b.data(), d, n * 4));
  EXPECT_EQ(a, b);
  EXPECT_NE(a[1], 0u);
  config.blockDimX = 2048;
  EXPECT_CU_ERR(cuLaunchKernelEx(&config, Fn("fill_u32"), params, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(d));
}

TEST_F(LaunchTest, LibrariesAndKernelHandles) {
  CUlibrary lib;
  ASSERT_CU(cuLibraryLoadData(&lib, basic_kernels_ptx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  unsigned count = 0;
  ASSERT_CU(cuLibraryGetKernelCount(&count, lib));
  EXPECT_EQ(count, 5u);
  CUkernel k;
  ASSERT_CU(cuLibraryGetKernel(&k, lib, "fill_u32"));
  const char* name = nullptr;
  ASSERT_CU(cuKernelGetName(&name, k));
  EXPECT_STREQ(name, "fill_u32");
  CUfunction f;
  ASSERT_CU(cuKernelGetFunction(&f, k));
  CUmodule m;
  ASSERT_CU(cuLibraryGetModule(&m, lib));
  CUmodule fm;
  ASSERT_CU(cuFuncGetModule(&fm, f));
  EXPECT_EQ(fm, m);
  int threads = 0;
  ASSERT_CU(cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
  EXPECT_EQ(threads, 1024);
  const u64 n = 8;
  CUdeviceptr d;
  ASSERT_CU(cuMemAlloc(&d, n * 4));
  unsigned seed = 3;
  void* params[] = {&d, const_cast<u64*>(&n), &seed};
  // A CUkernel may be passed where a CUfunction is expected.
  ASSERT_CU(cuLaunchKernel(reinterpret_cast<CUfunction>(k), 1, 1, 1, 8, 1, 1, 0, nullptr, params, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_NE(reinterpret_cast<unsigned*>(d)[7], 0u);
  ASSERT_CU(cuMemFree(d));
  EXPECT_CU_ERR(cuLibraryGetKernel(&k, lib, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  ASSERT_CU(cuLibraryUnload(lib));
  EXPECT_CU_ERR(cuLibraryGetKernel(&k, lib, "fill_u32"), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(LaunchTest, LookupErrors) {
  CUfunction f;
  EXPECT_CU_ERR(cuModuleGetFunction(&f, mod_, "not_in_the_image"), CUDA_ERROR_NOT_FOUND);
  CUmodule bad;
  const char junk[] = "this is not a module image";
  EXPECT_CU_ERR(cuModuleLoadData(&bad, junk), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_CU_ERR(cuModuleLoad(&bad, "/nonexistent/file.ptx"), CUDA_ERROR_FILE_NOT_FOUND);
  EXPECT_CU_ERR(cuLaunchKernel(reinterpret_cast<CUfunction>(&bad), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
                CUDA_ERROR_INVALID_HANDLE);
}

// Two processes each running 20 x 10 ms of kernels on one simulated GPU (real time, scale 1)
// take about twice as long as one alone: the GPU runs one kernel at a time across processes.
TEST(CrossProcess, KernelsOfTwoProcessesSerialise) {
  std::string registry = "/simcuda-test-" + std::to_string(getpid()) + "-serial";
  std::vector<std::string> env = {"SIMCUDA_REGISTRY=" + registry, "SIMCUDA_TIME_SCALE=1"};
  auto run = [&](int processes) {
    std::vector<simcuda_test::Child> children;
    for (int i = 0; i < processes; ++i) {
      children.push_back(simcuda_test::SpawnHelper({"kernels", "20", "10000000"}, env));
      EXPECT_EQ(children.back().ReadLine(), "ready");
    }
    for (auto& c : children) c.Kill(SIGUSR1);
    double longest = 0;
    for (auto& c : children) {
      std::string line = c.ReadLine();
      EXPECT_EQ(line.rfind("elapsed ", 0), 0u) << line;
      if (line.size() > 8) longest = std::max(longest, std::stod(line.substr(8)));
      EXPECT_EQ(c.Wait(), 0);
    }
    return longest;
  };
  double alone = run(1);
  EXPECT_NEAR(alone, 200.1, 1.0);
  double together = run(2);
  EXPECT_GE(together, 1.6 * alone);
  EXPECT_LE(together, 3.0 * alone);
  shm_unlink(registry.c_str());
}

}  // namespace
