// fault_worker: an unmodified CUDA driver-API "function" (it knows nothing of gshare) for the
// fault-injection and soak tests. Under LD_PRELOAD=libgshare.so with an arbiter it does random
// allocation / free / kernel fill / host<->device and device<->device copies / verification
// over its own buffers, in turns separated by idle pauses (so the arbiter swaps it out and in),
// and verifies EVERY byte of every live buffer at the start of every turn (checksum kernel over
// the whole buffer against a checksum computed on the host from the fill formula), plus a
// byte-for-byte device-to-host compare of everything at the end.
//
//   fault_worker run  --seed S --big-mib B --budget-mib M --turns T --ops K --idle-ms I
//                     [--seconds D]  (at least T turns, and turns until D seconds have passed)
//                     [--turns-until FILE]  (at least T turns, and turns until FILE exists)
//                     [--trace 1]    (print every operation before doing it)
//                     [--sync-before-free 1]  (cuCtxSynchronize before each cuMemFree)
//                     [--wait-before-alloc FILE]  (after initialising, print "initialized"
//                                 and wait until FILE exists before allocating anything)
//   fault_worker free-in-flight
//       frees an 18 MiB allocation right after queueing a fill kernel on it (legal: the free
//       waits for the work that uses the memory), then allocates and verifies again; prints
//       "ok" and exits 0
//       prints "ready" once its big block is filled, "turn=<t> verified=<bytes> errors=<e>"
//       per turn and a final JSON line {"ok":..,"errors":..,"verified_bytes":..,...};
//       exit status 0 iff every CUDA call succeeded (allocation refusals excepted) and every
//       byte matched.
//   fault_worker hog  --mib N --until FILE
//       (without the shim) holds N MiB of device memory until FILE exists, prints "held"
//   fault_worker used
//       (without the shim) prints "used=<bytes> total=<bytes>" of device 0 as the driver's
//       registry accounts it for all processes
//   fault_worker state PID
//       (without the shim) prints "state=<CUprocessState>" of process PID (0 running,
//       1 locked, 2 checkpointed, 3 failed) as the driver's process checkpoint API reports it
#include <cuda.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "simcuda/kernels/kernel_math.h"
#include "simcuda/kernels/kernels.h"
#include "simcuda/kernels/ptx.h"

namespace {

namespace k = simcuda::kernels;

struct Buffer {
  CUdeviceptr ptr = 0;
  uint64_t bytes = 0;  // a multiple of 256
  uint32_t seed = 0;   // contents: FillPattern(seed, i) for every u32 i
  uint64_t sum = 0;    // checksum of those contents
};

// The checksum of a buffer filled with FillPattern(seed, ·), computed on the host.
uint64_t PatternChecksum(uint32_t seed, uint64_t bytes) {
  uint64_t sum = bytes;
  for (uint64_t j = 0; j < bytes / 8; ++j) {
    const uint64_t w = static_cast<uint64_t>(k::FillPattern(seed, 2 * j)) |
                       (static_cast<uint64_t>(k::FillPattern(seed, 2 * j + 1)) << 32);
    sum += k::ChecksumTerm(j, w);
  }
  return sum;
}

void HostPattern(uint32_t seed, uint64_t bytes, std::vector<uint32_t>* out) {
  out->resize(bytes / 4);
  for (uint64_t i = 0; i < bytes / 4; ++i) (*out)[i] = k::FillPattern(seed, i);
}

std::string ErrName(CUresult r) {
  const char* name = nullptr;
  (void)cuGetErrorName(r, &name);
  return name != nullptr ? name : std::to_string(static_cast<int>(r));
}

class Worker {
 public:
  explicit Worker(uint64_t seed) : rng_(seed) {}

