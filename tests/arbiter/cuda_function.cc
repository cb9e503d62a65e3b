// arbiter_cuda_function: a CUDA driver-API "function" (simcuda in tests) that speaks the
// arbiter protocol through ArbiterClient with a real-driver ShimHost (gate, cuCtxSynchronize
// drain). With --pause-ms it idles after its first fill (long enough to be deep-evicted), with
// --pause-until FILE until that file exists.
// With --rogue it ignores preemption: its gate never closes (it keeps submitting) and
// its drain takes --drain-ms, so the arbiter must lock and checkpoint it. It fills a buffer,
// keeps submitting kernels (sleep_ns + fill_u32 into a scratch buffer), and at the end checks
// that the first buffer survived byte for byte (it may have been checkpointed and restored).
// With --mps-share it registers as an MPS client at that share (its environment must make
// simcuda attach it to a daemon: CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE).
// Output: one JSON line. Exit status 0 iff the data is intact and every call succeeded.
#include <cuda.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arbiter_client.h"
#include "simcuda/kernels/kernels.h"
#include "simcuda/kernels/ptx.h"
#include "test_gate.h"

namespace {

using gshare::preload::SwapOutcome;

class CudaHost final : public gshare::preload::ShimHost {
 public:
  CudaHost(CUcontext ctx, bool rogue, int drain_ms) : ctx_(ctx), rogue_(rogue), drain_ms_(drain_ms) {}
  bool TryEnter() { return gate_.TryEnter(); }
  void Exit() { gate_.Exit(); }
  void CloseGate() override {
    if (rogue_ && gate_.ever_opened()) return;  // once it has run, it ignores requests to stop
    gate_.Close();
  }
  void OpenGate() override { gate_.Open(); }
  bool Drain() override {
    if (drain_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(drain_ms_));
    (void)cuCtxSetCurrent(ctx_);
    return cuCtxSynchronize() == CUDA_SUCCESS;
  }
  bool TakeActivity() override { return gate_.TakeActivity(); }
  // Memory stays where the driver put it (no VgpuMemory here): swap orders are no-ops.
  SwapOutcome SwapOut() override { return {true, 0, 0}; }
  SwapOutcome SwapIn(uint32_t) override { return {true, 0, 0}; }
  bool Resident() const override { return true; }
  uint64_t ResidentBytes() const override { return 0; }
  uint32_t CurrentGpu() const override { return 0; }

