// preload_probe's swap mode: one big block plus random allocations (bytes to 256 MiB, with
// interleaved frees), each checksummed on the host and by a kernel, then commands on stdin that
// a test sends around swaps and moves of the process's vGPU:
//   "verify"        re-read every block, compare, run the checksum kernel on it; prints
//                   "verified blocks=N bad=N kernel_bad=N", the pointers, "end"
//   "grow <mib>"    one more block, uploaded in 8 MiB async copies; prints "grown ptr=HEX"
//   "inflight <ms>" queues a kernel busy for ms, then a checksum of the first block, without
//                   waiting; prints "queued"
//   "collect"       waits for the inflight work, compares; prints "collected ok=0/1"
//   "capture <ms>"  a graph capture held open for ms; prints "captured end=<CUresult>"
//   "where"         the context's device, the device count, the first block's device ordinal,
//                   the GPUs holding an active primary context of this process
//   "quit"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "data.h"
#include "driver.h"
#include "modes.h"
#include "simcuda/kernels/kernels.h"
#include "simcuda/kernels/ptx.h"

namespace gshare::probe {
namespace {

// The blocks and the work of one swap-mode run. Each command returns 0, or the probe's
// failure exit code after printing the error.
class SwapSession {
 public:
  explicit SwapSession(uint32_t seed) : rng_(seed) {}

  // The module, the kernels' output word and the initial blocks; prints "ready ...".
  int Start(int count, uint64_t big_mib);
  // Runs commands from stdin until "quit" or its end.
  int Serve();

 private:
  int Grow(const std::string& mib);
  int Inflight(const std::string& ms);
  int Capture(const std::string& ms);
  void Where();
  void Collect();
  void Verify();
  void PrintPointers();

