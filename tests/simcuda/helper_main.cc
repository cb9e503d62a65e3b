// simcuda_test_helper: small driver-API programs that the multi-process tests run as children.
//   uninit                 exit 0 if calls before cuInit fail with CUDA_ERROR_NOT_INITIALIZED
//   hold BYTES DEV         allocate BYTES on device DEV, print "ready <ptr>", then sleep forever
//   alloc BYTES DEV        try to allocate; print "ok" or the error name; exit 0
// Exit codes: 0 success, 1 a check failed, 2 usage.
#include <cuda.h>
#include <unistd.h>

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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string cmd = argv[1];
  if (cmd == "uninit") return Uninit();
  if (cmd == "hold" && argc == 4) return Hold(std::strtoull(argv[2], nullptr, 0), std::atoi(argv[3]));
  if (cmd == "alloc" && argc == 4) return Alloc(std::strtoull(argv[2], nullptr, 0), std::atoi(argv[3]));
  return 2;
}
