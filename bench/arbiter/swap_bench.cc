// Swap-in on demand through the arbiter, on simcuda: tenant A (a real VgpuMemory holding
// 256 MiB) is swapped out by the arbiter to make room for tenant B; A's next submission then
// *requests* a swap-in, the arbiter swaps B out and orders A's swap-in, A's client performs it
// (VgpuMemory::SwapIn at the same addresses) and gets the token. Reported: that latency (A's
// submission blocked -> admitted), one round (see the BENCHMARK line), against the link-bandwidth bound
// 256 MiB / SIMCUDA_LINK_GBPS measured in the same run, and their ratio.
// Run (simcuda as the driver):
//   LD_LIBRARY_PATH=<build>/simcuda-lib SIMCUDA_DEVICES=1x2GiB SIMCUDA_LINK_GBPS=4
//   SIMCUDA_KERNELS=<build>/lib/libsimcuda_kernels.so <build>/bin/arbiter_swap_bench
//   --benchmark_format=json   (all on one line)
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "arbiter_client.h"
#include "gshare/arbiter/arbiter.h"
#include "gshare/memory/vgpu_memory.h"
#include "gshare/shm/futex.h"
#include "test_gate.h"

namespace {

using gshare::preload::SwapOutcome;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBytes = 256 * kMiB;

void* Resolve(const char* name, void*) { return ::dlsym(RTLD_DEFAULT, name); }

// A tenant's host: the stand-in gate plus, optionally, a real VgpuMemory.
class Host final : public gshare::preload::ShimHost {
 public:
  Host(gshare::memory::VgpuMemory* mem, CUcontext ctx) : mem_(mem), ctx_(ctx) {}
  bool TryEnter() { return gate_.TryEnter(); }
  void Exit() { gate_.Exit(); }
  void CloseGate() override { gate_.Close(); }
  void OpenGate() override { gate_.Open(); }
  bool Drain() override {
    (void)cuCtxSetCurrent(ctx_);
    return cuCtxSynchronize() == CUDA_SUCCESS;
  }
  bool TakeActivity() override { return gate_.TakeActivity(); }
  SwapOutcome SwapOut() override {
    if (mem_ == nullptr) return Toggle(false);
    (void)cuCtxSetCurrent(ctx_);
    gshare::memory::SwapStats st;
    const CUresult r = mem_->SwapOut({}, &st);
    return {r == CUDA_SUCCESS, st.bytes, static_cast<uint64_t>(st.elapsed.count())};
  }
  SwapOutcome SwapIn(uint32_t gpu) override {
    if (mem_ == nullptr) return Toggle(true);
    (void)cuCtxSetCurrent(ctx_);
    gshare::memory::SwapStats st;
    const CUresult r = mem_->SwapIn(static_cast<CUdevice>(gpu), &st);
    return {r == CUDA_SUCCESS, st.bytes, static_cast<uint64_t>(st.elapsed.count())};
  }
  bool Resident() const override { return mem_ != nullptr ? mem_->resident() : resident_.load(); }
  uint64_t ResidentBytes() const override { return Resident() && mem_ != nullptr ? kBytes : 0; }
  uint32_t CurrentGpu() const override { return 0; }

