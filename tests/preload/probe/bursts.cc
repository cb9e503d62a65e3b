// preload_probe's bursts mode: a function serving requests, as co-running sees one: `count`
// bursts, each a kernel busy for `kernel_ms` on a stream of its own (then synchronised), with
// `gap_ms` of idleness between them. Prints one line per burst with its start and end on
// CLOCK_MONOTONIC (so a test can tell whether two processes' bursts overlapped), then
// "mps_enabled=" (the driver's CU_DEVICE_ATTRIBUTE_MPS_ENABLED) and "done errors=N". With
// `fault_at` >= 0, burst fault_at is a kernel writing VMM memory mapped without access for the
// device instead: the GPU's illegal-address fault (under MPS it reaches every co-runner).
// With GSHARE_PROBE_BURST_EPOCH_NS (a CLOCK_MONOTONIC time), burst i starts at that epoch plus
// i * (kernel_ms + gap_ms), or at once when it is late: probes given one epoch ask for the GPU
// at the same moments, so their bursts collide every time instead of by chance.
// Each burst line also gives the kernel's interval on the stream's own clock (simcuda's simulated
// timeline, the GPU's on a real driver), taken from events recorded around it and placed on
// CLOCK_MONOTONIC through an anchor event (StreamClock): unlike the host's stamps, it does not
// move when the probe is descheduled after its kernel ended ("gpu_start_ns=0 gpu_end_ns=0" when
// the events failed, e.g. after a fault).
#include <time.h>

#include <cstdlib>
#include <string>

#include <chrono>
#include <cstdio>
#include <thread>

#include "driver.h"
#include "modes.h"
#include "simcuda/kernels/ptx.h"

namespace gshare::probe {
namespace {

unsigned long long MonotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<unsigned long long>(ts.tv_nsec);
}

// Places events of one stream on CLOCK_MONOTONIC. An event's time is known only relative to
// another event's, so one anchor event is pinned to the host clock: recorded on the idle stream
// and synchronised, its time lies between the host's stamps before the record and after the
// synchronisation; of several tries, the narrowest such window is kept and its middle taken
// (error at most half its width, printed by the mode).
class StreamClock {
 public:
  bool Start(CUstream stream) {
    for (int i = 0; i < 5; ++i) {
      CUevent e = nullptr;
      if (cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return false;
      const unsigned long long before = MonotonicNs();
      if (cuEventRecord(e, stream) != CUDA_SUCCESS || cuEventSynchronize(e) != CUDA_SUCCESS) {
        (void)cuEventDestroy(e);
        return false;
      }
      const unsigned long long after = MonotonicNs();
      if (anchor_ == nullptr || after - before < 2 * error_ns_) {
        if (anchor_ != nullptr) (void)cuEventDestroy(anchor_);
        anchor_ = e;
        anchor_ns_ = before + (after - before) / 2;
        error_ns_ = (after - before + 1) / 2;
      } else {
        (void)cuEventDestroy(e);
      }
    }
    return true;
  }
  // The completed event's time on CLOCK_MONOTONIC (0: unknown).
  unsigned long long At(CUevent e) const {
    float ms = 0;
    if (anchor_ == nullptr || cuEventElapsedTime(&ms, anchor_, e) != CUDA_SUCCESS) return 0;
    return anchor_ns_ + static_cast<unsigned long long>(static_cast<double>(ms) * 1e6);
  }
  unsigned long long error_ns() const { return error_ns_; }

 private:
  CUevent anchor_ = nullptr;
  unsigned long long anchor_ns_ = 0;
  unsigned long long error_ns_ = 0;
};

}  // namespace

namespace {

// A kernel writing 2 MiB of VMM memory the device was given no access to.
CUresult LaunchFault(CUmodule module, CUstream stream) {
  const size_t size = 2 << 20;
  CUdeviceptr va = 0;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle h = 0;
  CUfunction fill = nullptr;
  CUresult r = cuMemAddressReserve(&va, size, 0, 0, 0);
  if (r == CUDA_SUCCESS) r = cuMemCreate(&h, size, &prop, 0);
  if (r == CUDA_SUCCESS) r = cuMemMap(va, size, 0, h, 0);  // no cuMemSetAccess
  if (r == CUDA_SUCCESS) r = cuModuleGetFunction(&fill, module, "fill_u32");
  unsigned long long n = 16;
  unsigned seed = 1;
  void* params[] = {&va, &n, &seed};
  if (r == CUDA_SUCCESS) r = cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr);
  return r;
}

}  // namespace

