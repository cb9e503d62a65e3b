// preload_probe: an unmodified CUDA driver-API program (it knows nothing of gshare) that the
// shim's tests run under LD_PRELOAD=libgshare.so on simcuda. It reaches the driver one of three
// ways and prints what it observes as "key=value" lines on stdout.
//
//   preload_probe totals <linked|dlsym|procaddr|procaddr-ptds> [chunk_mib]
//       totals, free-memory movement and quota enforcement (allocates chunk_mib until refused)
//   preload_probe init                 cuInit's result (malformed configuration tests)
//   preload_probe fork                 allocation state across fork(): the child's own view
//   preload_probe swap <seed> <count> <big_mib>
//                                      one big_mib block plus <count> random allocations (bytes
//                                      to 256 MiB, interleaved frees), a checksum each; waits for
//                                      stdin commands: "verify" (re-read, compare, run a kernel
//                                      on the data), "grow <mib>" (one more block, uploaded
//                                      with async copies), "inflight <ms>" (queue a kernel busy
//                                      for ms, then a checksum of the first block, without
//                                      waiting), "collect" (wait for it, compare), "capture <ms>"
//                                      (a graph capture held open for ms), "quit"
//   preload_probe kernels              runs the sample kernels and prints their result checksums
//   preload_probe alloc <mib>          allocates mib MiB (no shim expected), prints the result
//   preload_probe lookup               where dlsym (per handle) and cuGetProcAddress_v2 lead
//   preload_probe stress <threads> <iterations>
//                                      threads copying, launching checksum kernels and verifying
//                                      on their own streams (while a test swaps the vGPU)
//   preload_probe memory-api           stream-ordered and pool allocations, pitch, pointer
//                                      queries, the application's own VMM handles
//   preload_probe devices <linked|dlsym|procaddr|procaddr-ptds>
//                                      the devices the program sees (count, ordinal 0 and 1, PCI
//                                      bus id and peer queries), its context's device, where an
//                                      allocation lives, and a kernel and copies on it
// The swap mode's "where" command prints the context's device, the device count and the
// device ordinal of the first block.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "simcuda/kernels/kernels.h"
#include "simcuda/kernels/ptx.h"

namespace {

// The entry points a probe uses, however they were found.
struct Api {
  PFN_cuInit_v2000 init = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_retain = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctx_set_current = nullptr;
  PFN_cuMemGetInfo_v3020 mem_get_info = nullptr;
  PFN_cuDeviceTotalMem_v3020 device_total_mem = nullptr;
  PFN_cuMemAlloc_v3020 mem_alloc = nullptr;
  PFN_cuMemFree_v3020 mem_free = nullptr;
  void* memcpy_htod_async = nullptr;  // only inspected: which function did we get?
  void* launch_kernel = nullptr;
  PFN_cuDeviceGetCount_v2000 device_get_count = nullptr;
  PFN_cuDeviceGetByPCIBusId_v4010 by_pci_bus_id = nullptr;
  PFN_cuDeviceCanAccessPeer_v4000 can_access_peer = nullptr;
  PFN_cuDeviceGetP2PAttribute_v8000 p2p_attribute = nullptr;
  PFN_cuPointerGetAttribute_v4000 pointer_attribute = nullptr;
};

std::string WhereIs(void* fn) {
  Dl_info info{};
  if (fn == nullptr || dladdr(fn, &info) == 0) return "none";
  std::string file = info.dli_fname != nullptr ? info.dli_fname : "?";
  file = file.substr(file.find_last_of('/') + 1);
  return file + ":" + (info.dli_sname != nullptr ? info.dli_sname : "?");
}

bool LoadLinked(Api* api) {
  api->init = &cuInit;
  api->device_get = &cuDeviceGet;
  api->primary_retain = &cuDevicePrimaryCtxRetain;
  api->ctx_set_current = &cuCtxSetCurrent;
  api->mem_get_info = &cuMemGetInfo;
  api->device_total_mem = &cuDeviceTotalMem;
  api->mem_alloc = &cuMemAlloc;
  api->mem_free = &cuMemFree;
  api->memcpy_htod_async = reinterpret_cast<void*>(&cuMemcpyHtoDAsync);
  api->launch_kernel = reinterpret_cast<void*>(&cuLaunchKernel);
  api->device_get_count = &cuDeviceGetCount;
  api->by_pci_bus_id = &cuDeviceGetByPCIBusId;
  api->can_access_peer = &cuDeviceCanAccessPeer;
  api->p2p_attribute = &cuDeviceGetP2PAttribute;
  api->pointer_attribute = &cuPointerGetAttribute;
  return true;
}

template <typename T>
void Dlsym(void* handle, const char* name, T* out) {
  *out = reinterpret_cast<T>(dlsym(handle, name));
}

bool LoadDlsym(Api* api) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return false;
  Dlsym(h, "cuInit", &api->init);
  Dlsym(h, "cuDeviceGet", &api->device_get);
  Dlsym(h, "cuDevicePrimaryCtxRetain", &api->primary_retain);
  Dlsym(h, "cuCtxSetCurrent", &api->ctx_set_current);
  Dlsym(h, "cuMemGetInfo_v2", &api->mem_get_info);
  Dlsym(h, "cuDeviceTotalMem_v2", &api->device_total_mem);
  Dlsym(h, "cuMemAlloc_v2", &api->mem_alloc);
  Dlsym(h, "cuMemFree_v2", &api->mem_free);
  Dlsym(h, "cuMemcpyHtoDAsync_v2", &api->memcpy_htod_async);
  Dlsym(h, "cuLaunchKernel", &api->launch_kernel);
  Dlsym(h, "cuDeviceGetCount", &api->device_get_count);
  Dlsym(h, "cuDeviceGetByPCIBusId", &api->by_pci_bus_id);
  Dlsym(h, "cuDeviceCanAccessPeer", &api->can_access_peer);
  Dlsym(h, "cuDeviceGetP2PAttribute", &api->p2p_attribute);
  Dlsym(h, "cuPointerGetAttribute", &api->pointer_attribute);
  return api->init != nullptr;
}