 private:
  SwapOutcome Toggle(bool in) {
    resident_ = in;
    return {true, 0, 0};
  }
  gshare::arbiter::testing::TestGate gate_;
  gshare::memory::VgpuMemory* mem_;
  CUcontext ctx_;
  std::atomic<bool> resident_{true};
};

void BM_SwapInOnDemand(benchmark::State& state) {
  spdlog::set_level(std::getenv("GSHARE_BENCH_DEBUG") != nullptr ? spdlog::level::debug : spdlog::level::err);
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) {
    state.SkipWithError("no driver (run with simcuda's libcuda.so.1, see the file comment)");
    return;
  }
  (void)cuCtxSetCurrent(ctx);
  gshare::memory::DeviceApi api;
  if (gshare::memory::ResolveDeviceApi(Resolve, nullptr, &api) != CUDA_SUCCESS) {
    state.SkipWithError("driver lacks the VMM API");
    return;
  }
  gshare::memory::VgpuMemoryOptions options;
  options.quota_bytes = kBytes;
  gshare::memory::VgpuMemory mem(api, options);
  CUdeviceptr p = 0;
  std::vector<uint8_t> pattern(kBytes, 0x5A);
  if (mem.Allocate(kBytes, &p) != CUDA_SUCCESS || cuMemcpyHtoD(p, pattern.data(), kBytes) != CUDA_SUCCESS) {
    state.SkipWithError("allocation failed");
    return;
  }
  // Warm the staging once.
  if (mem.SwapOut({}, nullptr) != CUDA_SUCCESS || mem.SwapIn(0, nullptr) != CUDA_SUCCESS) {
    state.SkipWithError("warm-up swap failed");
    return;
  }
  // Arbiter: one GPU with room for one of the two 256 MiB tenants.
  gshare::arbiter::ArbiterConfig c;
  c.socket_path = "/tmp/gshare-arbiter-swap-bench-" + std::to_string(::getpid()) + ".sock";
  c.policy = "aggressive";
  c.slice = std::chrono::seconds(10);
  auto arb = gshare::arbiter::Arbiter::Create(c, {{0, 384 * kMiB}}, false);
  if (!arb.ok()) {
    state.SkipWithError(arb.status().ToString().c_str());
    return;
  }
  std::thread loop([&] { (void)(*arb)->Run(); });
  Host host_a(&mem, ctx);
  Host host_b(nullptr, ctx);
  auto start = [&](Host* h, const char* name) {
    gshare::preload::ArbiterClientOptions o;
    o.socket_path = c.socket_path;
    o.quota_bytes = kBytes;
    o.slo_ms = 10;
    o.function_name = name;
    o.idle_release = std::chrono::microseconds(200);
    return gshare::preload::ArbiterClient::Start(o, h);
  };
  auto a = start(&host_a, "a");
  auto b = start(&host_b, "b");
  std::vector<uint64_t> on_demand;
  if (a.ok() && b.ok()) {
    auto submit = [&](Host& h, gshare::preload::ArbiterClient& cl) {
      const uint64_t t0 = gshare::shm::MonotonicNowNs();
      while (!h.TryEnter()) cl.Acquire();
      const uint64_t t1 = gshare::shm::MonotonicNowNs();
      h.Exit();
      return t1 - t0;
    };
    (void)submit(host_a, **a);  // A becomes resident and runs
    for (auto _ : state) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // A idles and yields
      (void)submit(host_b, **b);  // B needs the GPU's memory: A is swapped out
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (mem.resident()) continue;  // the policy kept A (nothing to measure this round)
      on_demand.push_back(submit(host_a, **a));
    }
  } else {
    state.SkipWithError("registration failed");
  }
  (*arb)->Stop();
  loop.join();
  a = gshare::shm::Status(gshare::shm::StatusCode::kClosed, "done");
  b = gshare::shm::Status(gshare::shm::StatusCode::kClosed, "done");
  const char* gbps_env = std::getenv("SIMCUDA_LINK_GBPS");
  const double gbps = gbps_env != nullptr ? std::atof(gbps_env) : 4.0;
  const double bound_us = static_cast<double>(kBytes) / (gbps * 1e9) * 1e6;
  std::sort(on_demand.begin(), on_demand.end());
  const double p50 = on_demand.empty() ? 0 : static_cast<double>(on_demand[on_demand.size() / 2]) / 1000;
  state.counters["swap_ins"] = static_cast<double>(on_demand.size());
  state.counters["on_demand_p50_us"] = p50;
  state.counters["link_bound_us"] = bound_us;
  state.counters["p50_over_bound"] = bound_us > 0 ? p50 / bound_us : 0;
}
// One round: with two 10 ms-SLO tenants that do not fit together the aggressive policy pins
// both resident after the first exchange (its cache queue), so later rounds would wait forever.
BENCHMARK(BM_SwapInOnDemand)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