  // Returns "" or what failed.
  std::string Init() {
    CUdevice dev = 0;
    if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return "cuInit " + ErrName(r);
    if (CUresult r = cuDeviceGet(&dev, 0); r != CUDA_SUCCESS) return "cuDeviceGet " + ErrName(r);
    if (CUresult r = cuDevicePrimaryCtxRetain(&ctx_, dev); r != CUDA_SUCCESS)
      return "ctx " + ErrName(r);
    if (CUresult r = cuCtxSetCurrent(ctx_); r != CUDA_SUCCESS) return "set ctx " + ErrName(r);
    if (CUresult r = cuModuleLoadData(&module_, basic_kernels_ptx); r != CUDA_SUCCESS)
      return "module " + ErrName(r);
    if (CUresult r = cuModuleGetFunction(&fill_, module_, "fill_u32"); r != CUDA_SUCCESS)
      return "fill_u32 " + ErrName(r);
    if (CUresult r = cuModuleGetFunction(&checksum_, module_, "checksum"); r != CUDA_SUCCESS)
      return "checksum " + ErrName(r);
    if (CUresult r = cuStreamCreate(&stream_, CU_STREAM_DEFAULT); r != CUDA_SUCCESS)
      return "stream " + ErrName(r);
    if (CUresult r = cuMemAlloc(&out_, 8); r != CUDA_SUCCESS) return "alloc out " + ErrName(r);
    return "";
  }

  // Allocates and kernel-fills a buffer; false with *oom set if the quota refused it.
  std::string Allocate(uint64_t bytes, bool* oom) {
    *oom = false;
    Buffer b;
    b.bytes = bytes;
    if (CUresult r = cuMemAlloc(&b.ptr, bytes); r != CUDA_SUCCESS) {
      if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        *oom = true;
        ++ooms_;
        return "";
      }
      return "cuMemAlloc " + ErrName(r);
    }
    buffers_.push_back(b);
    return Fill(buffers_.size() - 1, NextSeed());
  }

  std::string Fill(size_t i, uint32_t seed) {
    Buffer& b = buffers_[i];
    unsigned long long n = b.bytes / 4;
    void* params[] = {&b.ptr, &n, &seed};
    if (CUresult r = cuLaunchKernel(fill_, k::ElementwiseGrid(n), 1, 1, k::kElementwiseBlock, 1, 1,
                                    0, nullptr, params, nullptr);
        r != CUDA_SUCCESS)
      return "fill " + ErrName(r);
    b.seed = seed;
    b.sum = PatternChecksum(seed, b.bytes);
    return "";
  }

  // Checksums buffer i on the device; counts a mismatch as an error.
  std::string Verify(size_t i) {
    Buffer& b = buffers_[i];
    const uint64_t zero = 0;
    if (CUresult r = cuMemcpyHtoD(out_, &zero, 8); r != CUDA_SUCCESS) return "zero " + ErrName(r);
    unsigned long long nbytes = b.bytes;
    void* params[] = {&b.ptr, &nbytes, &out_};
    if (CUresult r = cuLaunchKernel(checksum_, k::ElementwiseGrid(nbytes / 8), 1, 1,
                                    k::kElementwiseBlock, 1, 1, 0, nullptr, params, nullptr);
        r != CUDA_SUCCESS)
      return "checksum " + ErrName(r);
    uint64_t got = 0;
    if (CUresult r = cuMemcpyDtoH(&got, out_, 8); r != CUDA_SUCCESS) return "read sum " + ErrName(r);
    if (got != b.sum) {
      ++errors_;
      std::printf("mismatch: buffer %zu (%llu bytes, seed %u) checksum %llx want %llx\n", i,
                  static_cast<unsigned long long>(b.bytes), b.seed,
                  static_cast<unsigned long long>(got), static_cast<unsigned long long>(b.sum));
    }
    verified_ += b.bytes;
    return "";
  }