// As cudart does: dlopen the driver, find cuGetProcAddress_v2, ask it for every base name.
bool LoadProcAddress(Api* api, bool per_thread) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return false;
  PFN_cuGetProcAddress_v12000 get = nullptr;
  Dlsym(h, "cuGetProcAddress_v2", &get);
  if (get == nullptr) return false;
  const cuuint64_t flags =
      per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
  auto ask = [&](const char* name, auto* out) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    // Before cuInit, as cudart does.
    if (get(name, &fn, CUDA_VERSION, flags, &status) != CUDA_SUCCESS ||
        status != CU_GET_PROC_ADDRESS_SUCCESS) {
      fn = nullptr;
    }
    *out = reinterpret_cast<std::remove_reference_t<decltype(*out)>>(fn);
  };
  ask("cuInit", &api->init);
  ask("cuDeviceGet", &api->device_get);
  ask("cuDevicePrimaryCtxRetain", &api->primary_retain);
  ask("cuCtxSetCurrent", &api->ctx_set_current);
  ask("cuMemGetInfo", &api->mem_get_info);
  ask("cuDeviceTotalMem", &api->device_total_mem);
  ask("cuMemAlloc", &api->mem_alloc);
  ask("cuMemFree", &api->mem_free);
  ask("cuMemcpyHtoDAsync", &api->memcpy_htod_async);
  ask("cuLaunchKernel", &api->launch_kernel);
  ask("cuDeviceGetCount", &api->device_get_count);
  ask("cuDeviceGetByPCIBusId", &api->by_pci_bus_id);
  ask("cuDeviceCanAccessPeer", &api->can_access_peer);
  ask("cuDeviceGetP2PAttribute", &api->p2p_attribute);
  ask("cuPointerGetAttribute", &api->pointer_attribute);
  return api->init != nullptr;
}

int Fail(const char* what, CUresult r) {
  std::printf("error=%s:%d\n", what, static_cast<int>(r));
  return 1;
}

CUresult SetUpContext(const Api& api) {
  if (CUresult r = api.init(0); r != CUDA_SUCCESS) return r;
  CUdevice dev = 0;
  if (CUresult r = api.device_get(&dev, 0); r != CUDA_SUCCESS) return r;
  CUcontext ctx = nullptr;
  if (CUresult r = api.primary_retain(&ctx, dev); r != CUDA_SUCCESS) return r;
  return api.ctx_set_current(ctx);
}

int Totals(const std::string& how, uint64_t chunk_mib) {
  Api api;
  bool ok = false;
  if (how == "linked") ok = LoadLinked(&api);
  if (how == "dlsym") ok = LoadDlsym(&api);
  if (how == "procaddr") ok = LoadProcAddress(&api, false);
  if (how == "procaddr-ptds") ok = LoadProcAddress(&api, true);
  if (!ok || api.mem_alloc == nullptr || api.mem_get_info == nullptr) {
    return Fail("load", CUDA_ERROR_NOT_FOUND);
  }
  std::printf("mem_alloc_fn=%s\n", WhereIs(reinterpret_cast<void*>(api.mem_alloc)).c_str());
  std::printf("memcpy_htod_async_fn=%s\n", WhereIs(api.memcpy_htod_async).c_str());
  std::printf("launch_kernel_fn=%s\n", WhereIs(api.launch_kernel).c_str());
  if (CUresult r = SetUpContext(api); r != CUDA_SUCCESS) return Fail("context", r);
  size_t free0 = 0, total0 = 0, device_total = 0;
  if (CUresult r = api.mem_get_info(&free0, &total0); r != CUDA_SUCCESS) return Fail("info", r);
  if (CUresult r = api.device_total_mem(&device_total, 0); r != CUDA_SUCCESS) {
    return Fail("total", r);
  }
  std::printf("total=%zu\nfree_start=%zu\ndevice_total=%zu\n", total0, free0, device_total);
  std::vector<CUdeviceptr> ptrs;
  size_t last_free = free0;
  bool monotonic = true;
  CUresult last = CUDA_SUCCESS;
  for (int i = 0; i < 4096; ++i) {
    CUdeviceptr p = 0;
    last = api.mem_alloc(&p, chunk_mib << 20);
    if (last != CUDA_SUCCESS) break;
    ptrs.push_back(p);
    size_t f = 0, t = 0;
    (void)api.mem_get_info(&f, &t);
    if (ptrs.size() == 1) std::printf("free_after_first=%zu\n", f);
    if (f >= last_free) monotonic = false;
    last_free = f;
  }
  std::printf("allocations=%zu\nrefusal=%d\nfree_at_refusal=%zu\nfree_monotonic=%d\n",
              ptrs.size(), static_cast<int>(last), last_free, monotonic ? 1 : 0);
  for (CUdeviceptr p : ptrs) {
    if (CUresult r = api.mem_free(p); r != CUDA_SUCCESS) return Fail("free", r);
  }
  size_t free_end = 0, total_end = 0;
  (void)api.mem_get_info(&free_end, &total_end);
  std::printf("free_end=%zu\n", free_end);
  return 0;
}

int Init() {
  const CUresult r = cuInit(0);
  std::printf("init=%d\n", static_cast<int>(r));
  CUdeviceptr p = 0;
  std::printf("alloc=%d\n", static_cast<int>(cuMemAlloc(&p, 1 << 20)));
  return 0;
}

