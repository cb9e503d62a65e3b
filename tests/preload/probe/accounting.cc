// preload_probe's accounting modes: the quota's edges (issue 17) — stream-ordered frees seen by
// every quota check, free memory never reported beyond what the device can give, the VMM idiom
// (a released handle's bytes count until its last mapping is gone, retained and imported
// handles), and the driver's old (v1) entry points reached by cuGetProcAddress and dlsym.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "driver.h"
#include "modes.h"

namespace gshare::probe {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

size_t FreeNow() {
  size_t f = 0, t = 0;
  (void)cuMemGetInfo(&f, &t);
  return f;
}

// Fills the quota with stream-ordered 16 MiB pieces (synchronising each), frees them all on the
// stream and synchronises it; then, without asking cuMemGetInfo first, makes the quota checks
// that are not cuMemAlloc's: cuMemCreate and cuMemAllocManaged. `threshold`: the default pool's
// release threshold is set to the maximum first (a pool that would keep everything freed).
int AsyncFrees(bool threshold) {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  if (threshold) {
    CUmemoryPool pool = nullptr;
    if (CUresult r = cuDeviceGetDefaultMemPool(&pool, 0); r != CUDA_SUCCESS) return Fail("pool", r);
    cuuint64_t keep_all = ~cuuint64_t{0};
    std::printf("set_threshold=%d\n", static_cast<int>(cuMemPoolSetAttribute(
                                          pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all)));
  }
  CUstream stream = nullptr;
  if (CUresult r = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
    return Fail("stream", r);
  }
  std::vector<CUdeviceptr> pieces;
  CUresult last = CUDA_SUCCESS;
  for (int i = 0; i < 1024; ++i) {
    CUdeviceptr p = 0;
    last = cuMemAllocAsync(&p, 16 * kMiB, stream);
    if (last != CUDA_SUCCESS) break;
    pieces.push_back(p);
    (void)cuStreamSynchronize(stream);
  }
  std::printf("async_pieces=%zu\nasync_refusal=%d\n", pieces.size(), static_cast<int>(last));
  for (CUdeviceptr p : pieces) (void)cuMemFreeAsync(p, stream);
  if (CUresult r = cuStreamSynchronize(stream); r != CUDA_SUCCESS) return Fail("sync", r);
  const CUmemAllocationProp prop = PinnedOn(0);
  CUmemGenericAllocationHandle handle = 0;
  const CUresult created = cuMemCreate(&handle, 16 * kMiB, &prop, 0);
  std::printf("create_after_frees=%d\n", static_cast<int>(created));
  if (created == CUDA_SUCCESS) (void)cuMemRelease(handle);
  CUdeviceptr managed = 0;
  const CUresult managed_r = cuMemAllocManaged(&managed, 16 * kMiB, CU_MEM_ATTACH_GLOBAL);
  std::printf("managed_after_frees=%d\n", static_cast<int>(managed_r));
  if (managed_r == CUDA_SUCCESS) (void)cuMemFree(managed);
  std::printf("free_end=%zu\n", FreeNow());
  return 0;
}

// Allocates `chunk_mib` blocks until refused, then reports what cuMemGetInfo and
// cuDeviceTotalMem say (a quota larger than the device: they must not promise more).
int BeyondDevice(size_t chunk_mib) {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  size_t free0 = 0, total0 = 0;
  (void)cuMemGetInfo(&free0, &total0);
  std::printf("free_start=%zu\ntotal_start=%zu\n", free0, total0);
  std::vector<CUdeviceptr> ptrs;
  CUresult last = CUDA_SUCCESS;
  for (int i = 0; i < 4096; ++i) {
    CUdeviceptr p = 0;
    last = cuMemAlloc(&p, chunk_mib * kMiB);
    if (last != CUDA_SUCCESS) break;
    ptrs.push_back(p);
  }
  size_t f = 0, t = 0;
  (void)cuMemGetInfo(&f, &t);
  size_t device_total = 0;
  (void)cuDeviceTotalMem(&device_total, 0);
  std::printf("allocated=%zu\nrefusal=%d\nfree_at_refusal=%zu\ntotal_at_refusal=%zu\n"
              "device_total=%zu\n",
              ptrs.size() * chunk_mib * kMiB, static_cast<int>(last), f, t, device_total);
  for (CUdeviceptr p : ptrs) (void)cuMemFree(p);
  return 0;
}

// One round of the VMM idiom: create, reserve, map, grant access, release (the memory lives on
// in the mapping), and write it. The reservation in *va.
CUresult MappedAndReleased(size_t bytes, CUdeviceptr* va) {
  const CUmemAllocationProp prop = PinnedOn(0);
  CUmemGenericAllocationHandle handle = 0;
  if (CUresult r = cuMemCreate(&handle, bytes, &prop, 0); r != CUDA_SUCCESS) return r;
  CUresult r = cuMemAddressReserve(va, bytes, 0, 0, 0);
  if (r == CUDA_SUCCESS) r = cuMemMap(*va, bytes, 0, handle, 0);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (r == CUDA_SUCCESS) r = cuMemSetAccess(*va, bytes, &access, 1);
  (void)cuMemRelease(handle);
  if (r == CUDA_SUCCESS) r = cuMemsetD8(*va, 0x5a, bytes);
  return r;
}

void Unmapped(CUdeviceptr va, size_t bytes) {
  (void)cuMemUnmap(va, bytes);
  (void)cuMemAddressFree(va, bytes);
}

// The VMM idiom `rounds` times with `mib` MiB each, the first refusal, what unmapping gives
// back; a retained handle keeps its memory counted until its release; an imported handle counts
// what it maps.
int VmmIdiom(size_t mib, int rounds) {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  const size_t bytes = mib * kMiB;
  const size_t free0 = FreeNow();
  std::vector<CUdeviceptr> held;
  CUresult last = CUDA_SUCCESS;
  for (int i = 0; i < rounds; ++i) {
    CUdeviceptr va = 0;
    last = MappedAndReleased(bytes, &va);
    if (last != CUDA_SUCCESS) break;
    held.push_back(va);
  }
  std::printf("vmm_free0=%zu\nvmm_rounds_held=%zu\nvmm_refusal=%d\nvmm_free_while_held=%zu\n",
              free0, held.size(), static_cast<int>(last), FreeNow());
  for (CUdeviceptr va : held) Unmapped(va, bytes);
  std::printf("vmm_free_after_unmap=%zu\n", FreeNow());
  CUdeviceptr again = 0;
  std::printf("vmm_after_unmap=%d\n", static_cast<int>(MappedAndReleased(bytes, &again)));
  // cuMemRetainAllocationHandle: a second reference to the mapped memory.
  CUmemGenericAllocationHandle retained = 0;
  std::printf("vmm_retain=%d\n", static_cast<int>(cuMemRetainAllocationHandle(
                                     &retained, reinterpret_cast<void*>(again))));
  Unmapped(again, bytes);
  std::printf("vmm_free_retained_unmapped=%zu\n", FreeNow());
  (void)cuMemRelease(retained);
  std::printf("vmm_free_retained_released=%zu\n", FreeNow());
  // An exported handle imported again: what the import maps counts (as an IPC import).
  CUmemAllocationProp prop = PinnedOn(0);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle exported = 0;
  if (CUresult r = cuMemCreate(&exported, bytes / 2, &prop, 0); r != CUDA_SUCCESS) {
    return Fail("create_exportable", r);
  }
  int fd = -1;
  if (CUresult r = cuMemExportToShareableHandle(&fd, exported, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
      r != CUDA_SUCCESS) {
    return Fail("export", r);
  }
  CUmemGenericAllocationHandle imported = 0;
  if (CUresult r = cuMemImportFromShareableHandle(
          &imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      r != CUDA_SUCCESS) {
    return Fail("import", r);
  }
  const size_t before_map = FreeNow();
  CUdeviceptr iva = 0;
  CUresult r = cuMemAddressReserve(&iva, bytes / 2, 0, 0, 0);
  if (r == CUDA_SUCCESS) r = cuMemMap(iva, bytes / 2, 0, imported, 0);
  std::printf("import_map=%d\nimport_counted=%zu\n", static_cast<int>(r), before_map - FreeNow());
  (void)cuMemRelease(imported);
  Unmapped(iva, bytes / 2);
  (void)cuMemRelease(exported);
  close(fd);
  std::printf("vmm_free_end=%zu\n", FreeNow());
  return 0;
}

// The driver's v1 entry points (32-bit sizes and pointers), reached `how`: "procaddr" asks
// cuGetProcAddress_v2 for "cuMemAlloc" etc. with cudaVersion 3000 (before the v2 ABI), "dlsym"
// looks up "cuMemAlloc" in a dlopen'ed libcuda.so.1. 16 MiB pieces until refused (at most 32).
int Legacy(const std::string& how) {
  using Alloc1 = CUresult (*)(unsigned int*, unsigned int);
  using Free1 = CUresult (*)(unsigned int);
  using Info1 = CUresult (*)(unsigned int*, unsigned int*);
  using Total1 = CUresult (*)(unsigned int*, CUdevice);
  Alloc1 alloc = nullptr;
  Free1 free_fn = nullptr;
  Info1 info = nullptr;
  Total1 total_mem = nullptr;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return Fail("dlopen", CUDA_ERROR_NOT_FOUND);
  auto by_name = [&](const char* name) -> void* {
    if (how == "dlsym") return dlsym(h, name);
    auto get = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(h, "cuGetProcAddress_v2"));
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get == nullptr || get(name, &fn, 3000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS) {
      return nullptr;
    }
    return fn;
  };
  alloc = reinterpret_cast<Alloc1>(by_name("cuMemAlloc"));
  free_fn = reinterpret_cast<Free1>(by_name("cuMemFree"));
  info = reinterpret_cast<Info1>(by_name("cuMemGetInfo"));
  total_mem = reinterpret_cast<Total1>(by_name("cuDeviceTotalMem"));
  std::printf("legacy_alloc_fn=%s\nlegacy_free_fn=%s\nlegacy_info_fn=%s\n",
              WhereIs(reinterpret_cast<void*>(alloc)).c_str(),
              WhereIs(reinterpret_cast<void*>(free_fn)).c_str(),
              WhereIs(reinterpret_cast<void*>(info)).c_str());
  if (alloc == nullptr || free_fn == nullptr || info == nullptr || total_mem == nullptr) {
    return Fail("lookup", CUDA_ERROR_NOT_FOUND);
  }
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
  std::vector<unsigned int> ptrs;
  CUresult last = CUDA_SUCCESS;
  for (int i = 0; i < 32; ++i) {
    unsigned int p = 0;
    last = alloc(&p, 16 * kMiB);
    if (last != CUDA_SUCCESS) break;
    ptrs.push_back(p);
    if (i == 0) {  // the memory is usable at the 32-bit address the call returned
      const unsigned int sent = 0x600df00d;
      unsigned int back = 0;
      const bool ok = cuMemcpyHtoD(p, &sent, sizeof sent) == CUDA_SUCCESS &&
                      cuMemcpyDtoH(&back, p, sizeof back) == CUDA_SUCCESS && back == sent;
      std::printf("legacy_roundtrip=%d\n", ok ? 1 : 0);
    }
  }
  unsigned int f = 0, t = 0, device_total = 0;
  (void)info(&f, &t);
  (void)total_mem(&device_total, 0);
  std::printf("legacy_allocations=%zu\nlegacy_refusal=%d\nlegacy_free=%u\nlegacy_total=%u\n"
              "legacy_device_total=%u\nfree_v2_while_held=%zu\n",
              ptrs.size(), static_cast<int>(last), f, t, device_total, FreeNow());
  CUresult freed = CUDA_SUCCESS;
  for (unsigned int p : ptrs) {
    if (CUresult r = free_fn(p); r != CUDA_SUCCESS) freed = r;
  }
  std::printf("legacy_free_result=%d\nfree_v2_end=%zu\n", static_cast<int>(freed), FreeNow());
  return 0;
}

}  // namespace

int Accounting(const std::string& what, const std::string& arg) {
  if (what == "async-frees") return AsyncFrees(arg == "threshold");
  if (what == "beyond-device") return BeyondDevice(arg.empty() ? 256 : std::stoul(arg));
  if (what == "vmm-idiom") return VmmIdiom(arg.empty() ? 64 : std::stoul(arg), 12);
  if (what == "legacy") return Legacy(arg);
  return Fail("accounting-mode", CUDA_ERROR_INVALID_VALUE);
}

}  // namespace gshare::probe
