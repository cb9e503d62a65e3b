// Kernels on the shim's memory vs the driver's own: the same memory-bound kernel (vector_add
// from simcuda's kernel set, compiled to PTX) on buffers from cuMemAlloc and on buffers from
// VgpuMemory (cuMemCreate + cuMemMap, 2 MiB granules, small buffers sub-allocated in an arena,
// large ones in dedicated chunks), alternating in the same run, timed with CUDA events. The
// question it answers on a GPU host: does running on VMM-mapped memory cost the GPU anything
// (page size, TLB reach, mapping layout)? On the H200 a sample was ~4% slower under the shim
// stand-alone while the hooks' CPU cost per request is ~1 us (docs/preload.md, "Benchmarks").
//
// Counters per buffer size: direct_us and vmm_us (GPU time per kernel), ratio = vmm / direct,
// and launch_sync_direct_us / launch_sync_vmm_us (one tiny kernel launched and synchronised:
// the latency a request sees per dependent step).
//
//   LD_LIBRARY_PATH=build/simcuda-lib build/bin/preload_memory_vmm_kernel_bench   (simcuda)
//   build/bin/preload_memory_vmm_kernel_bench --real-gpu                         (GPU host)
//
// On simcuda the kernel runs on the CPU and the ratio only checks the plumbing (~1.0).
#include <cuda.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "gshare/memory/vgpu_memory.h"
#include "simcuda/kernels/ptx.h"