int Fork() {
  Api api;
  LoadLinked(&api);
  if (CUresult r = SetUpContext(api); r != CUDA_SUCCESS) return Fail("context", r);
  CUdeviceptr p = 0;
  if (CUresult r = cuMemAlloc(&p, 256u << 20); r != CUDA_SUCCESS) return Fail("alloc", r);
  size_t free_parent = 0, total = 0;
  (void)cuMemGetInfo(&free_parent, &total);
  std::printf("parent_free=%zu\n", free_parent);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    // A fresh process as far as the vGPU is concerned: re-initialise and look.
    CUresult r = SetUpContext(api);
    size_t f = 0, t = 0;
    if (r == CUDA_SUCCESS) r = cuMemGetInfo(&f, &t);
    CUdeviceptr q = 0;
    const CUresult a = r == CUDA_SUCCESS ? cuMemAlloc(&q, 64u << 20) : r;
    std::printf("child_init=%d\nchild_free=%zu\nchild_total=%zu\nchild_alloc=%d\n",
                static_cast<int>(r), f, t, static_cast<int>(a));
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  size_t free_after = 0;
  (void)cuMemGetInfo(&free_after, &total);
  std::printf("child_exit=%d\nparent_free_after=%zu\n",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1, free_after);
  return 0;
}

