// preload_probe's memory-api mode: the allocation APIs besides cuMemAlloc under the vGPU's
// quota: pointer queries on a sub-allocated block, pitch, stream-ordered allocations, pools, and
// the application's own VMM handles.
#include <cstdio>
#include <vector>

#include "driver.h"
#include "modes.h"

namespace gshare::probe {
namespace {

size_t FreeNow() {
  size_t f = 0, t = 0;
  (void)cuMemGetInfo(&f, &t);
  return f;
}

}  // namespace

int MemoryApi() {
  Api api;
  if (int failed = StartLinked(&api); failed != 0) return failed;
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
  const CUmemAllocationProp prop = PinnedOn(0);
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

}  // namespace gshare::probe
