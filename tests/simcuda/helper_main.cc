// simcuda_test_helper: small driver-API programs that the multi-process tests run as children.
//   uninit                 exit 0 if calls before cuInit fail with CUDA_ERROR_NOT_INITIALIZED
//   hold BYTES DEV         allocate BYTES on device DEV, print "ready <ptr>", then sleep forever
//   alloc BYTES DEV        try to allocate; print "ok" or the error name; exit 0
//   kernels N NS           load the kernel set, print "ready", wait for SIGUSR1, then launch N
//                          sleep_ns(NS) kernels on device 0 and print "elapsed <simulated ms>"
// Exit codes: 0 success, 1 a check failed, 2 usage.
#include <cuda.h>
#include <signal.h>
#include <unistd.h>

#include <future>

#include "simcuda/kernels/ptx.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char* Name(CUresult r) {
  const char* n = "?";
  cuGetErrorName(r, &n);
  return n;
}

#define CHECK_CU(expr)                                               \
  do {                                                               \
    CUresult r_ = (expr);                                            \
    if (r_ != CUDA_SUCCESS) {                                        \
      std::fprintf(stderr, "%s failed: %s\n", #expr, Name(r_));      \
      return 1;                                                      \
    }                                                                \
  } while (0)

int SetUp(int dev, CUcontext* ctx) {
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDevicePrimaryCtxRetain(ctx, dev));
  CHECK_CU(cuCtxSetCurrent(*ctx));
  return 0;
}

int Uninit() {
  int count = 0;
  CUcontext ctx = nullptr;
  CUdeviceptr p = 0;
  bool ok = cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED &&
            cuCtxGetCurrent(&ctx) == CUDA_ERROR_NOT_INITIALIZED &&
            cuMemAlloc(&p, 16) == CUDA_ERROR_NOT_INITIALIZED &&
            cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_ERROR_NOT_INITIALIZED;
  int version = 0;
  ok = ok && cuDriverGetVersion(&version) == CUDA_SUCCESS && version == CUDA_VERSION;
  return ok ? 0 : 1;
}

int Hold(size_t bytes, int dev) {
  CUcontext ctx;
  if (int rc = SetUp(dev, &ctx); rc != 0) return rc;
  CUdeviceptr p = 0;
  CHECK_CU(cuMemAlloc(&p, bytes));
  std::printf("ready %llx\n", static_cast<unsigned long long>(p));
  std::fflush(stdout);
  while (true) pause();
}

int Alloc(size_t bytes, int dev) {
  CUcontext ctx;
  if (int rc = SetUp(dev, &ctx); rc != 0) return rc;
  CUdeviceptr p = 0;
  CUresult r = cuMemAlloc(&p, bytes);
  std::printf("%s\n", r == CUDA_SUCCESS ? "ok" : Name(r));
  std::fflush(stdout);
  return 0;
}

void CUDA_CB WaitFor(void* future) { static_cast<std::shared_future<void>*>(future)->wait(); }

int Kernels(int n, unsigned long long ns) {
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, nullptr);
  CUcontext ctx;
  if (int rc = SetUp(0, &ctx); rc != 0) return rc;
  CUmodule mod;
  CHECK_CU(cuModuleLoadData(&mod, basic_kernels_ptx));
  CUfunction sleep_fn;
  CHECK_CU(cuModuleGetFunction(&sleep_fn, mod, "sleep_ns"));
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e0, e1;
  CHECK_CU(cuEventCreate(&e0, 0));
  CHECK_CU(cuEventCreate(&e1, 0));
  std::printf("ready\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&usr1, &sig);
  // Hold the stream until everything is queued, so submission gaps do not count.
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  CHECK_CU(cuLaunchHostFunc(s, WaitFor, &opened));
  CHECK_CU(cuEventRecord(e0, s));
  void* params[] = {&ns};
  for (int i = 0; i < n; ++i) CHECK_CU(cuLaunchKernel(sleep_fn, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr));
  CHECK_CU(cuEventRecord(e1, s));
  gate.set_value();
  CHECK_CU(cuEventSynchronize(e1));
  float ms = 0;
  CHECK_CU(cuEventElapsedTime(&ms, e0, e1));
  std::printf("elapsed %.3f\n", static_cast<double>(ms));
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string cmd = argv[1];
  if (cmd == "uninit") return Uninit();
  if (cmd == "hold" && argc == 4) return Hold(std::strtoull(argv[2], nullptr, 0), std::atoi(argv[3]));
  if (cmd == "alloc" && argc == 4) return Alloc(std::strtoull(argv[2], nullptr, 0), std::atoi(argv[3]));
  if (cmd == "kernels" && argc == 4) return Kernels(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 0));
  return 2;
}
