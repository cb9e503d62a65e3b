// Interception overhead of libgshare.so, measured in one process and one run: the same driver
// calls made directly on simcuda's libcuda.so.1 and through the shim's exported hooks (the shim
// is dlopen'ed RTLD_LOCAL, so it wraps the very same simcuda instance). Each benchmark
// alternates batches of direct and shim calls and reports both per-call times (the calling
// thread's CPU time, so preemption does not count), the difference (added_ns) and the ratio.
//
//   preload_bench --benchmark_format=json
// Environment prepared by main(): SIMCUDA_DEVICES, a private SIMCUDA_REGISTRY, SIMCUDA_KERNELS,
// SIMCUDA_TIME_SCALE (simulated time runs fast: the worker threads never hold up the caller).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "driver_table.h"
#include "same_run_compare.h"

#include "simcuda/kernels/ptx.h"

namespace {

using Table = gshare::bench::DriverTable;

struct Setup : gshare::bench::DirectAndShim {
  PFN_cuStreamSynchronize_v2000 sync = nullptr;
  CUstream stream = nullptr;
  CUfunction kernel = nullptr;
  CUdeviceptr buffer = 0;
  CUdeviceptr vgpu_buffer = 0;  // allocated through the shim (a vGPU allocation)
};

Setup& GetSetup() {
  static Setup s = [] {
    Setup r;
    static_cast<gshare::bench::DirectAndShim&>(r) =
        gshare::bench::OpenDirectAndShim("libcuda.so.1", GSHARE_PRELOAD_LIB);
    if (!r.ok) return r;
    void* driver = r.driver_handle;
    void* shim = r.shim_handle;
    r.ok = false;  // until the context, stream, kernel and buffers are there
    // Initialise through the shim (its cuInit creates the vGPU), set up a context directly.
    auto shim_init = reinterpret_cast<PFN_cuInit_v2000>(dlsym(shim, "cuInit"));
    auto device_retain = reinterpret_cast<PFN_cuDevicePrimaryCtxRetain_v7000>(
        dlsym(driver, "cuDevicePrimaryCtxRetain"));
    auto set_current = reinterpret_cast<PFN_cuCtxSetCurrent_v4000>(dlsym(driver, "cuCtxSetCurrent"));
    auto stream_create = reinterpret_cast<PFN_cuStreamCreate_v2000>(dlsym(driver, "cuStreamCreate"));
    auto load = reinterpret_cast<PFN_cuModuleLoadData_v2000>(dlsym(driver, "cuModuleLoadData"));
    auto get_fn = reinterpret_cast<PFN_cuModuleGetFunction_v2000>(dlsym(driver, "cuModuleGetFunction"));
    r.sync = reinterpret_cast<PFN_cuStreamSynchronize_v2000>(dlsym(driver, "cuStreamSynchronize"));
    CUcontext ctx = nullptr;
    CUmodule module = nullptr;
    if (shim_init(0) != CUDA_SUCCESS || device_retain(&ctx, 0) != CUDA_SUCCESS ||
        set_current(ctx) != CUDA_SUCCESS || stream_create(&r.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        load(&module, basic_kernels_ptx) != CUDA_SUCCESS ||
        get_fn(&r.kernel, module, "sleep_ns") != CUDA_SUCCESS ||
        r.direct.alloc(&r.buffer, 4096) != CUDA_SUCCESS ||
        r.shim.alloc(&r.vgpu_buffer, 4096) != CUDA_SUCCESS) {
      std::fprintf(stderr, "driver set-up failed\n");
      return r;
    }
    r.ok = true;
    return r;
  }();
  return s;
}

constexpr int kBatch = 128;

template <typename Op>
void Compare(benchmark::State& state, Op op) {
  Setup& s = GetSetup();
  gshare::bench::CompareOrSkip(state, s, kBatch, op, [&s] { (void)s.sync(s.stream); });
}

void BM_LaunchKernel(benchmark::State& state) {
  Setup& s = GetSetup();
  unsigned long long ns = 0;
  void* params[] = {&ns};
  Compare(state, [&](const Table& t) {
    benchmark::DoNotOptimize(t.launch(s.kernel, 1, 1, 1, 1, 1, 1, 0, s.stream, params, nullptr));
  });
}
BENCHMARK(BM_LaunchKernel)->UseRealTime();

void BM_MemcpyHtoDAsync(benchmark::State& state) {
  Setup& s = GetSetup();
  static uint32_t value = 7;
  Compare(state, [&](const Table& t) {
    benchmark::DoNotOptimize(t.htod_async(s.buffer, &value, sizeof(value), s.stream));
  });
}
BENCHMARK(BM_MemcpyHtoDAsync)->UseRealTime();

// The shim's own cost isolated: a call the driver rejects at once (null destination, zero bytes)
// still takes the hook's whole fast path (runtime pointer, submission gate, forward).
void BM_HookFastPath(benchmark::State& state) {
  Setup& s = GetSetup();
  Compare(state, [&](const Table& t) {
    benchmark::DoNotOptimize(t.htod_async(0, nullptr, 0, s.stream));
  });
}
BENCHMARK(BM_HookFastPath)->UseRealTime();

// What cudart's cudaPointerGetAttributes asks (no range attributes), on a vGPU allocation.
void BM_PointerGetAttributes(benchmark::State& state) {
  Setup& s = GetSetup();
  Compare(state, [&](const Table& t) {
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    unsigned type = 0;
    CUdeviceptr device_ptr = 0;
    int managed = 0;
    int ordinal = 0;
    void* data[] = {&type, &device_ptr, &managed, &ordinal};
    benchmark::DoNotOptimize(t.pointer_attributes(4, attrs, data, s.vgpu_buffer));
  });
}
BENCHMARK(BM_PointerGetAttributes)->UseRealTime();

void BM_MemGetInfo(benchmark::State& state) {
  Compare(state, [&](const Table& t) {
    size_t free_bytes = 0;
    size_t total = 0;
    benchmark::DoNotOptimize(t.mem_get_info(&free_bytes, &total));
  });
}
BENCHMARK(BM_MemGetInfo)->UseRealTime();

// cuMemAlloc + cuMemFree pairs of `range(0)` bytes: pairs per second through each path.
void BM_AllocFreePair(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  Compare(state, [&](const Table& t) {
    CUdeviceptr p = 0;
    if (t.alloc(&p, bytes) == CUDA_SUCCESS) benchmark::DoNotOptimize(t.free(p));
  });
  state.counters["direct_pairs_per_s"] = 1e9 / state.counters["direct_ns"];
  state.counters["shim_pairs_per_s"] = 1e9 / state.counters["shim_ns"];
}
BENCHMARK(BM_AllocFreePair)->Arg(4096)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  const std::string registry = "/gshare-preload-bench-" + std::to_string(getpid());
  setenv("SIMCUDA_DEVICES", "1x8GiB", 0);
  setenv("SIMCUDA_REGISTRY", registry.c_str(), 1);
  setenv("SIMCUDA_KERNELS", GSHARE_SIMCUDA_KERNELS, 0);
  setenv("SIMCUDA_TIME_SCALE", "0.0001", 0);
  setenv("SIMCUDA_LINK_GBPS", "0", 0);
  setenv("GSHARE_VGPU_MEMORY", "4GiB", 0);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  shm_unlink(registry.c_str());
  return 0;
}