// FNV-1a over 8-byte words (then the tail bytes): position-sensitive, fast on large blocks.
uint64_t Checksum(const std::vector<uint8_t>& data) {
  uint64_t h = 1469598103934665603ull;
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, data.data() + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < data.size(); ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

struct Block {
  CUdeviceptr ptr = 0;
  size_t size = 0;
  uint64_t sum = 0;
  uint32_t seed = 0;
};

// Runs fill_u32 + checksum kernels over a block; returns the kernel's checksum.
bool KernelChecksum(CUmodule module, const Block& b, CUdeviceptr out, uint64_t* sum) {
  CUfunction checksum = nullptr;
  if (cuModuleGetFunction(&checksum, module, "checksum") != CUDA_SUCCESS) return false;
  unsigned long long zero = 0;
  if (cuMemcpyHtoD(out, &zero, sizeof(zero)) != CUDA_SUCCESS) return false;
  CUdeviceptr p = b.ptr;
  unsigned long long n = b.size;
  void* params[] = {&p, &n, &out};
  const unsigned grid = simcuda::kernels::ElementwiseGrid(n);
  if (cuLaunchKernel(checksum, grid, 1, 1, simcuda::kernels::kElementwiseBlock, 1, 1, 0, nullptr,
                     params, nullptr) != CUDA_SUCCESS) {
    return false;
  }
  unsigned long long result = 0;
  if (cuMemcpyDtoH(&result, out, sizeof(result)) != CUDA_SUCCESS) return false;
  *sum = result;
  return true;
}

// Deterministic bytes, fast enough for hundreds of MiB.
void FillBytes(std::vector<uint8_t>* data, uint64_t seed) {
  uint64_t x = seed;
  for (size_t i = 0; i < data->size(); i += 8) {
    x += 0x9e3779b97f4a7c15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(data->data() + i, &z, std::min<size_t>(8, data->size() - i));
  }
}

int Swap(uint32_t seed, int count, uint64_t big_mib) {
  Api api;
  LoadLinked(&api);
  if (CUresult r = SetUpContext(api); r != CUDA_SUCCESS) return Fail("context", r);
  CUmodule module = nullptr;
  const bool have_kernels = cuModuleLoadData(&module, basic_kernels_ptx) == CUDA_SUCCESS;
  CUdeviceptr out = 0;
  if (CUresult r = cuMemAlloc(&out, 8); r != CUDA_SUCCESS) return Fail("alloc-out", r);
  std::mt19937 rng(seed);
  // Sizes from bytes to hundreds of MiB (log-uniform), with interleaved frees.
  std::uniform_real_distribution<double> log_size(0.0, 28.0);
  std::vector<Block> blocks;
  for (int i = -1; i < count; ++i) {
    Block b;
    b.size = i < 0 ? big_mib << 20 : std::max<size_t>(1, static_cast<size_t>(std::exp2(log_size(rng))));
    if (b.size == 0) continue;
    if (CUresult r = cuMemAlloc(&b.ptr, b.size); r != CUDA_SUCCESS) return Fail("alloc", r);
    std::vector<uint8_t> data(b.size);
    FillBytes(&data, rng());
    if (CUresult r = cuMemcpyHtoD(b.ptr, data.data(), b.size); r != CUDA_SUCCESS) {
      return Fail("htod", r);
    }
    b.sum = Checksum(data);
    blocks.push_back(b);
    if (rng() % 3 == 0 && blocks.size() > 2) {  // interleaved free (never the big block)
      const size_t victim = 1 + rng() % (blocks.size() - 2);
      if (CUresult r = cuMemFree(blocks[victim].ptr); r != CUDA_SUCCESS) return Fail("free", r);
      blocks.erase(blocks.begin() + static_cast<long>(victim));
    }
  }
  if (CUresult r = cuCtxSynchronize(); r != CUDA_SUCCESS) return Fail("sync", r);
  std::vector<uint64_t> kernel_sums(blocks.size());
  for (size_t i = 0; i < blocks.size() && have_kernels; ++i) {
    if (!KernelChecksum(module, blocks[i], out, &kernel_sums[i])) return Fail("kernel", CUDA_ERROR_UNKNOWN);
  }
  size_t bytes = 0;
  for (const Block& b : blocks) bytes += b.size;
  std::printf("ready blocks=%zu bytes=%zu kernels=%d\n", blocks.size(), bytes, have_kernels ? 1 : 0);
  for (const Block& b : blocks) std::printf("ptr=%llx\n", static_cast<unsigned long long>(b.ptr));
  std::printf("end\n");
  std::fflush(stdout);
  CUstream upload = nullptr;
  CUstream work = nullptr;  // "inflight" / "collect"
  CUdeviceptr work_out = 0;
  unsigned long long work_result = 0;
  std::string command;
  while (std::getline(std::cin, command)) {
    if (command == "quit") break;
    if (command.rfind("grow ", 0) == 0) {
      // "grow MIB": one more block, uploaded in 8 MiB asynchronous copies on a stream (as
      // inference servers load weights), synchronised; prints "grown ptr=HEX".
      if (upload == nullptr && cuStreamCreate(&upload, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        return Fail("stream", CUDA_ERROR_UNKNOWN);
      }
      Block b;
      b.size = std::strtoull(command.c_str() + 5, nullptr, 10) << 20;
      if (CUresult r = cuMemAlloc(&b.ptr, b.size); r != CUDA_SUCCESS) return Fail("grow-alloc", r);
      std::vector<uint8_t> data(b.size);
      FillBytes(&data, rng());
      constexpr size_t kChunk = size_t{8} << 20;
      for (size_t done = 0; done < b.size; done += kChunk) {
        const size_t n = std::min(kChunk, b.size - done);
        if (CUresult r = cuMemcpyHtoDAsync(b.ptr + done, data.data() + done, n, upload);
            r != CUDA_SUCCESS) {
          return Fail("grow-htod", r);
        }
      }
      if (CUresult r = cuStreamSynchronize(upload); r != CUDA_SUCCESS) return Fail("grow-sync", r);
      b.sum = Checksum(data);
      uint64_t k = 0;
      if (have_kernels && !KernelChecksum(module, b, out, &k)) return Fail("kernel", CUDA_ERROR_UNKNOWN);
      blocks.push_back(b);
      kernel_sums.push_back(k);
      std::printf("grown ptr=%llx\n", static_cast<unsigned long long>(b.ptr));
      std::fflush(stdout);
      continue;
    }
    if (command.rfind("inflight ", 0) == 0 && have_kernels && !blocks.empty()) {
      // "inflight MS": queues on a stream of its own a kernel busy for MS ms, then a checksum
      // kernel over the first block and its copy back, and returns at once without waiting
      // (prints "queued"); "collect" waits and prints "collected ok=0/1".
      if (work == nullptr && cuStreamCreate(&work, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        return Fail("stream", CUDA_ERROR_UNKNOWN);
      }
      if (work_out == 0 && cuMemAlloc(&work_out, 8) != CUDA_SUCCESS) {
        return Fail("alloc-out", CUDA_ERROR_OUT_OF_MEMORY);
      }
      CUfunction sleep_fn = nullptr, checksum = nullptr;
      if (cuModuleGetFunction(&sleep_fn, module, "sleep_ns") != CUDA_SUCCESS ||
          cuModuleGetFunction(&checksum, module, "checksum") != CUDA_SUCCESS) {
        return Fail("functions", CUDA_ERROR_NOT_FOUND);
      }
      unsigned long long ns = std::strtoull(command.c_str() + 9, nullptr, 10) * 1000000ull;
      void* sleep_params[] = {&ns};
      CUdeviceptr p = blocks[0].ptr;
      unsigned long long n = blocks[0].size;
      void* params[] = {&p, &n, &work_out};
      work_result = 0;
      if (cuMemsetD8Async(work_out, 0, 8, work) != CUDA_SUCCESS ||
          cuLaunchKernel(sleep_fn, 1, 1, 1, 1, 1, 1, 0, work, sleep_params, nullptr) != CUDA_SUCCESS ||
          cuLaunchKernel(checksum, simcuda::kernels::ElementwiseGrid(n), 1, 1,
                         simcuda::kernels::kElementwiseBlock, 1, 1, 0, work, params,
                         nullptr) != CUDA_SUCCESS ||
          cuMemcpyDtoHAsync(&work_result, work_out, 8, work) != CUDA_SUCCESS) {
        return Fail("inflight", CUDA_ERROR_UNKNOWN);
      }
      std::printf("queued\n");
      std::fflush(stdout);
      continue;
    }
    if (command.rfind("capture ", 0) == 0) {
      // "capture MS": a memset on a fresh stream, then a graph capture begun on it and held
      // open for MS ms before it is ended; prints "captured end=<CUresult>" (simcuda builds no
      // graphs: CUDA_ERROR_NOT_SUPPORTED means the capture was intact, 901 = invalidated).
      CUstream cs = nullptr;
      if (work_out == 0 && cuMemAlloc(&work_out, 8) != CUDA_SUCCESS) {
        return Fail("alloc-out", CUDA_ERROR_OUT_OF_MEMORY);
      }
      if (cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
          cuMemsetD8Async(work_out, 0x5a, 8, cs) != CUDA_SUCCESS ||
          cuStreamSynchronize(cs) != CUDA_SUCCESS ||
          cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS) {
        return Fail("capture", CUDA_ERROR_UNKNOWN);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(command.c_str() + 8)));
      CUgraph graph = nullptr;
      const CUresult end = cuStreamEndCapture(cs, &graph);
      (void)cuStreamDestroy(cs);
      std::printf("captured end=%d\n", static_cast<int>(end));
      std::fflush(stdout);
      continue;
    }
    if (command == "where") {
      CUdevice ctx_device = -1;
      int devices = -1, ordinal = -1;
      (void)cuCtxGetDevice(&ctx_device);
      (void)cuDeviceGetCount(&devices);
      (void)cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, blocks[0].ptr);
      // Which physical GPUs hold an active primary context of this process (bit per ordinal;
      // the ordinals are the driver's, passed as CUdevice values directly).
      unsigned primary = 0;
      for (int d = 0; d < 4; ++d) {
        unsigned flags = 0;
        int active = 0;
        if (cuDevicePrimaryCtxGetState(d, &flags, &active) == CUDA_SUCCESS && active != 0) {
          primary |= 1u << d;
        }
      }
      std::printf("where ctx_device=%d count=%d ptr_ordinal=%d primary=%u\n", ctx_device, devices,
                  ordinal, primary);
      std::fflush(stdout);
      continue;
    }
    if (command == "collect" && work != nullptr) {
      const CUresult r = cuStreamSynchronize(work);
      std::printf("collected ok=%d\n", r == CUDA_SUCCESS && work_result == kernel_sums[0] ? 1 : 0);
      std::fflush(stdout);
      continue;
    }
    if (command == "verify") {
      size_t bad = 0, kernel_bad = 0;
      for (size_t i = 0; i < blocks.size(); ++i) {
        const Block& b = blocks[i];
        std::vector<uint8_t> data(b.size);
        if (cuMemcpyDtoH(data.data(), b.ptr, b.size) != CUDA_SUCCESS || Checksum(data) != b.sum) {
          ++bad;
        }
        uint64_t k = 0;
        if (have_kernels && (!KernelChecksum(module, b, out, &k) || k != kernel_sums[i])) {
          ++kernel_bad;
        }
      }
      std::printf("verified blocks=%zu bad=%zu kernel_bad=%zu\n", blocks.size(), bad, kernel_bad);
      for (const Block& b : blocks) {
        std::printf("ptr=%llx\n", static_cast<unsigned long long>(b.ptr));
      }
      std::printf("end\n");
      std::fflush(stdout);
    }
  }
  return 0;
}

int Kernels() {
  Api api;
  LoadLinked(&api);
  if (CUresult r = SetUpContext(api); r != CUDA_SUCCESS) return Fail("context", r);
  CUmodule basic = nullptr, gemm = nullptr;
  if (CUresult r = cuModuleLoadData(&basic, basic_kernels_ptx); r != CUDA_SUCCESS) {
    return Fail("module", r);
  }
  if (CUresult r = cuModuleLoadData(&gemm, gemm_ptx); r != CUDA_SUCCESS) return Fail("module", r);
  const unsigned n = 1 << 16;
  std::vector<float> a(n), b(n);
  for (unsigned i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 97) * 0.5f;
    b[i] = static_cast<float>(i % 31) * -0.25f;
  }
  CUdeviceptr da = 0, db = 0, dc = 0;
  if (cuMemAlloc(&da, n * 4) != CUDA_SUCCESS || cuMemAlloc(&db, n * 4) != CUDA_SUCCESS ||
      cuMemAlloc(&dc, n * 4) != CUDA_SUCCESS) {
    return Fail("alloc", CUDA_ERROR_OUT_OF_MEMORY);
  }
  CUstream stream = nullptr;
  (void)cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  (void)cuMemcpyHtoDAsync(da, a.data(), n * 4, stream);
  (void)cuMemcpyHtoDAsync(db, b.data(), n * 4, stream);
  CUfunction add = nullptr, saxpy = nullptr, sgemm = nullptr;
  (void)cuModuleGetFunction(&add, basic, "vector_add");
  (void)cuModuleGetFunction(&saxpy, basic, "saxpy");
  (void)cuModuleGetFunction(&sgemm, gemm, "sgemm");
  unsigned long long nn = n;
  void* add_params[] = {&da, &db, &dc, &nn};
  const unsigned grid = simcuda::kernels::ElementwiseGrid(n);
  const unsigned block = simcuda::kernels::kElementwiseBlock;
  if (CUresult r = cuLaunchKernel(add, grid, 1, 1, block, 1, 1, 0, stream, add_params, nullptr);
      r != CUDA_SUCCESS) {
    return Fail("vector_add", r);
  }
  float alpha = 1.5f;
  void* saxpy_params[] = {&alpha, &da, &dc, &nn};
  if (CUresult r = cuLaunchKernel(saxpy, grid, 1, 1, block, 1, 1, 0, stream, saxpy_params, nullptr);
      r != CUDA_SUCCESS) {
    return Fail("saxpy", r);
  }
  // sgemm: C(64x64) = A(64x128) * B(128x64), A and B taken from the vectors above.
  unsigned M = 64, N = 64, K = 128;
  float one = 1.0f, zero = 0.0f;
  CUdeviceptr dC = 0;
  if (cuMemAlloc(&dC, M * N * 4) != CUDA_SUCCESS) return Fail("alloc", CUDA_ERROR_OUT_OF_MEMORY);
  void* gemm_params[] = {&M, &N, &K, &one, &da, &db, &zero, &dC};
  const unsigned tile = simcuda::kernels::kGemmTile;
  if (CUresult r = cuLaunchKernel(sgemm, (N + tile - 1) / tile, (M + tile - 1) / tile, 1, tile,
                                  tile, 1, 0, stream, gemm_params, nullptr);
      r != CUDA_SUCCESS) {
    return Fail("sgemm", r);
  }
  std::vector<float> c(n), C(M * N);
  (void)cuMemcpyDtoHAsync(c.data(), dc, n * 4, stream);
  (void)cuMemcpyDtoHAsync(C.data(), dC, M * N * 4, stream);
  if (CUresult r = cuStreamSynchronize(stream); r != CUDA_SUCCESS) return Fail("sync", r);
  std::vector<uint8_t> bytes(reinterpret_cast<uint8_t*>(c.data()),
                             reinterpret_cast<uint8_t*>(c.data()) + c.size() * 4);
  std::printf("vector_saxpy=%016llx\n", static_cast<unsigned long long>(Checksum(bytes)));
  bytes.assign(reinterpret_cast<uint8_t*>(C.data()),
               reinterpret_cast<uint8_t*>(C.data()) + C.size() * 4);
  std::printf("sgemm=%016llx\n", static_cast<unsigned long long>(Checksum(bytes)));
  std::printf("c1=%g\n", static_cast<double>(c[1]));
  return 0;
}

