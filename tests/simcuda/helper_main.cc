// simcuda_test_helper: small driver-API programs that the multi-process tests run as children.
//   uninit                 exit 0 if calls before cuInit fail with CUDA_ERROR_NOT_INITIALIZED
//   hold BYTES DEV         allocate BYTES on device DEV, print "ready <ptr>", then sleep forever
//   alloc BYTES DEV        try to allocate; print "ok" or the error name; exit 0
//   kernels N NS           load the kernel set, print "ready", wait for SIGUSR1, then launch N
//                          sleep_ns(NS) kernels on device 0 and print "elapsed <simulated ms>"
//   interposed             (run with an LD_PRELOADed cuMemAlloc_v2 that fails) check that the
//                          program's own call is interposed but simcuda's internal calls and
//                          cuGetProcAddress results are not; exit 0 if so
//   checkpoint-target      fill 8 MiB of cuMemAlloc memory and 4 MiB of VMM memory on device 0,
//                          print "ready", wait for SIGUSR1, then check every byte and the
//                          devices the memory is on; print "verified <dev> <dev>" or "corrupt"
//   script STEP...         MPS tests' steps, each printing one line (Script() below)
// Exit codes: 0 success, 1 a check failed, 2 usage.
#include <cuda.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <future>
#include <vector>

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

// Blocks SIGUSR1 (the parent's "go" signal) so that sigwait can take it.
sigset_t BlockUsr1() {
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, nullptr);
  return usr1;
}

void CUDA_CB WaitFor(void* future) { static_cast<std::shared_future<void>*>(future)->wait(); }