  std::string VerifyAll() {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (std::string e = Verify(i); !e.empty()) return e;
    }
    return "";
  }

  // Reads buffer i back and compares every byte with the pattern.
  std::string CompareOnHost(size_t i) {
    const Buffer& b = buffers_[i];
    std::vector<uint32_t> got(b.bytes / 4);
    if (CUresult r = cuMemcpyDtoH(got.data(), b.ptr, b.bytes); r != CUDA_SUCCESS)
      return "DtoH " + ErrName(r);
    HostPattern(b.seed, b.bytes, &want_);
    if (std::memcmp(got.data(), want_.data(), b.bytes) != 0) {
      ++errors_;
      std::printf("mismatch: buffer %zu differs on the host\n", i);
    }
    verified_ += b.bytes;
    return "";
  }

  // Prints every operation before doing it (--trace 1), to locate a crash.
  bool trace = false;
  // Synchronises before every free (--sync-before-free 1). CUDA does not require it (a free
  // while a kernel still uses the memory is legal with cuMemFree); see the free-in-flight mode.
  bool sync_before_free = false;

  // One random operation on the small buffers (index 0, the big block, is only verified).
  std::string RandomOp(uint64_t budget) {
    uint64_t live = 0;
    for (size_t i = 1; i < buffers_.size(); ++i) live += buffers_[i].bytes;
    const int op = static_cast<int>(rng_() % 7);
    const bool have = buffers_.size() > 1;
    const size_t pick = have ? 1 + rng_() % (buffers_.size() - 1) : 0;
    bool oom = false;
    if (trace) {
      std::printf("op %d on %zu (%llu bytes at %llx), %zu buffers\n", op, pick,
                  static_cast<unsigned long long>(have ? buffers_[pick].bytes : 0),
                  static_cast<unsigned long long>(have ? buffers_[pick].ptr : 0), buffers_.size());
      std::fflush(stdout);
    }
    if (op <= 1 || !have) {  // allocate 4 KiB .. 32 MiB (log-uniform), within the budget
      const double exp2 = 12.0 + static_cast<double>(rng_() % 1300) / 100.0;
      uint64_t bytes = (static_cast<uint64_t>(std::exp2(exp2)) + 255) / 256 * 256;
      if (live + bytes > budget) return have ? Free(pick) : "";
      return Allocate(bytes, &oom);
    }
    if (op == 2) return Free(pick);
    if (op == 3) {  // device-to-device copy into a fresh buffer of the same size
      if (live + buffers_[pick].bytes > budget) return Free(pick);
      const Buffer src = buffers_[pick];
      CUdeviceptr dst = 0;
      if (CUresult r = cuMemAlloc(&dst, src.bytes); r != CUDA_SUCCESS) {
        if (r == CUDA_ERROR_OUT_OF_MEMORY) return ++ooms_, "";
        return "cuMemAlloc " + ErrName(r);
      }
      if (CUresult r = cuMemcpyDtoD(dst, src.ptr, src.bytes); r != CUDA_SUCCESS)
        return "DtoD " + ErrName(r);
      buffers_.push_back({dst, src.bytes, src.seed, src.sum});
      return "";
    }
    if (op == 4 && buffers_[pick].bytes <= (8u << 20)) {  // host-to-device, async on a stream
      const uint32_t seed = NextSeed();
      HostPattern(seed, buffers_[pick].bytes, &want_);
      if (CUresult r = cuMemcpyHtoDAsync(buffers_[pick].ptr, want_.data(), buffers_[pick].bytes,
                                         stream_);
          r != CUDA_SUCCESS)
        return "HtoDAsync " + ErrName(r);
      if (CUresult r = cuStreamSynchronize(stream_); r != CUDA_SUCCESS) return "sync " + ErrName(r);
      buffers_[pick].seed = seed;
      buffers_[pick].sum = PatternChecksum(seed, buffers_[pick].bytes);
      return "";
    }
    if (op == 5 && buffers_[pick].bytes <= (8u << 20)) return CompareOnHost(pick);
    return Fill(pick, NextSeed());
  }

  std::string Free(size_t i) {
    if (sync_before_free) {
      if (CUresult r = cuCtxSynchronize(); r != CUDA_SUCCESS) return "sync " + ErrName(r);
    }
    if (CUresult r = cuMemFree(buffers_[i].ptr); r != CUDA_SUCCESS) return "cuMemFree " + ErrName(r);
    buffers_.erase(buffers_.begin() + static_cast<long>(i));
    return "";
  }

  std::string Finish() {
    if (std::string e = VerifyAll(); !e.empty()) return e;
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (std::string e = CompareOnHost(i); !e.empty()) return e;
    }
    return "";
  }

  uint64_t errors() const { return errors_; }
  uint64_t verified() const { return verified_; }
  uint64_t ooms() const { return ooms_; }
  size_t buffers() const { return buffers_.size(); }

 private:
  uint32_t NextSeed() { return static_cast<uint32_t>(rng_()) | 1u; }

  std::mt19937_64 rng_;
  CUcontext ctx_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction fill_ = nullptr;
  CUfunction checksum_ = nullptr;
  CUstream stream_ = nullptr;
  CUdeviceptr out_ = 0;
  std::vector<Buffer> buffers_;
  std::vector<uint32_t> want_;
  uint64_t errors_ = 0;
  uint64_t verified_ = 0;
  uint64_t ooms_ = 0;
};