int Lookup() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  std::printf("default_alloc=%s\n", WhereIs(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2")).c_str());
  std::printf("next_alloc=%s\n", WhereIs(dlsym(RTLD_NEXT, "cuMemAlloc_v2")).c_str());
  std::printf("cuda_alloc=%s\n", WhereIs(dlsym(cuda, "cuMemAlloc_v2")).c_str());
  std::printf("libc_alloc=%s\n", WhereIs(dlsym(libc, "cuMemAlloc_v2")).c_str());
  std::printf("next_malloc=%s\n", WhereIs(dlsym(RTLD_NEXT, "malloc")).c_str());
  std::printf("cuda_unhooked=%s\n", WhereIs(dlsym(cuda, "cuCtxGetCurrent")).c_str());
  std::printf("cuda_export_table=%s\n", WhereIs(dlsym(cuda, "cuGetExportTable")).c_str());
  std::printf("cuda_missing=%s\n", WhereIs(dlsym(cuda, "cuNoSuchFunction")).c_str());
  auto get = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(cuda, "cuGetProcAddress_v2"));
  std::printf("get_proc=%s\n", WhereIs(reinterpret_cast<void*>(get)).c_str());
  auto ask = [&](const char* key, const char* name, int version, cuuint64_t flags) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult r = get(name, &fn, version, flags, &status);
    std::printf("%s=%d:%d:%s\n", key, static_cast<int>(r), static_cast<int>(status),
                WhereIs(fn).c_str());
  };
  ask("proc_get_proc", "cuGetProcAddress", 12000, 0);
  ask("proc_get_proc_11", "cuGetProcAddress", 11030, 0);
  ask("proc_alloc_12", "cuMemAlloc", 12000, 0);
  ask("proc_htod_ptds", "cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  ask("proc_export_table", "cuGetExportTable", 12000, 0);
  ask("proc_unhooked", "cuCtxGetCurrent", 12000, 0);
  ask("proc_missing", "cuNoSuchFunction", 12000, 0);
  return 0;
}