namespace gshare::memory {
namespace {

bool g_real_gpu = false;
CUfunction g_vector_add = nullptr;
CUstream g_stream = nullptr;
DeviceApi g_api;

void* ResolveFromProcess(const char* name, void* /*ctx*/) { return dlsym(RTLD_DEFAULT, name); }

bool Ok(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "%s failed: %d\n", what, static_cast<int>(r));
  return false;
}

// Three buffers (a + b -> c) of `bytes` each.
struct Buffers {
  CUdeviceptr a = 0, b = 0, c = 0;
  unsigned long long n = 0;
};

bool Launch(const Buffers& buf, unsigned long long n) {
  void* args[] = {const_cast<CUdeviceptr*>(&buf.a), const_cast<CUdeviceptr*>(&buf.b),
                  const_cast<CUdeviceptr*>(&buf.c), &n};
  const unsigned block = 256;
  const auto grid = static_cast<unsigned>(std::min<unsigned long long>((n + block - 1) / block, 4096));
  return Ok(cuLaunchKernel(g_vector_add, grid, 1, 1, block, 1, 1, 0, g_stream, args, nullptr),
            "cuLaunchKernel");
}

// GPU milliseconds of `kernels` launches on `buf`, timed with events.
double KernelMs(const Buffers& buf, int kernels) {
  CUevent start = nullptr, end = nullptr;
  if (!Ok(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate") ||
      !Ok(cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate"))
    return -1;
  (void)cuEventRecord(start, g_stream);
  for (int k = 0; k < kernels; ++k) (void)Launch(buf, buf.n);
  (void)cuEventRecord(end, g_stream);
  (void)cuEventSynchronize(end);
  float ms = -1;
  (void)cuEventElapsedTime(&ms, start, end);
  (void)cuEventDestroy(start);
  (void)cuEventDestroy(end);
  return ms;
}

// Microseconds from launching one 1-element kernel to its completion seen by the host.
double LaunchSyncUs(const Buffers& buf) {
  const auto t0 = std::chrono::steady_clock::now();
  (void)Launch(buf, 1);
  (void)cuStreamSynchronize(g_stream);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

void BM_KernelOnVmmVsCuMemAlloc(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0)) * kMiB;
  Buffers direct, vmm;
  direct.n = vmm.n = bytes / sizeof(float);
  VgpuMemoryOptions options;
  options.quota_bytes = 4 * bytes + 64 * kMiB;
  VgpuMemory mem(g_api, options);
  for (CUdeviceptr* p : {&direct.a, &direct.b, &direct.c})
    if (!Ok(cuMemAlloc(p, bytes), "cuMemAlloc")) return state.SkipWithError("cuMemAlloc");
  for (CUdeviceptr* p : {&vmm.a, &vmm.b, &vmm.c})
    if (!Ok(mem.Allocate(bytes, p), "VgpuMemory::Allocate")) return state.SkipWithError("Allocate");
  for (const Buffers* buf : {&direct, &vmm})
    for (CUdeviceptr p : {buf->a, buf->b, buf->c}) (void)cuMemsetD32(p, 0x3F800000, direct.n);
  const int kernels = g_real_gpu ? 50 : 3;
  (void)KernelMs(direct, 1);  // warm both: module, first touches
  (void)KernelMs(vmm, 1);
  std::vector<double> d_ms, v_ms, d_sync, v_sync;
  bool direct_first = true;
  for (auto _ : state) {
    for (const bool on_vmm : {!direct_first, direct_first}) {
      const Buffers& buf = on_vmm ? vmm : direct;
      (on_vmm ? v_ms : d_ms).push_back(KernelMs(buf, kernels) / kernels);
      (on_vmm ? v_sync : d_sync).push_back(LaunchSyncUs(buf));
    }
    direct_first = !direct_first;
  }
  for (CUdeviceptr p : {direct.a, direct.b, direct.c}) (void)cuMemFree(p);
  for (CUdeviceptr p : {vmm.a, vmm.b, vmm.c}) (void)mem.Free(p);
  const double d = Median(d_ms) * 1000, v = Median(v_ms) * 1000;
  state.counters["direct_us"] = d;
  state.counters["vmm_us"] = v;
  state.counters["ratio"] = d > 0 ? v / d : 0;
  state.counters["launch_sync_direct_us"] = Median(d_sync);
  state.counters["launch_sync_vmm_us"] = Median(v_sync);
}
// 1 MiB buffers are sub-allocated inside arena granules; 64 and 256 MiB get dedicated chunks.
BENCHMARK(BM_KernelOnVmmVsCuMemAlloc)->Arg(1)->Arg(64)->Arg(256)->Iterations(20)->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gshare::memory

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--real-gpu") == 0) {
      gshare::memory::g_real_gpu = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  const std::string registry = "/gshare-vmm-kernel-bench-" + std::to_string(getpid());
  if (!gshare::memory::g_real_gpu) {
    setenv("SIMCUDA_REGISTRY", registry.c_str(), 1);
    setenv("SIMCUDA_DEVICES", "1x4GiB", 0);
    setenv("SIMCUDA_TIME_SCALE", "0.001", 0);  // simulated kernel time: the ratio is plumbing
#ifdef SIMCUDA_KERNELS_LIB
    setenv("SIMCUDA_KERNELS", SIMCUDA_KERNELS_LIB, 0);
#endif
  }
  using gshare::memory::Ok;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  if (!Ok(cuInit(0), "cuInit") || !Ok(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      !Ok(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !Ok(cuCtxSetCurrent(ctx), "cuCtxSetCurrent") ||
      !Ok(cuModuleLoadData(&module, basic_kernels_ptx), "cuModuleLoadData") ||
      !Ok(cuModuleGetFunction(&gshare::memory::g_vector_add, module, "vector_add"),
          "cuModuleGetFunction") ||
      !Ok(cuStreamCreate(&gshare::memory::g_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
      !Ok(gshare::memory::ResolveDeviceApi(gshare::memory::ResolveFromProcess, nullptr,
                                           &gshare::memory::g_api),
          "ResolveDeviceApi")) {
    shm_unlink(registry.c_str());
    return 1;
  }
  int new_argc = static_cast<int>(args.size());
  benchmark::Initialize(&new_argc, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!gshare::memory::g_real_gpu) shm_unlink(registry.c_str());
  return 0;
}