  CUmodule module_ = nullptr;
  bool have_kernels_ = false;
  CUdeviceptr out_ = 0;  // the checksum kernel's result word
  std::mt19937 rng_;
  std::vector<Block> blocks_;
  std::vector<uint64_t> kernel_sums_;  // per block, as first computed
  CUstream upload_ = nullptr;          // "grow"
  CUstream work_ = nullptr;            // "inflight" / "collect"
  CUdeviceptr work_out_ = 0;
  unsigned long long work_result_ = 0;
};

int SwapSession::Start(int count, uint64_t big_mib) {
  have_kernels_ = cuModuleLoadData(&module_, basic_kernels_ptx) == CUDA_SUCCESS;
  if (CUresult r = cuMemAlloc(&out_, 8); r != CUDA_SUCCESS) return Fail("alloc-out", r);
  // Sizes from bytes to hundreds of MiB (log-uniform), with interleaved frees.
  std::uniform_real_distribution<double> log_size(0.0, 28.0);
  for (int i = -1; i < count; ++i) {
    Block b;
    b.size = i < 0 ? big_mib << 20 : std::max<size_t>(1, static_cast<size_t>(std::exp2(log_size(rng_))));
    if (b.size == 0) continue;
    if (CUresult r = cuMemAlloc(&b.ptr, b.size); r != CUDA_SUCCESS) return Fail("alloc", r);
    std::vector<uint8_t> data(b.size);
    FillBytes(&data, rng_());
    if (CUresult r = cuMemcpyHtoD(b.ptr, data.data(), b.size); r != CUDA_SUCCESS) {
      return Fail("htod", r);
    }
    b.sum = Checksum(data);
    blocks_.push_back(b);
    if (rng_() % 3 == 0 && blocks_.size() > 2) {  // interleaved free (never the big block)
      const size_t victim = 1 + rng_() % (blocks_.size() - 2);
      if (CUresult r = cuMemFree(blocks_[victim].ptr); r != CUDA_SUCCESS) return Fail("free", r);
      blocks_.erase(blocks_.begin() + static_cast<long>(victim));
    }
  }
  if (CUresult r = cuCtxSynchronize(); r != CUDA_SUCCESS) return Fail("sync", r);
  kernel_sums_.resize(blocks_.size());
  for (size_t i = 0; i < blocks_.size() && have_kernels_; ++i) {
    if (!KernelChecksum(module_, blocks_[i], out_, &kernel_sums_[i])) {
      return Fail("kernel", CUDA_ERROR_UNKNOWN);
    }
  }
  size_t bytes = 0;
  for (const Block& b : blocks_) bytes += b.size;
  std::printf("ready blocks=%zu bytes=%zu kernels=%d\n", blocks_.size(), bytes,
              have_kernels_ ? 1 : 0);
  PrintPointers();
  return 0;
}

int SwapSession::Serve() {
  std::string command;
  while (std::getline(std::cin, command)) {
    if (command == "quit") break;
    int failed = 0;
    if (command.rfind("grow ", 0) == 0) {
      failed = Grow(command.substr(5));
    } else if (command.rfind("inflight ", 0) == 0) {
      if (have_kernels_ && !blocks_.empty()) failed = Inflight(command.substr(9));
    } else if (command.rfind("capture ", 0) == 0) {
      failed = Capture(command.substr(8));
    } else if (command == "where") {
      Where();
    } else if (command == "collect") {
      if (work_ != nullptr) Collect();
    } else if (command == "verify") {
      Verify();
    }
    if (failed != 0) return failed;
  }
  return 0;
}

// One more block, uploaded in 8 MiB asynchronous copies on a stream (as inference servers load
// weights), synchronised.
int SwapSession::Grow(const std::string& mib) {
  if (upload_ == nullptr && cuStreamCreate(&upload_, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    return Fail("stream", CUDA_ERROR_UNKNOWN);
  }
  Block b;
  b.size = std::strtoull(mib.c_str(), nullptr, 10) << 20;
  if (CUresult r = cuMemAlloc(&b.ptr, b.size); r != CUDA_SUCCESS) return Fail("grow-alloc", r);
  std::vector<uint8_t> data(b.size);
  FillBytes(&data, rng_());
  constexpr size_t kChunk = size_t{8} << 20;
  for (size_t done = 0; done < b.size; done += kChunk) {
    const size_t n = std::min(kChunk, b.size - done);
    if (CUresult r = cuMemcpyHtoDAsync(b.ptr + done, data.data() + done, n, upload_);
        r != CUDA_SUCCESS) {
      return Fail("grow-htod", r);
    }
  }
  if (CUresult r = cuStreamSynchronize(upload_); r != CUDA_SUCCESS) return Fail("grow-sync", r);
  b.sum = Checksum(data);
  uint64_t k = 0;
  if (have_kernels_ && !KernelChecksum(module_, b, out_, &k)) {
    return Fail("kernel", CUDA_ERROR_UNKNOWN);
  }
  blocks_.push_back(b);
  kernel_sums_.push_back(k);
  std::printf("grown ptr=%llx\n", static_cast<unsigned long long>(b.ptr));
  std::fflush(stdout);
  return 0;
}

// Queues on a stream of its own a kernel busy for `ms`, then a checksum kernel over the first
// block and its copy back, and returns at once without waiting.
int SwapSession::Inflight(const std::string& ms) {
  if (work_ == nullptr && cuStreamCreate(&work_, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    return Fail("stream", CUDA_ERROR_UNKNOWN);
  }
  if (work_out_ == 0 && cuMemAlloc(&work_out_, 8) != CUDA_SUCCESS) {
    return Fail("alloc-out", CUDA_ERROR_OUT_OF_MEMORY);
  }
  CUfunction sleep_fn = nullptr, checksum = nullptr;
  if (cuModuleGetFunction(&sleep_fn, module_, "sleep_ns") != CUDA_SUCCESS ||
      cuModuleGetFunction(&checksum, module_, "checksum") != CUDA_SUCCESS) {
    return Fail("functions", CUDA_ERROR_NOT_FOUND);
  }
  unsigned long long ns = std::strtoull(ms.c_str(), nullptr, 10) * 1000000ull;
  void* sleep_params[] = {&ns};
  CUdeviceptr p = blocks_[0].ptr;
  unsigned long long n = blocks_[0].size;
  void* params[] = {&p, &n, &work_out_};
  work_result_ = 0;
  if (cuMemsetD8Async(work_out_, 0, 8, work_) != CUDA_SUCCESS ||
      cuLaunchKernel(sleep_fn, 1, 1, 1, 1, 1, 1, 0, work_, sleep_params, nullptr) != CUDA_SUCCESS ||
      cuLaunchKernel(checksum, simcuda::kernels::ElementwiseGrid(n), 1, 1,
                     simcuda::kernels::kElementwiseBlock, 1, 1, 0, work_, params,
                     nullptr) != CUDA_SUCCESS ||
      cuMemcpyDtoHAsync(&work_result_, work_out_, 8, work_) != CUDA_SUCCESS) {
    return Fail("inflight", CUDA_ERROR_UNKNOWN);
  }
  std::printf("queued\n");
  std::fflush(stdout);
  return 0;
}

// 100 ms of work in flight on the work stream, a memset on a fresh stream, then a graph capture
// begun on it and held open for `ms` before it is ended (simcuda builds no graphs: CUDA_ERROR_NOT_SUPPORTED means the capture was intact,
// 901 = invalidated).
int SwapSession::Capture(const std::string& ms) {
  CUstream cs = nullptr;
  if (work_out_ == 0 && cuMemAlloc(&work_out_, 8) != CUDA_SUCCESS) {
    return Fail("alloc-out", CUDA_ERROR_OUT_OF_MEMORY);
  }
  // 100 ms of work in flight on another stream first: the token is surely held when the
  // capture begins (after a bare memset, a loaded machine could let the idle release come
  // before cuStreamBeginCapture), and only the capture can keep it once that work is done.
  if (work_ == nullptr && cuStreamCreate(&work_, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    return Fail("stream", CUDA_ERROR_UNKNOWN);
  }
  CUfunction sleep_fn = nullptr;
  unsigned long long ns = 100'000'000ULL;
  void* sleep_params[] = {&ns};
  if (cuModuleGetFunction(&sleep_fn, module_, "sleep_ns") != CUDA_SUCCESS ||
      cuLaunchKernel(sleep_fn, 1, 1, 1, 1, 1, 1, 0, work_, sleep_params, nullptr) != CUDA_SUCCESS) {
    return Fail("capture-hold", CUDA_ERROR_UNKNOWN);
  }
  if (cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      cuMemsetD8Async(work_out_, 0x5a, 8, cs) != CUDA_SUCCESS ||
      cuStreamSynchronize(cs) != CUDA_SUCCESS ||
      cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS) {
    return Fail("capture", CUDA_ERROR_UNKNOWN);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms.c_str())));
  CUgraph graph = nullptr;
  const CUresult end = cuStreamEndCapture(cs, &graph);
  (void)cuStreamDestroy(cs);
  (void)cuStreamSynchronize(work_);
  std::printf("captured end=%d\n", static_cast<int>(end));
  std::fflush(stdout);
  return 0;
}

void SwapSession::Where() {
  CUdevice ctx_device = -1;
  int devices = -1, ordinal = -1;
  (void)cuCtxGetDevice(&ctx_device);
  (void)cuDeviceGetCount(&devices);
  (void)cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, blocks_[0].ptr);
  // Which physical GPUs hold an active primary context of this process (bit per ordinal; the
  // ordinals are the driver's, asked of the driver itself: the shim would take 0 for the
  // program's own device and refuse the others).
  static const auto get_state = PhysicalPrimaryCtxGetState();
  unsigned primary = 0;
  for (int d = 0; d < 4; ++d) {
    unsigned flags = 0;
    int active = 0;
    if (get_state(d, &flags, &active) == CUDA_SUCCESS && active != 0) {
      primary |= 1u << d;
    }
  }
  std::printf("where ctx_device=%d count=%d ptr_ordinal=%d primary=%u\n", ctx_device, devices,
              ordinal, primary);
  std::fflush(stdout);
}

void SwapSession::Collect() {
  const CUresult r = cuStreamSynchronize(work_);
  std::printf("collected ok=%d\n", r == CUDA_SUCCESS && work_result_ == kernel_sums_[0] ? 1 : 0);
  std::fflush(stdout);
}

void SwapSession::Verify() {
  size_t bad = 0, kernel_bad = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    std::vector<uint8_t> data(b.size);
    if (cuMemcpyDtoH(data.data(), b.ptr, b.size) != CUDA_SUCCESS || Checksum(data) != b.sum) {
      ++bad;
    }
    uint64_t k = 0;
    if (have_kernels_ && (!KernelChecksum(module_, b, out_, &k) || k != kernel_sums_[i])) {
      ++kernel_bad;
    }
  }
  std::printf("verified blocks=%zu bad=%zu kernel_bad=%zu\n", blocks_.size(), bad, kernel_bad);
  PrintPointers();
}

// "ptr=HEX" per block, then "end".
void SwapSession::PrintPointers() {
  for (const Block& b : blocks_) std::printf("ptr=%llx\n", static_cast<unsigned long long>(b.ptr));
  std::printf("end\n");
  std::fflush(stdout);
}

}  // namespace

int Swap(uint32_t seed, int count, uint64_t big_mib) {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  SwapSession session(seed);
  if (int failed = session.Start(count, big_mib); failed != 0) return failed;
  return session.Serve();
}

}  // namespace gshare::probe
