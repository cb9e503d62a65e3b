// Swap throughput and allocation rate of VgpuMemory on simcuda, with the references measured in
// the same run:
//   --link_gbps=G (default 4): simcuda's host link; swap-out / swap-in of 1 GiB is reported as
//     a fraction of G (target >= 0.8). With --link_gbps=0 (no bandwidth modelling) it is
//     reported against a plain memcpy of 1 GiB between already-touched buffers.
//   Allocation: cuMemAlloc/cuMemFree pairs directly on simcuda vs Allocate/Free pairs through
//     VgpuMemory (which maps its own memory), per size.
// The program sets its own simcuda environment (private registry, time scale 1, two devices).
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gshare/memory/vgpu_memory.h"

namespace gshare::memory {
namespace {

double g_link_gbps = 4.0;
CUcontext g_ctx = nullptr;
DeviceApi g_api;

void* ResolveFromProcess(const char* name, void* /*ctx*/) { return dlsym(RTLD_DEFAULT, name); }

constexpr uint64_t kSwapBytes = 1 * kGiB;

// One VgpuMemory holding 1 GiB in 16 dedicated 64 MiB chunks (a model's weights), written once.
// Args of the swap benchmarks: swap piece MiB, swap streams, progress reports (1: a progress
// callback is set, as the shim does under an arbiter: copies are then marked every 16 MiB and
// each mark reported; the callback stores the count like the client's channel write).
std::unique_ptr<VgpuMemory> MakeLoadedVgpu(const benchmark::State& state) {
  VgpuMemoryOptions options;
  options.quota_bytes = 2 * kGiB;
  options.swap_piece_bytes = static_cast<uint64_t>(state.range(0)) * kMiB;
  options.swap_streams = static_cast<unsigned>(state.range(1));
  auto mem = std::make_unique<VgpuMemory>(g_api, options);
  if (state.range(2) != 0) {
    mem->SetSwapProgressCallback([](uint64_t bytes) {
      static std::atomic<uint64_t> reported{0};
      reported.store(bytes, std::memory_order_release);
    });
  }
  std::vector<uint8_t> pattern(64 * kMiB, 0x5A);
  for (uint64_t done = 0; done < kSwapBytes; done += 64 * kMiB) {
    CUdeviceptr p = 0;
    if (mem->Allocate(64 * kMiB, &p) != CUDA_SUCCESS) return nullptr;
    if (cuMemcpyHtoD(p, pattern.data(), pattern.size()) != CUDA_SUCCESS) return nullptr;
  }
  // Pin the staging and warm every path once.
  if (mem->SwapOut({}, nullptr) != CUDA_SUCCESS || mem->SwapIn(0, nullptr) != CUDA_SUCCESS) {
    return nullptr;
  }
  return mem;
}

double MemcpySeconds() {
  std::vector<uint8_t> a(kSwapBytes, 1), b(kSwapBytes, 2);
  std::memcpy(b.data(), a.data(), kSwapBytes);  // touch both
  const auto start = std::chrono::steady_clock::now();
  std::memcpy(b.data(), a.data(), kSwapBytes);
  benchmark::DoNotOptimize(b.data());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Reports the swap rate against the link (when modelled) and against a plain memcpy of the same
// size measured right after (the machine's own limit at that moment).
void ReportFraction(benchmark::State& state, double seconds_per_swap) {
  const double gbps = static_cast<double>(kSwapBytes) / seconds_per_swap / 1e9;
  state.counters["GBps"] = gbps;
  if (g_link_gbps > 0) state.counters["fraction_of_link"] = gbps / g_link_gbps;
  const double memcpy_s = MemcpySeconds();
  state.counters["memcpy_GBps"] = static_cast<double>(kSwapBytes) / memcpy_s / 1e9;
  state.counters["fraction_of_memcpy"] = memcpy_s / seconds_per_swap;
}

void BM_SwapOut1GiB(benchmark::State& state) {
  auto mem = MakeLoadedVgpu(state);
  if (!mem) return state.SkipWithError("setup failed");
  double total = 0;
  double copy = 0;
  for (auto _ : state) {
    SwapStats stats;
    if (mem->SwapOut({}, &stats) != CUDA_SUCCESS) return state.SkipWithError("swap-out failed");
    total += std::chrono::duration<double>(stats.elapsed).count();
    copy += std::chrono::duration<double>(stats.copy_time).count();
    state.PauseTiming();
    if (mem->SwapIn(0, nullptr) != CUDA_SUCCESS) return state.SkipWithError("swap-in failed");
    state.ResumeTiming();
  }
  ReportFraction(state, total / static_cast<double>(state.iterations()));
  state.counters["copy_share"] = copy / total;
}
BENCHMARK(BM_SwapOut1GiB)->Args({8, 2, 0})->Args({32, 2, 0})->Args({8, 4, 0})->Args({32, 4, 0})
    ->Args({8, 4, 1})->Args({32, 4, 1})->Iterations(5)
    ->Unit(benchmark::kMillisecond);

void BM_SwapIn1GiB(benchmark::State& state) {
  auto mem = MakeLoadedVgpu(state);
  if (!mem) return state.SkipWithError("setup failed");
  double total = 0;
  double copy = 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (mem->SwapOut({}, nullptr) != CUDA_SUCCESS) return state.SkipWithError("swap-out failed");
    state.ResumeTiming();
    SwapStats stats;
    if (mem->SwapIn(0, &stats) != CUDA_SUCCESS) return state.SkipWithError("swap-in failed");
    total += std::chrono::duration<double>(stats.elapsed).count();
    copy += std::chrono::duration<double>(stats.copy_time).count();
  }
  ReportFraction(state, total / static_cast<double>(state.iterations()));
  state.counters["copy_share"] = copy / total;
}
BENCHMARK(BM_SwapIn1GiB)->Args({8, 2, 0})->Args({32, 2, 0})->Args({8, 4, 0})->Args({32, 4, 0})
    ->Args({8, 4, 1})->Args({32, 4, 1})->Iterations(5)
    ->Unit(benchmark::kMillisecond);

// Swap-in of 1 GiB allocated while swapped out: nothing to copy, so this is the cost of
// creating, mapping and opening the physical memory alone (simcuda populates recycled memory at
// map time).
void BM_SwapInMapOnly1GiB(benchmark::State& state) {
  VgpuMemoryOptions options;
  options.quota_bytes = 2 * kGiB;
  VgpuMemory mem(g_api, options);
  if (mem.SwapOut({}, nullptr) != CUDA_SUCCESS) return state.SkipWithError("swap-out failed");
  std::vector<CUdeviceptr> ptrs;
  for (uint64_t done = 0; done < kSwapBytes; done += 64 * kMiB) {
    CUdeviceptr p = 0;
    if (mem.Allocate(64 * kMiB, &p) != CUDA_SUCCESS) return state.SkipWithError("alloc failed");
    ptrs.push_back(p);
  }
  double total = 0;
  for (auto _ : state) {
    SwapStats stats;
    if (mem.SwapIn(0, &stats) != CUDA_SUCCESS) return state.SkipWithError("swap-in failed");
    total += std::chrono::duration<double>(stats.elapsed).count();
    state.PauseTiming();
    // Out again without copies: free and re-allocate while out, so the next swap-in maps only.
    if (mem.SwapOut({}, nullptr) != CUDA_SUCCESS) return state.SkipWithError("swap-out failed");
    for (CUdeviceptr& p : ptrs) {
      if (mem.Free(p) != CUDA_SUCCESS || mem.Allocate(64 * kMiB, &p) != CUDA_SUCCESS) {
        return state.SkipWithError("re-allocation failed");
      }
    }
    state.ResumeTiming();
  }
  state.counters["map_GBps"] =
      static_cast<double>(kSwapBytes) / (total / static_cast<double>(state.iterations())) / 1e9;
}
BENCHMARK(BM_SwapInMapOnly1GiB)->Iterations(5)->Unit(benchmark::kMillisecond);

void BM_AllocFreePairDirect(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, bytes) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) {
      return state.SkipWithError("cuMemAlloc failed");
    }
  }
  state.counters["pairs_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AllocFreePairDirect)->Arg(4096)->Arg(1 << 20)->Arg(64 << 20);

void BM_AllocFreePairVgpu(benchmark::State& state) {
  VgpuMemoryOptions options;
  options.quota_bytes = 2 * kGiB;
  VgpuMemory mem(g_api, options);
  const auto bytes = static_cast<size_t>(state.range(0));
  CUdeviceptr keep = 0;  // an application always has something live in its arena
  if (mem.Allocate(256, &keep) != CUDA_SUCCESS) return state.SkipWithError("setup failed");
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (mem.Allocate(bytes, &p) != CUDA_SUCCESS || mem.Free(p) != CUDA_SUCCESS) {
      return state.SkipWithError("Allocate failed");
    }
  }
  (void)mem.Free(keep);
  state.counters["pairs_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AllocFreePairVgpu)->Arg(4096)->Arg(1 << 20)->Arg(64 << 20);

}  // namespace
}  // namespace gshare::memory

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--link_gbps=", 12) == 0) {
      gshare::memory::g_link_gbps = std::atof(argv[i] + 12);
    } else {
      args.push_back(argv[i]);
    }
  }
  const std::string registry = "/gshare-pm-bench-" + std::to_string(getpid());
  const std::string devices = "2x4GiB:link_gbps=" + std::to_string(gshare::memory::g_link_gbps);
  setenv("SIMCUDA_REGISTRY", registry.c_str(), 1);
  setenv("SIMCUDA_DEVICES", devices.c_str(), 1);
  setenv("SIMCUDA_TIME_SCALE", "1", 1);
  CUdevice dev = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&gshare::memory::g_ctx, dev) != CUDA_SUCCESS ||
      cuCtxSetCurrent(gshare::memory::g_ctx) != CUDA_SUCCESS ||
      gshare::memory::ResolveDeviceApi(gshare::memory::ResolveFromProcess, nullptr,
                                       &gshare::memory::g_api) != CUDA_SUCCESS) {
    std::fprintf(stderr, "simcuda setup failed\n");
    shm_unlink(registry.c_str());
    return 1;
  }
  int new_argc = static_cast<int>(args.size());
  benchmark::Initialize(&new_argc, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  shm_unlink(registry.c_str());
  return 0;
}