int Report(bool ok, const std::string& error, const Worker& w, int turns) {
  std::printf("{\"ok\":%s,\"error\":\"%s\",\"errors\":%llu,\"verified_bytes\":%llu,"
              "\"turns\":%d,\"ooms\":%llu,\"buffers\":%zu}\n",
              ok ? "true" : "false", error.c_str(), static_cast<unsigned long long>(w.errors()),
              static_cast<unsigned long long>(w.verified()), turns,
              static_cast<unsigned long long>(w.ooms()), w.buffers());
  std::fflush(stdout);
  return ok ? 0 : 1;
}

std::map<std::string, std::string> Flags(int argc, char** argv) {
  std::map<std::string, std::string> f;
  for (int i = 2; i + 1 < argc; i += 2) f[argv[i]] = argv[i + 1];
  return f;
}

uint64_t Num(const std::map<std::string, std::string>& f, const std::string& key, uint64_t def) {
  const auto it = f.find(key);
  return it == f.end() ? def : std::strtoull(it->second.c_str(), nullptr, 10);
}

int Run(const std::map<std::string, std::string>& f) {
  Worker w(Num(f, "--seed", 1));
  w.trace = Num(f, "--trace", 0) != 0;
  w.sync_before_free = Num(f, "--sync-before-free", 0) != 0;
  const uint64_t big = Num(f, "--big-mib", 64) << 20;
  const uint64_t budget = Num(f, "--budget-mib", 32) << 20;
  const int turns = static_cast<int>(Num(f, "--turns", 10));
  const int ops = static_cast<int>(Num(f, "--ops", 8));
  const auto idle = std::chrono::milliseconds(Num(f, "--idle-ms", 20));
  // --seconds: keep taking turns (at least --turns) until this much time has passed.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(Num(f, "--seconds", 0));
  // --turns-until: and until this file exists (a test says when the worker may finish).
  const std::string until_file = f.count("--turns-until") ? f.at("--turns-until") : std::string();
  auto more_turns = [&] {
    struct stat st {};
    return std::chrono::steady_clock::now() < until ||
           (!until_file.empty() && ::stat(until_file.c_str(), &st) != 0);
  };
  if (std::string e = w.Init(); !e.empty()) return Report(false, e, w, 0);
  if (const auto it = f.find("--wait-before-alloc"); it != f.end()) {
    std::printf("initialized\n");
    std::fflush(stdout);
    struct stat st {};
    while (::stat(it->second.c_str(), &st) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  bool oom = false;
  if (std::string e = w.Allocate(big, &oom); !e.empty() || oom)
    return Report(false, oom ? "big block refused" : e, w, 0);
  if (std::string e = w.Verify(0); !e.empty()) return Report(false, e, w, 0);
  std::printf("ready\n");
  std::fflush(stdout);
  int t = 0;
  for (; t < turns || more_turns(); ++t) {
    if (std::string e = w.VerifyAll(); !e.empty()) return Report(false, e, w, t);
    for (int o = 0; o < ops; ++o) {
      if (std::string e = w.RandomOp(budget); !e.empty()) return Report(false, e, w, t);
    }
    std::printf("turn=%d verified=%llu errors=%llu\n", t,
                static_cast<unsigned long long>(w.verified()),
                static_cast<unsigned long long>(w.errors()));
    std::fflush(stdout);
    std::this_thread::sleep_for(idle);
  }
  if (std::string e = w.Finish(); !e.empty()) return Report(false, e, w, t);
  return Report(w.errors() == 0, "", w, t);
}

int Hog(const std::map<std::string, std::string>& f) {
  const auto until = f.count("--until") ? f.at("--until") : std::string();
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUdeviceptr p = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
    return 1;
  // The device may be briefly fuller than the caller expects: retry for up to 10 s.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (CUresult r = cuMemAlloc(&p, Num(f, "--mib", 64) << 20); r != CUDA_SUCCESS;
       r = cuMemAlloc(&p, Num(f, "--mib", 64) << 20)) {
    if (std::chrono::steady_clock::now() > give_up) {
      std::printf("refused %s\n", ErrName(r).c_str());
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf("held\n");
  std::fflush(stdout);
  struct stat st{};
  while (::stat(until.c_str(), &st) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return cuMemFree(p) == CUDA_SUCCESS ? 0 : 1;
}

// Frees an 18 MiB allocation whose fill kernel may still be running (legal: the free waits for
// the work that uses the memory), then allocates and verifies again.
int FreeInFlight() {
  Worker w(2);
  if (std::string e = w.Init(); !e.empty()) return Report(false, e, w, 0);
  bool oom = false;
  for (uint64_t bytes : {18875392ull, 291072ull}) {
    if (std::string e = w.Allocate(bytes, &oom); !e.empty() || oom) return Report(false, e, w, 0);
  }
  if (std::string e = w.Free(0); !e.empty()) return Report(false, e, w, 0);
  if (std::string e = w.Allocate(4u << 20, &oom); !e.empty() || oom) return Report(false, e, w, 0);
  if (std::string e = w.Finish(); !e.empty()) return Report(false, e, w, 0);
  std::printf("ok\n");
  return Report(w.errors() == 0, "", w, 0);
}

int Used() {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  size_t free_bytes = 0;
  size_t total = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
      cuMemGetInfo(&free_bytes, &total) != CUDA_SUCCESS)
    return 1;
  std::printf("used=%zu total=%zu\n", total - free_bytes, total);
  return 0;
}

int State(const char* pid_text) {
  CUprocessState state = CU_PROCESS_STATE_FAILED;
  const int pid = pid_text != nullptr ? std::atoi(pid_text) : 0;
  if (pid <= 0 || cuInit(0) != CUDA_SUCCESS || cuCheckpointProcessGetState(pid, &state) != CUDA_SUCCESS)
    return 1;
  std::printf("state=%d\n", static_cast<int>(state));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const auto flags = Flags(argc, argv);
  if (mode == "run") return Run(flags);
  if (mode == "hog") return Hog(flags);
  if (mode == "used") return Used();
  if (mode == "state") return State(argc > 2 ? argv[2] : nullptr);
  if (mode == "free-in-flight") return FreeInFlight();
  std::fprintf(stderr, "usage: fault_worker run|hog|used|state [--flag value]...\n");
  return 2;
}