int Stress(int threads, int iterations) {
  Api api;
  LoadLinked(&api);
  if (CUresult r = SetUpContext(api); r != CUDA_SUCCESS) return Fail("context", r);
  CUcontext ctx = nullptr;
  (void)cuCtxGetCurrent(&ctx);
  CUmodule module = nullptr;
  if (CUresult r = cuModuleLoadData(&module, basic_kernels_ptx); r != CUDA_SUCCESS) {
    return Fail("module", r);
  }
  CUfunction checksum = nullptr;
  (void)cuModuleGetFunction(&checksum, module, "checksum");
  std::atomic<int> errors{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      (void)cuCtxSetCurrent(ctx);
      CUstream stream = nullptr;
      CUdeviceptr buf = 0, out = 0;
      const size_t bytes = (1u << 20) + static_cast<size_t>(t) * 4096;
      if (cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
          cuMemAlloc(&buf, bytes) != CUDA_SUCCESS || cuMemAlloc(&out, 8) != CUDA_SUCCESS) {
        ++errors;
        ++ready;
        return;
      }
      ++ready;
      std::vector<uint8_t> data(bytes), back(bytes);
      for (int i = 0; i < iterations; ++i) {
        FillBytes(&data, static_cast<uint64_t>(t) * 1000003u + static_cast<uint64_t>(i));
        unsigned long long zero = 0, k1 = 0, k2 = 0;
        unsigned long long n = bytes;
        void* params[] = {&buf, &n, &out};
        const unsigned grid = simcuda::kernels::ElementwiseGrid(n);
        bool ok = cuMemcpyHtoDAsync(buf, data.data(), bytes, stream) == CUDA_SUCCESS &&
                  cuMemcpyHtoDAsync(out, &zero, 8, stream) == CUDA_SUCCESS &&
                  cuLaunchKernel(checksum, grid, 1, 1, simcuda::kernels::kElementwiseBlock, 1, 1,
                                 0, stream, params, nullptr) == CUDA_SUCCESS &&
                  cuMemcpyDtoHAsync(&k1, out, 8, stream) == CUDA_SUCCESS &&
                  cuMemcpyDtoHAsync(back.data(), buf, bytes, stream) == CUDA_SUCCESS &&
                  cuStreamSynchronize(stream) == CUDA_SUCCESS;
        // The same checksum again, now that the data may have been swapped out and back.
        ok = ok && cuMemcpyHtoDAsync(out, &zero, 8, stream) == CUDA_SUCCESS &&
             cuLaunchKernel(checksum, grid, 1, 1, simcuda::kernels::kElementwiseBlock, 1, 1, 0,
                            stream, params, nullptr) == CUDA_SUCCESS &&
             cuMemcpyDtoHAsync(&k2, out, 8, stream) == CUDA_SUCCESS &&
             cuStreamSynchronize(stream) == CUDA_SUCCESS;
        if (!ok || back != data || k1 != k2) ++errors;
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  std::printf("started\n");  // every thread holds its memory and is submitting
  std::fflush(stdout);
  for (auto& w : workers) w.join();
  std::printf("done\nerrors=%d\n", errors.load());
  std::fflush(stdout);  // the test tells "exiting" from "failing" by this line
  return 0;
}

size_t FreeNow() {
  size_t f = 0, t = 0;
  (void)cuMemGetInfo(&f, &t);
  return f;
}

int MemoryApi() {
  Api api;
  LoadLinked(&api);
  if (CUresult r = SetUpContext(api); r != CUDA_SUCCESS) return Fail("context", r);
  const size_t free0 = FreeNow();
  std::printf("free0=%zu\n", free0);
  // Pointer queries on a small (sub-allocated) block: the allocation's base and size.
  CUdeviceptr small = 0;
  if (CUresult r = cuMemAlloc(&small, 1000); r != CUDA_SUCCESS) return Fail("alloc", r);
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUresult range = cuMemGetAddressRange(&base, &size, small + 500);
  std::printf("range=%d\nrange_base_ok=%d\nrange_size=%zu\n", static_cast<int>(range),
              base == small ? 1 : 0, size);
  CUdeviceptr attr_base = 0;
  size_t attr_size = 0;
  (void)cuPointerGetAttribute(&attr_base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, small + 10);
  (void)cuPointerGetAttribute(&attr_size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, small + 10);
  std::printf("attr_base_ok=%d\nattr_size=%zu\n", attr_base == small ? 1 : 0, attr_size);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  CUdeviceptr attrs_base = 0;
  size_t attrs_size = 0;
  void* data[] = {&attrs_base, &attrs_size};
  const CUresult many = cuPointerGetAttributes(2, attrs, data, small + 999);
  std::printf("attrs=%d\nattrs_base_ok=%d\nattrs_size=%zu\n", static_cast<int>(many),
              attrs_base == small ? 1 : 0, attrs_size);
  (void)cuMemFree(small);
  // Pitch.
  CUdeviceptr pitched = 0;
  size_t pitch = 0;
  const CUresult p = cuMemAllocPitch(&pitched, &pitch, 1000, 100, 4);
  std::printf("pitch_alloc=%d\npitch=%zu\n", static_cast<int>(p), pitch);
  (void)cuMemFree(pitched);
  // Stream-ordered: the quota applies, and frees come back once the stream passes them.
  CUstream stream = nullptr;
  (void)cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  std::vector<CUdeviceptr> async_ptrs;
  CUresult last = CUDA_SUCCESS;
  for (int i = 0; i < 64; ++i) {
    CUdeviceptr q = 0;
    last = cuMemAllocAsync(&q, 128u << 20, stream);
    if (last != CUDA_SUCCESS) break;
    async_ptrs.push_back(q);
  }
  std::printf("async_allocations=%zu\nasync_refusal=%d\n", async_ptrs.size(),
              static_cast<int>(last));
  for (CUdeviceptr q : async_ptrs) (void)cuMemFreeAsync(q, stream);
  (void)cuStreamSynchronize(stream);
  std::printf("free_after_async=%zu\n", FreeNow());
  // Pools: every pool is the vGPU.
  CUmemoryPool pool = nullptr;
  (void)cuDeviceGetDefaultMemPool(&pool, 0);
  CUdeviceptr pooled = 0;
  const CUresult pr = cuMemAllocFromPoolAsync(&pooled, 256u << 20, pool, stream);
  std::printf("pool_alloc=%d\npool_free_delta=%zu\n", static_cast<int>(pr), free0 - FreeNow());
  (void)cuMemFreeAsync(pooled, stream);
  (void)cuStreamSynchronize(stream);
  // The application's own VMM handles count against the quota.
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  (void)cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  CUmemGenericAllocationHandle handle = 0;
  const CUresult cr = cuMemCreate(&handle, 256u << 20, &prop, 0);
  std::printf("vmm_create=%d\nvmm_free_delta=%zu\n", static_cast<int>(cr), free0 - FreeNow());
  CUmemGenericAllocationHandle too_big = 0;
  std::printf("vmm_over_quota=%d\n", static_cast<int>(cuMemCreate(&too_big, 2ull << 30, &prop, 0)));
  (void)cuMemRelease(handle);
  std::printf("free_end=%zu\n", FreeNow());
  return 0;
}

int Alloc(uint64_t mib) {
  Api api;
  LoadLinked(&api);
  if (CUresult r = SetUpContext(api); r != CUDA_SUCCESS) return Fail("context", r);
  CUdeviceptr p = 0;
  std::printf("alloc=%d\n", static_cast<int>(cuMemAlloc(&p, mib << 20)));
  return 0;
}

}  // namespace

bool LoadBy(const std::string& how, Api* api) {
  if (how == "linked") return LoadLinked(api);
  if (how == "dlsym") return LoadDlsym(api);
  if (how == "procaddr") return LoadProcAddress(api, false);
  if (how == "procaddr-ptds") return LoadProcAddress(api, true);
  return false;
}

int Devices(const std::string& how) {
  Api api;
  if (!LoadBy(how, &api) || api.device_get_count == nullptr || api.by_pci_bus_id == nullptr ||
      api.can_access_peer == nullptr || api.p2p_attribute == nullptr ||
      api.pointer_attribute == nullptr) {
    return Fail("load", CUDA_ERROR_NOT_FOUND);
  }
  std::printf("count_fn=%s\n", WhereIs(reinterpret_cast<void*>(api.device_get_count)).c_str());
  std::printf("device_get_fn=%s\n", WhereIs(reinterpret_cast<void*>(api.device_get)).c_str());
  int count = -1;
  std::printf("count_before_init=%d\n", static_cast<int>(api.device_get_count(&count)));
  if (CUresult r = SetUpContext(api); r != CUDA_SUCCESS) return Fail("context", r);
  (void)api.device_get_count(&count);
  CUdevice dev = -1, dev1 = -1, ctx_device = -1;
  (void)api.device_get(&dev, 0);
  std::printf("count=%d\ndevice=%d\n", count, dev);
  std::printf("device1=%d\n", static_cast<int>(api.device_get(&dev1, 1)));
  (void)cuCtxGetDevice(&ctx_device);
  std::printf("ctx_device=%d\n", ctx_device);
  char bus[32] = {};
  (void)cuDeviceGetPCIBusId(bus, sizeof bus, dev);
  CUdevice found = -1;
  const CUresult self = api.by_pci_bus_id(&found, bus);
  std::printf("pci_self=%d:%d\n", static_cast<int>(self), found);
  // simcuda's bus ids are 00000000:17:00.0, 00000000:18:00.0, ... by ordinal.
  for (int other = 0; other < 2; ++other) {
    char id[32];
    std::snprintf(id, sizeof id, "00000000:%02x:00.0", 0x17 + other);
    found = -1;
    const CUresult r = api.by_pci_bus_id(&found, id);
    if (r == CUDA_SUCCESS && found == dev) continue;
    std::printf("pci_other=%d\n", static_cast<int>(r));
  }
  int can = -1, value = -1;
  const CUdevice other = dev == 0 ? 1 : 0;
  std::printf("peer_self=%d\n", static_cast<int>(api.can_access_peer(&can, dev, dev)));
  std::printf("peer_other=%d\n", static_cast<int>(api.can_access_peer(&can, dev, other)));
  std::printf("p2p_other=%d\n", static_cast<int>(api.p2p_attribute(
                                    &value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, dev, other)));
  // An allocation: where it lives, and a kernel and copies on it in the program's context.
  CUdeviceptr p = 0;
  const size_t n = 1 << 20;
  if (CUresult r = api.mem_alloc(&p, n * sizeof(float)); r != CUDA_SUCCESS) return Fail("alloc", r);
  int ordinal = -1;
  (void)api.pointer_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
  std::printf("ptr_ordinal=%d\n", ordinal);
  std::vector<float> host(n, 1.5f);
  std::printf("htod=%d\n", static_cast<int>(cuMemcpyHtoD(p, host.data(), n * sizeof(float))));
  CUmodule module = nullptr;
  CUfunction scale = nullptr;
  CUresult launched = cuModuleLoadData(&module, basic_kernels_ptx);
  if (launched == CUDA_SUCCESS) launched = cuModuleGetFunction(&scale, module, "saxpy");
  if (launched == CUDA_SUCCESS) {
    // saxpy(alpha, x, y, n): y = alpha * x + y, here with x == y: y = 3 * y.
    uint64_t count_param = n;
    float a = 2.0f;
    void* params[] = {&a, &p, &p, &count_param};
    launched = cuLaunchKernel(scale, static_cast<unsigned>((n + 255) / 256), 1, 1, 256, 1, 1, 0,
                              nullptr, params, nullptr);
  }
  const CUresult synced = cuCtxSynchronize();
  std::printf("kernel=%d\nsync=%d\n", static_cast<int>(launched), static_cast<int>(synced));
  std::printf("dtoh=%d\n", static_cast<int>(cuMemcpyDtoH(host.data(), p, n * sizeof(float))));
  std::printf("result_ok=%d\n", host[0] == 4.5f && host[n - 1] == 4.5f ? 1 : 0);
  (void)api.mem_free(p);
  // The program's own VMM memory with the device named by its ordinal 0 (as PyTorch's
  // expandable segments do with cudart's device index): created, mapped and accessible on the
  // program's device, where its kernel reads it.
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle handle = 0;
  CUresult vmm = cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (vmm == CUDA_SUCCESS) vmm = cuMemAddressReserve(&va, gran, 0, 0, 0);
  if (vmm == CUDA_SUCCESS) vmm = cuMemCreate(&handle, gran, &prop, 0);
  if (vmm == CUDA_SUCCESS) vmm = cuMemMap(va, gran, 0, handle, 0);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (vmm == CUDA_SUCCESS) vmm = cuMemSetAccess(va, gran, &access, 1);
  const size_t vn = gran / sizeof(float);
  std::vector<float> vhost(vn, 1.0f);
  if (vmm == CUDA_SUCCESS) vmm = cuMemcpyHtoD(va, vhost.data(), gran);
  if (vmm == CUDA_SUCCESS && scale != nullptr) {
    uint64_t count_param = vn;
    float a = 2.0f;
    void* params[] = {&a, &va, &va, &count_param};
    vmm = cuLaunchKernel(scale, static_cast<unsigned>((vn + 255) / 256), 1, 1, 256, 1, 1, 0,
                         nullptr, params, nullptr);
  }
  if (vmm == CUDA_SUCCESS) vmm = cuCtxSynchronize();
  if (vmm == CUDA_SUCCESS) vmm = cuMemcpyDtoH(vhost.data(), va, gran);
  int vmm_ordinal = -1;
  (void)api.pointer_attribute(&vmm_ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va);
  std::printf("vmm=%d\nvmm_ok=%d\nvmm_ordinal=%d\n", static_cast<int>(vmm),
              vmm == CUDA_SUCCESS && vhost[0] == 3.0f && vhost[vn - 1] == 3.0f ? 1 : 0, vmm_ordinal);
  if (va != 0) (void)cuMemUnmap(va, gran);
  if (handle != 0) (void)cuMemRelease(handle);
  if (va != 0) (void)cuMemAddressFree(va, gran);
  // A device the program does not see (ordinal 2).
  prop.location.id = 2;
  CUmemGenericAllocationHandle unseen = 0;
  const CUresult bad = cuMemCreate(&unseen, gran, &prop, 0);
  std::printf("vmm_other=%d\n", static_cast<int>(bad));
  if (bad == CUDA_SUCCESS) (void)cuMemRelease(unseen);
  return 0;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "totals" && argc > 2) {
    return Totals(argv[2], argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 64);
  }
  if (mode == "init") return Init();
  if (mode == "fork") return Fork();
  if (mode == "swap" && argc > 4) {
    return Swap(static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)), std::atoi(argv[3]),
                std::strtoull(argv[4], nullptr, 10));
  }
  if (mode == "kernels") return Kernels();
  if (mode == "devices" && argc > 2) return Devices(argv[2]);
  if (mode == "lookup") return Lookup();
  if (mode == "stress" && argc > 3) return Stress(std::atoi(argv[2]), std::atoi(argv[3]));
  if (mode == "memory-api") return MemoryApi();
  if (mode == "alloc" && argc > 2) return Alloc(std::strtoull(argv[2], nullptr, 10));
  std::fprintf(stderr, "usage: see the comment at the top of preload_probe.cc\n");
  return 2;
}
