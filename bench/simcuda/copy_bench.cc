// simcuda copy throughput: host->device and device->host copies on a device with the modelled
// link (4 GB/s) and on one with bandwidth modelling off (link_gbps=0), against plain memcpy of
// the same size measured in the same run. Counters:
//   link_fraction  achieved / configured link bandwidth (modelled device; ideal 1.0)
//   memcpy_ratio   achieved / memcpy bandwidth measured in this run (unmodelled device)
// Run: simcuda_copy_bench [--benchmark_format=json]
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr double kLinkBytesPerS = 4e9;

struct Setup {
  CUcontext ctx[2] = {nullptr, nullptr};
  bool ok = false;
};

Setup& Driver() {
  static Setup* s = [] {
    auto* setup = new Setup();
    if (cuInit(0) != CUDA_SUCCESS) return setup;
    for (int d = 0; d < 2; ++d) {
      if (cuDevicePrimaryCtxRetain(&setup->ctx[d], d) != CUDA_SUCCESS) return setup;
    }
    setup->ok = true;
    return setup;
  }();
  return *s;
}

// memcpy bandwidth of `bytes` between touched buffers, measured once per size.
double MemcpyBytesPerS(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  std::memcpy(b.data(), a.data(), bytes);
  auto t0 = std::chrono::steady_clock::now();
  const int reps = 5;
  for (int i = 0; i < reps; ++i) {
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(bytes) * reps / s;
}

void Copy(benchmark::State& state, int device, bool to_device) {
  Setup& setup = Driver();
  if (!setup.ok) {
    state.SkipWithError("cuInit failed");
    return;
  }
  const size_t bytes = static_cast<size_t>(state.range(0));
  cuCtxSetCurrent(setup.ctx[device]);
  CUdeviceptr d = 0;
  if (cuMemAlloc(&d, bytes) != CUDA_SUCCESS) {
    state.SkipWithError("cuMemAlloc failed");
    return;
  }
  std::vector<char> host(bytes, 3);
  std::memset(reinterpret_cast<void*>(d), 4, bytes);  // populate device pages
  for (auto _ : state) {
    CUresult r = to_device ? cuMemcpyHtoD(d, host.data(), bytes) : cuMemcpyDtoH(host.data(), d, bytes);
    if (r != CUDA_SUCCESS) state.SkipWithError("copy failed");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  cuMemFree(d);
}

void BM_HtoD_Link4GBps(benchmark::State& state) {
  Copy(state, 0, true);
  state.counters["link_fraction"] = benchmark::Counter(
      static_cast<double>(state.range(0)) / kLinkBytesPerS, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DtoH_Link4GBps(benchmark::State& state) {
  Copy(state, 0, false);
  state.counters["link_fraction"] = benchmark::Counter(
      static_cast<double>(state.range(0)) / kLinkBytesPerS, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_HtoD_Unmodelled(benchmark::State& state) {
  double memcpy_bps = MemcpyBytesPerS(static_cast<size_t>(state.range(0)));
  Copy(state, 1, true);
  state.counters["memcpy_GBps"] = memcpy_bps / 1e9;
  state.counters["memcpy_ratio"] = benchmark::Counter(
      static_cast<double>(state.range(0)) / memcpy_bps, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DtoH_Unmodelled(benchmark::State& state) {
  double memcpy_bps = MemcpyBytesPerS(static_cast<size_t>(state.range(0)));
  Copy(state, 1, false);
  state.counters["memcpy_GBps"] = memcpy_bps / 1e9;
  state.counters["memcpy_ratio"] = benchmark::Counter(
      static_cast<double>(state.range(0)) / memcpy_bps, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> a(bytes, 1), b(bytes, 2);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

BENCHMARK(BM_Memcpy)->Arg(64 << 20)->Arg(256 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HtoD_Link4GBps)->Arg(64 << 20)->Arg(256 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DtoH_Link4GBps)->Arg(64 << 20)->Arg(256 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HtoD_Unmodelled)->Arg(64 << 20)->Arg(256 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DtoH_Unmodelled)->Arg(64 << 20)->Arg(256 << 20)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  // A private registry; device 0 models a 4 GB/s link, device 1 does not model the link.
  std::string registry = "/simcuda-bench-" + std::to_string(getpid());
  setenv("SIMCUDA_REGISTRY", registry.c_str(), 1);
  setenv("SIMCUDA_DEVICES", "2GiB:link_gbps=4,2GiB:link_gbps=0", 1);
  setenv("SIMCUDA_TIME_SCALE", "1", 1);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  shm_unlink(registry.c_str());
  return 0;
}
