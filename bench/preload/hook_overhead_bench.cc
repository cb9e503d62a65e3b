// The shim's fast-path cost in isolation: cuLaunchKernel and cuMemcpyHtoDAsync called directly
// on a do-nothing driver (fake_driver.cc) and through libgshare.so's hooks wrapping that same
// driver, in one process and one run. Counters (per call, from the thread's CPU clock so that
// preemption on a loaded machine does not count): direct_ns, shim_ns, added_ns (the target is
// <= 50 ns), ratio.
//
//   hook_overhead_bench --benchmark_format=json
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <benchmark/benchmark.h>

#include "same_run_compare.h"

namespace {

struct Table {
  PFN_cuLaunchKernel_v4000 launch = nullptr;
  PFN_cuMemcpyHtoDAsync_v3020 htod_async = nullptr;
};

struct Setup {
  Table direct;
  Table shim;
  bool ok = false;
};

Table LoadTable(void* h) {
  Table t;
  t.launch = reinterpret_cast<PFN_cuLaunchKernel_v4000>(dlsym(h, "cuLaunchKernel"));
  t.htod_async = reinterpret_cast<PFN_cuMemcpyHtoDAsync_v3020>(dlsym(h, "cuMemcpyHtoDAsync_v2"));
  return t;
}

Setup& GetSetup() {
  static Setup s = [] {
    Setup r;
    void* fake = dlopen(GSHARE_FAKE_DRIVER, RTLD_NOW | RTLD_LOCAL);
    void* shim = dlopen(GSHARE_PRELOAD_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake == nullptr || shim == nullptr) {
      std::fprintf(stderr, "cannot load: %s\n", dlerror());
      return r;
    }
    r.direct = LoadTable(fake);
    r.shim = LoadTable(shim);
    r.ok = r.direct.launch && r.shim.launch && r.direct.htod_async && r.shim.htod_async;
    return r;
  }();
  return s;
}

constexpr int kBatch = 256;

template <typename Op>
void Compare(benchmark::State& state, Op op) {
  Setup& s = GetSetup();
  if (!s.ok) {
    state.SkipWithError("set-up failed");
    return;
  }
  gshare::bench::CompareDirectAndShim(state, s.direct, s.shim, kBatch, op, [] {});
}

void BM_LaunchKernelHook(benchmark::State& state) {
  Compare(state, [](const Table& t) {
    benchmark::DoNotOptimize(t.launch(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  });
}
BENCHMARK(BM_LaunchKernelHook)->UseRealTime();

// The same on an explicit stream (what inference servers use): the in-flight tracker's cached
// path (a thread-local compare) instead of the default stream's cuCtxGetCurrent.
void BM_LaunchKernelOnStreamHook(benchmark::State& state) {
  static const auto stream = reinterpret_cast<CUstream>(static_cast<uintptr_t>(0x5000));
  Compare(state, [](const Table& t) {
    benchmark::DoNotOptimize(t.launch(nullptr, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr));
  });
}
BENCHMARK(BM_LaunchKernelOnStreamHook)->UseRealTime();

void BM_MemcpyHtoDAsyncHook(benchmark::State& state) {
  static int value = 1;
  Compare(state, [](const Table& t) {
    benchmark::DoNotOptimize(t.htod_async(0, &value, sizeof(value), nullptr));
  });
}
BENCHMARK(BM_MemcpyHtoDAsyncHook)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  setenv("GSHARE_REAL_LIBCUDA", GSHARE_FAKE_DRIVER, 1);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