int Bursts(int count, int kernel_ms, int gap_ms, int fault_at) {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  CUdevice dev = 0;
  int mps = -1;
  (void)cuDeviceGet(&dev, 0);
  (void)cuDeviceGetAttribute(&mps, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, dev);
  std::printf("mps_enabled=%d\n", mps);
  CUmodule module = nullptr;
  if (CUresult r = cuModuleLoadData(&module, basic_kernels_ptx); r != CUDA_SUCCESS) {
    return Fail("module", r);
  }
  CUfunction sleep_fn = nullptr;
  if (CUresult r = cuModuleGetFunction(&sleep_fn, module, "sleep_ns"); r != CUDA_SUCCESS) {
    return Fail("function", r);
  }
  CUstream stream = nullptr;
  if (CUresult r = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
    return Fail("stream", r);
  }
  StreamClock clock;
  CUevent before = nullptr, after = nullptr;
  if (!clock.Start(stream) || cuEventCreate(&before, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
      cuEventCreate(&after, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    return Fail("events", CUDA_ERROR_UNKNOWN);
  }
  std::printf("clock_anchor_error_ns=%llu\n", clock.error_ns());
  std::printf("started\n");
  std::fflush(stdout);
  int errors = 0;
  unsigned long long ns = static_cast<unsigned long long>(kernel_ms) * 1'000'000ULL;
  void* params[] = {&ns};
  unsigned long long epoch = 0;
  if (const char* e = std::getenv("GSHARE_PROBE_BURST_EPOCH_NS"); e != nullptr && *e != '\0') {
    char* end = nullptr;
    epoch = std::strtoull(e, &end, 10);
    if (end == nullptr || *end != '\0') {
      std::printf("error GSHARE_PROBE_BURST_EPOCH_NS='%s' is not a number of nanoseconds\n", e);
      return 2;
    }
  }
  const unsigned long long period_ns = static_cast<unsigned long long>(kernel_ms + gap_ms) * 1'000'000ULL;
  for (int i = 0; i < count; ++i) {
    if (epoch != 0) {
      const unsigned long long due = epoch + static_cast<unsigned long long>(i) * period_ns;
      if (const unsigned long long now = MonotonicNs(); due > now)
        std::this_thread::sleep_for(std::chrono::nanoseconds(due - now));
    }
    const unsigned long long start = MonotonicNs();
    CUresult r = cuEventRecord(before, stream);
    if (r == CUDA_SUCCESS)
      r = i == fault_at ? LaunchFault(module, stream)
                        : cuLaunchKernel(sleep_fn, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr);
    if (r == CUDA_SUCCESS) r = cuEventRecord(after, stream);
    if (r == CUDA_SUCCESS) r = cuStreamSynchronize(stream);
    if (r != CUDA_SUCCESS) ++errors;
    const unsigned long long end = MonotonicNs();
    const unsigned long long gpu_start = r == CUDA_SUCCESS ? clock.At(before) : 0;
    const unsigned long long gpu_end = r == CUDA_SUCCESS ? clock.At(after) : 0;
    std::printf("burst=%d start_ns=%llu end_ns=%llu result=%d gpu_start_ns=%llu gpu_end_ns=%llu\n",
                i, start, end, static_cast<int>(r), gpu_start, gpu_end);
    std::fflush(stdout);
    if (epoch == 0) std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  }
  std::printf("done errors=%d\n", errors);
  std::fflush(stdout);
  return errors == 0 ? 0 : 1;
}

}  // namespace gshare::probe