int Kernels(int n, unsigned long long ns) {
  sigset_t usr1 = BlockUsr1();
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

int Interposed() {
  CUcontext ctx;
  if (int rc = SetUp(0, &ctx); rc != 0) return rc;
  CUdeviceptr p = 0;
  if (cuMemAlloc(&p, 4096) != CUDA_ERROR_UNKNOWN) return 1;  // the "shim" is in front
  size_t pitch = 0;
  CHECK_CU(cuMemAllocPitch(&p, &pitch, 100, 4, 4));  // calls cuMemAlloc_v2 inside simcuda
  CHECK_CU(cuMemFree(p));
  using AllocFn = CUresult (*)(CUdeviceptr*, size_t);
  void* fn = nullptr;
  CHECK_CU(cuGetProcAddress("cuMemAlloc", &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, nullptr));
  CHECK_CU(reinterpret_cast<AllocFn>(fn)(&p, 4096));  // simcuda's own entry point
  CHECK_CU(cuMemFree(p));
  return 0;
}

uint8_t PatternByte(size_t i, unsigned salt) { return static_cast<uint8_t>((i * 2654435761u + salt) >> 7); }

int CheckpointTarget() {
  sigset_t usr1 = BlockUsr1();
  CUcontext ctx;
  if (int rc = SetUp(0, &ctx); rc != 0) return rc;
  const size_t plain_size = 8 << 20, vmm_size = 4 << 20;
  CUdeviceptr plain = 0, va = 0;
  CHECK_CU(cuMemAlloc(&plain, plain_size));
  CHECK_CU(cuMemAddressReserve(&va, vmm_size, 0, 0, 0));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle h;
  CHECK_CU(cuMemCreate(&h, vmm_size, &prop, 0));
  CHECK_CU(cuMemMap(va, vmm_size, 0, h, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK_CU(cuMemSetAccess(va, vmm_size, &access, 1));
  std::vector<uint8_t> host(plain_size);
  for (size_t i = 0; i < plain_size; ++i) host[i] = PatternByte(i, 1);
  CHECK_CU(cuMemcpyHtoD(plain, host.data(), plain_size));
  auto* v = reinterpret_cast<uint8_t*>(va);
  for (size_t i = 0; i < vmm_size; ++i) v[i] = PatternByte(i, 2);
  std::printf("ready\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&usr1, &sig);
  std::vector<uint8_t> back(plain_size);
  CHECK_CU(cuMemcpyDtoH(back.data(), plain, plain_size));  // blocks while the process is locked
  bool ok = back == host;
  for (size_t i = 0; ok && i < vmm_size; ++i) ok = v[i] == PatternByte(i, 2);
  int dev_plain = -1, dev_vmm = -1;
  CHECK_CU(cuPointerGetAttribute(&dev_plain, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, plain));
  CHECK_CU(cuPointerGetAttribute(&dev_vmm, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va));
  if (ok) {
    std::printf("verified %d %d\n", dev_plain, dev_vmm);
  } else {
    std::printf("corrupt\n");
  }
  std::fflush(stdout);
  CHECK_CU(cuMemUnmap(va, vmm_size));
  CHECK_CU(cuMemRelease(h));
  CHECK_CU(cuMemFree(plain));
  return ok ? 0 : 1;
}

// The steps of `script`, in order; each prints one line:
//   init           cuInit                                  "init <result>"
//   ctx            retain + set device 0's primary context "ctx <result>"
//   attr           CU_DEVICE_ATTRIBUTE_MPS_ENABLED of 0    "mps <0|1>"
//   count          cuDeviceGetCount                        "count <n>" (or the error)
//   uuid:D         cuDeviceGetUuid of ordinal D            "uuid <32 hex digits>" (or the error)
//   ctx:D          as ctx, on ordinal D                    "ctx <result>"
//   free           cuMemGetInfo                            "free <bytes>"
//   alloc:B        cuMemAlloc of B bytes (kept)            "alloc <result>"
//   sleep:G:NS     sleep_ns(NS) on G blocks of 1024 threads "elapsed <simulated ms>" (or the error)
//   fill:G:N       fill_u32 of N words, G blocks of 1024   "elapsed <simulated ms>"
//   fault          a kernel writing VMM memory mapped without access for the device: the GPU's
//                  illegal-address fault                   "fault <result>"
//   sync           cuCtxSynchronize                        "sync <result>"
//   poll           cuCtxSynchronize every 10 ms until it fails (at most 10 s) "sync <result>"
//   wait           "ready", then waits for SIGUSR1
//   hold           "holding", then sleeps until killed
int Script(int argc, char** argv) {
  sigset_t usr1 = BlockUsr1();
  CUcontext ctx = nullptr;
  CUmodule mod = nullptr;
  auto say = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  auto timed = [&](const char* kernel, unsigned grid, void** params) {
    if (mod == nullptr && cuModuleLoadData(&mod, basic_kernels_ptx) != CUDA_SUCCESS) return std::string("no module");
    CUfunction fn;
    if (CUresult r = cuModuleGetFunction(&fn, mod, kernel); r != CUDA_SUCCESS) return std::string(Name(r));
    CUevent e0, e1;
    cuEventCreate(&e0, 0);
    cuEventCreate(&e1, 0);
    cuEventRecord(e0, nullptr);
    if (CUresult r = cuLaunchKernel(fn, grid, 1, 1, 1024, 1, 1, 0, nullptr, params, nullptr); r != CUDA_SUCCESS) {
      return std::string(Name(r));
    }
    cuEventRecord(e1, nullptr);
    if (CUresult r = cuEventSynchronize(e1); r != CUDA_SUCCESS) return std::string(Name(r));
    float ms = 0;
    cuEventElapsedTime(&ms, e0, e1);
    char line[64];
    std::snprintf(line, sizeof line, "elapsed %.3f", static_cast<double>(ms));
    return std::string(line);
  };
  for (int i = 0; i < argc; ++i) {
    const std::string step = argv[i];
    const size_t colon = step.find(':');
    const std::string verb = step.substr(0, colon);
    const std::string rest = colon == std::string::npos ? "" : step.substr(colon + 1);
    if (verb == "init") {
      say(std::string("init ") + Name(cuInit(0)));
    } else if (verb == "count") {
      int n = 0;
      const CUresult r = cuDeviceGetCount(&n);
      say("count " + (r == CUDA_SUCCESS ? std::to_string(n) : std::string(Name(r))));
    } else if (verb == "uuid") {
      CUdevice dev = 0;
      CUuuid u{};
      CUresult r = cuDeviceGet(&dev, std::atoi(rest.c_str()));
      if (r == CUDA_SUCCESS) r = cuDeviceGetUuid(&u, dev);
      std::string hex;
      for (char byte : u.bytes) {
        char two[3];
        std::snprintf(two, sizeof two, "%02x", static_cast<unsigned char>(byte));
        hex += two;
      }
      say("uuid " + (r == CUDA_SUCCESS ? hex : std::string(Name(r))));
    } else if (verb == "ctx") {
      CUdevice dev = 0;
      CUresult r = cuDeviceGet(&dev, rest.empty() ? 0 : std::atoi(rest.c_str()));
      if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&ctx, dev);
      if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(ctx);
      say(std::string("ctx ") + Name(r));
    } else if (verb == "attr") {
      int v = -1;
      cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, 0);
      say("mps " + std::to_string(v));
    } else if (verb == "free") {
      size_t free = 0, total = 0;
      cuMemGetInfo(&free, &total);
      say("free " + std::to_string(free));
    } else if (verb == "alloc") {
      CUdeviceptr p = 0;
      say(std::string("alloc ") + Name(cuMemAlloc(&p, std::strtoull(rest.c_str(), nullptr, 0))));
    } else if (verb == "sleep") {
      unsigned grid = static_cast<unsigned>(std::strtoul(rest.c_str(), nullptr, 0));
      unsigned long long ns = std::strtoull(rest.substr(rest.find(':') + 1).c_str(), nullptr, 0);
      void* params[] = {&ns};
      say(timed("sleep_ns", grid, params));
    } else if (verb == "fill") {
      unsigned grid = static_cast<unsigned>(std::strtoul(rest.c_str(), nullptr, 0));
      unsigned long long n = std::strtoull(rest.substr(rest.find(':') + 1).c_str(), nullptr, 0);
      CUdeviceptr out = 0;
      if (CUresult r = cuMemAlloc(&out, n * 4); r != CUDA_SUCCESS) {
        say(Name(r));
        continue;
      }
      unsigned seed = 7;
      void* params[] = {&out, &n, &seed};
      say(timed("fill_u32", grid, params));
    } else if (verb == "fault") {
      const size_t size = 2 << 20;
      CUdeviceptr va = 0;
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = 0;
      CUmemGenericAllocationHandle h;
      CHECK_CU(cuMemAddressReserve(&va, size, 0, 0, 0));
      CHECK_CU(cuMemCreate(&h, size, &prop, 0));
      CHECK_CU(cuMemMap(va, size, 0, h, 0));  // no cuMemSetAccess: the device may not touch it
      if (mod == nullptr) CHECK_CU(cuModuleLoadData(&mod, basic_kernels_ptx));
      CUfunction fn;
      CHECK_CU(cuModuleGetFunction(&fn, mod, "fill_u32"));
      unsigned long long n = 16;
      unsigned seed = 1;
      void* params[] = {&va, &n, &seed};
      say(std::string("fault ") + Name(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr)));
    } else if (verb == "sync") {
      say(std::string("sync ") + Name(cuCtxSynchronize()));
    } else if (verb == "poll") {
      CUresult r = CUDA_SUCCESS;
      for (int tries = 0; tries < 1000 && (r = cuCtxSynchronize()) == CUDA_SUCCESS; ++tries) usleep(10000);
      say(std::string("sync ") + Name(r));
    } else if (verb == "wait") {
      say("ready");
      int sig = 0;
      sigwait(&usr1, &sig);
    } else if (verb == "hold") {
      say("holding");
      while (true) pause();
    } else {
      return 2;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string cmd = argv[1];
  if (cmd == "uninit") return Uninit();
  if (cmd == "hold" && argc == 4) return Hold(std::strtoull(argv[2], nullptr, 0), std::atoi(argv[3]));
  if (cmd == "alloc" && argc == 4) return Alloc(std::strtoull(argv[2], nullptr, 0), std::atoi(argv[3]));
  if (cmd == "checkpoint-target") return CheckpointTarget();
  if (cmd == "interposed") return Interposed();
  if (cmd == "script") return Script(argc - 2, argv + 2);
  if (cmd == "kernels" && argc == 4) return Kernels(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 0));
  return 2;
}