 private:
  CUcontext ctx_;
  bool rogue_;
  int drain_ms_;
  gshare::arbiter::testing::TestGate gate_;
};

int Fail(const char* what, CUresult r) {
  const char* name = nullptr;
  (void)cuGetErrorName(r, &name);
  std::printf("{\"error\":\"%s: %s\"}\n", what, name != nullptr ? name : "?");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  gshare::preload::ArbiterClientOptions opt;
  opt.quota_bytes = 256ull << 20;
  opt.slo_ms = 100;
  bool rogue = false;
  int drain_ms = 0;
  int iterations = 50;
  uint64_t kernel_us = 2000;
  int pause_ms = 0;  // idle this long after the first fill (deep eviction)
  // Or idle after the first fill until this file exists (the test creates it once it has seen
  // what the idle period must cause; 120 s at most).
  std::string pause_until;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::string v = argv[i + 1];
    if (k == "--socket") opt.socket_path = v;
    else if (k == "--name") opt.function_name = v;
    else if (k == "--slo-ms") opt.slo_ms = static_cast<uint32_t>(std::stoul(v));
    else if (k == "--rogue") rogue = v == "1";
    else if (k == "--drain-ms") drain_ms = std::stoi(v);
    else if (k == "--iterations") iterations = std::stoi(v);
    else if (k == "--kernel-us") kernel_us = std::stoull(v);
    else if (k == "--pause-ms") pause_ms = std::stoi(v);
    else if (k == "--pause-until") pause_until = v;
    else if (k == "--mps-share") opt.mps_share = static_cast<uint32_t>(std::stoul(v));
    else return 2;
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction fill = nullptr;
  CUfunction sleep = nullptr;
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return Fail("cuInit", r);
  if (CUresult r = cuDeviceGet(&dev, 0); r != CUDA_SUCCESS) return Fail("cuDeviceGet", r);
  if (CUresult r = cuDevicePrimaryCtxRetain(&ctx, dev); r != CUDA_SUCCESS) return Fail("ctx", r);
  (void)cuCtxSetCurrent(ctx);
  if (CUresult r = cuModuleLoadData(&module, basic_kernels_ptx); r != CUDA_SUCCESS) return Fail("module", r);
  (void)cuModuleGetFunction(&fill, module, "fill_u32");
  (void)cuModuleGetFunction(&sleep, module, "sleep_ns");
  constexpr unsigned long long kWords = 1 << 20;  // 4 MiB
  CUdeviceptr keep = 0;
  CUdeviceptr scratch = 0;
  if (CUresult r = cuMemAlloc(&keep, kWords * 4); r != CUDA_SUCCESS) return Fail("alloc", r);
  if (CUresult r = cuMemAlloc(&scratch, kWords * 4); r != CUDA_SUCCESS) return Fail("alloc", r);
  const unsigned grid = simcuda::kernels::ElementwiseGrid(kWords);
  const unsigned block = simcuda::kernels::kElementwiseBlock;

  CudaHost host(ctx, rogue, drain_ms);
  auto client = gshare::preload::ArbiterClient::Start(opt, &host);
  if (!client.ok()) {
    std::printf("{\"error\":\"%s\"}\n", client.status().ToString().c_str());
    return 3;
  }
  auto submit = [&](auto&& body) -> CUresult {
    while (!host.TryEnter()) (*client)->Acquire();
    (void)cuCtxSetCurrent(ctx);
    const CUresult r = body();
    host.Exit();
    return r;
  };
  unsigned seed = 7;
  unsigned long long n = kWords;
  std::vector<uint32_t> ref(kWords), now(kWords);
  CUresult r = submit([&] {
    void* params[] = {&keep, &n, &seed};
    CUresult x = cuLaunchKernel(fill, grid, 1, 1, block, 1, 1, 0, nullptr, params, nullptr);
    if (x == CUDA_SUCCESS) x = cuMemcpyDtoH(ref.data(), keep, kWords * 4);
    return x;
  });
  if (r != CUDA_SUCCESS) return Fail("fill", r);
  if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  for (int waited_ms = 0; !pause_until.empty() && ::access(pause_until.c_str(), F_OK) != 0 &&
                          waited_ms < 120'000;
       waited_ms += 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (int i = 0; i < iterations; ++i) {
    unsigned long long ns = kernel_us * 1000;
    unsigned s = 100u + static_cast<unsigned>(i);
    r = submit([&] {
      void* sp[] = {&ns};
      void* fp[] = {&scratch, &n, &s};
      CUresult x = cuLaunchKernel(sleep, 1, 1, 1, 1, 1, 1, 0, nullptr, sp, nullptr);
      if (x == CUDA_SUCCESS) x = cuLaunchKernel(fill, grid, 1, 1, block, 1, 1, 0, nullptr, fp, nullptr);
      if (x == CUDA_SUCCESS) x = cuCtxSynchronize();
      return x;
    });
    if (r != CUDA_SUCCESS) return Fail("iteration", r);
  }
  r = submit([&] { return cuMemcpyDtoH(now.data(), keep, kWords * 4); });
  if (r != CUDA_SUCCESS) return Fail("readback", r);
  const bool intact = std::memcmp(ref.data(), now.data(), kWords * 4) == 0;
  std::printf("{\"intact\":%s,\"iterations\":%d,\"registrations\":%llu}\n", intact ? "true" : "false",
              iterations, static_cast<unsigned long long>((*client)->registrations()));
  std::fflush(stdout);
  std::_Exit(intact ? 0 : 1);  // like a real function: no orderly teardown of the client
}
