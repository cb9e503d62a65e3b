// preload_probe's devices mode: the devices the program sees, reached one of the driver.h ways
// (count, ordinal 0 and 1, PCI bus id and peer queries), its context's device, where an
// allocation lives, a kernel and copies on it, its own VMM memory on its device, and calls that
// name the device by a literal 0 (a CUdevice argument or a memory location) or name GPU 2.
#include <cstdio>
#include <vector>

#include "driver.h"
#include "modes.h"
#include "simcuda/kernels/ptx.h"

namespace gshare::probe {

namespace {

// Queues saxpy(alpha 2, x == y == p, n floats) on the legacy stream: p = 3 * p.
CUresult Triple(CUfunction saxpy, CUdeviceptr p, size_t n) {
  uint64_t count_param = n;
  float a = 2.0f;
  void* params[] = {&a, &p, &p, &count_param};
  return cuLaunchKernel(saxpy, static_cast<unsigned>((n + 255) / 256), 1, 1, 256, 1, 1, 0,
                        nullptr, params, nullptr);
}

// The program's own VMM memory with the device named by its ordinal 0 (as PyTorch's expandable
// segments do with cudart's device index): created, mapped and accessible on the program's
// device, where its kernel (`saxpy`, if loaded) reads it; then a device the program does not
// see (ordinal 2). Prints vmm, vmm_ok, vmm_ordinal, vmm_other.
void VmmOnItsDevice(const Api& api, CUfunction saxpy) {
  CUmemAllocationProp prop = PinnedOn(0);
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
  if (vmm == CUDA_SUCCESS && saxpy != nullptr) vmm = Triple(saxpy, va, vn);
  if (vmm == CUDA_SUCCESS) vmm = cuCtxSynchronize();
  if (vmm == CUDA_SUCCESS) vmm = cuMemcpyDtoH(vhost.data(), va, gran);
  int vmm_ordinal = -1;
  (void)api.pointer_attribute(&vmm_ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va);
  std::printf("vmm=%d\nvmm_ok=%d\nvmm_ordinal=%d\n", static_cast<int>(vmm),
              vmm == CUDA_SUCCESS && vhost[0] == 3.0f && vhost[vn - 1] == 3.0f ? 1 : 0, vmm_ordinal);
  if (va != 0) (void)cuMemUnmap(va, gran);
  if (handle != 0) (void)cuMemRelease(handle);
  if (va != 0) (void)cuMemAddressFree(va, gran);
  prop.location.id = 2;
  CUmemGenericAllocationHandle unseen = 0;
  const CUresult bad = cuMemCreate(&unseen, gran, &prop, 0);
  std::printf("vmm_other=%d\n", static_cast<int>(bad));
  if (bad == CUDA_SUCCESS) (void)cuMemRelease(unseen);
}

// Driver-API code naming its device by a literal 0 (and a GPU it does not see, 2), reached the
// way `api` was loaded: attributes, the primary context, the default pool, and a context created
// on device 0 with its allocation and kernel. Prints attr0, attr_sms0, attr2, primary0_same,
// default_pool0_same, ctx0, ctx0_device, ctx0_ptr_ordinal, ctx0_result_ok, ctx2.
void LiteralDevices(const Api& api, CUdevice dev, CUcontext primary) {
  int sms = -1, unseen = -1;
  std::printf("attr0=%d\n", static_cast<int>(api.device_attribute(
                                  &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0)));
  std::printf("attr_sms0=%d\n", sms);
  std::printf("attr2=%d\n", static_cast<int>(api.device_attribute(
                                  &unseen, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 2)));
  CUcontext retained = nullptr;
  const CUresult retain = api.primary_retain(&retained, 0);
  std::printf("primary0_same=%d\n", retain == CUDA_SUCCESS && retained == primary ? 1 : 0);
  if (retain == CUDA_SUCCESS) (void)cuDevicePrimaryCtxRelease(0);
  CUmemoryPool pool0 = nullptr, pool_dev = nullptr;
  const CUresult p0 = api.default_mem_pool(&pool0, 0);
  const CUresult pd = api.default_mem_pool(&pool_dev, dev);
  std::printf("default_pool0_same=%d\n",
              p0 == CUDA_SUCCESS && pd == CUDA_SUCCESS && pool0 == pool_dev ? 1 : 0);
  CUcontext own = nullptr;
  const CUresult created = api.ctx_create(&own, nullptr, 0, 0);  // current on this thread
  std::printf("ctx0=%d\n", static_cast<int>(created));
  if (created == CUDA_SUCCESS) {
    CUdevice own_device = -1;
    (void)cuCtxGetDevice(&own_device);
    std::printf("ctx0_device=%d\n", own_device);
    const size_t n = 1 << 16;
    CUdeviceptr p = 0;
    CUmodule module = nullptr;
    CUfunction saxpy = nullptr;
    std::vector<float> host(n, 1.0f);
    CUresult r = api.mem_alloc(&p, n * sizeof(float));
    int ordinal = -1;
    if (r == CUDA_SUCCESS) {
      (void)api.pointer_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
      r = cuMemcpyHtoD(p, host.data(), n * sizeof(float));
    }
    if (r == CUDA_SUCCESS) r = cuModuleLoadData(&module, basic_kernels_ptx);
    if (r == CUDA_SUCCESS) r = cuModuleGetFunction(&saxpy, module, "saxpy");
    if (r == CUDA_SUCCESS) r = Triple(saxpy, p, n);
    if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
    if (r == CUDA_SUCCESS) r = cuMemcpyDtoH(host.data(), p, n * sizeof(float));
    std::printf("ctx0_ptr_ordinal=%d\nctx0_result_ok=%d\n", ordinal,
                r == CUDA_SUCCESS && host[0] == 3.0f && host[n - 1] == 3.0f ? 1 : 0);
    if (p != 0) (void)api.mem_free(p);
    if (module != nullptr) (void)cuModuleUnload(module);
    (void)cuCtxDestroy(own);
    (void)api.ctx_set_current(primary);
  }
  CUcontext other = nullptr;
  const CUresult refused = api.ctx_create(&other, nullptr, 0, 2);
  std::printf("ctx2=%d\n", static_cast<int>(refused));
  if (refused == CUDA_SUCCESS) (void)cuCtxDestroy(other);
  (void)api.ctx_set_current(primary);
}

// Pools, advice and prefetches whose memory location names the device by ordinal 0 (and 2, a GPU
// the program does not see). Prints pool0, pool0_current, pool0_ptr_ordinal, pool2, advise0,
// advise2, advise_host, prefetch0, prefetch2, prefetch_sync, batch_hint2, batch3d_hint2,
// graph_alloc2, graph_node2.
void LiteralLocations(const Api& api, CUdevice dev) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr, current = nullptr, fallback = nullptr;
  const CUresult created = cuMemPoolCreate(&pool, &props);
  std::printf("pool0=%d\n", static_cast<int>(created));
  if (created == CUDA_SUCCESS) {
    // The pool is the device's: it can be the device's current pool (named by ordinal 0).
    const CUresult set = cuDeviceSetMemPool(0, pool);
    (void)cuDeviceGetMemPool(&current, dev);
    std::printf("pool0_current=%d\n", set == CUDA_SUCCESS && current == pool ? 1 : 0);
    CUdeviceptr p = 0;
    int ordinal = -1;
    if (cuMemAllocFromPoolAsync(&p, 1 << 20, pool, nullptr) == CUDA_SUCCESS) {
      (void)api.pointer_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
      (void)cuMemFreeAsync(p, nullptr);
      (void)cuCtxSynchronize();
    }
    std::printf("pool0_ptr_ordinal=%d\n", ordinal);
    if (cuDeviceGetDefaultMemPool(&fallback, dev) == CUDA_SUCCESS) {
      (void)cuDeviceSetMemPool(dev, fallback);
    }
    (void)cuMemPoolDestroy(pool);
  }
  props.location.id = 2;
  CUmemoryPool unseen = nullptr;
  const CUresult refused = cuMemPoolCreate(&unseen, &props);
  std::printf("pool2=%d\n", static_cast<int>(refused));
  if (refused == CUDA_SUCCESS) (void)cuMemPoolDestroy(unseen);

  const size_t bytes = 1 << 20;
  CUdeviceptr managed = 0;
  if (cuMemAllocManaged(&managed, bytes, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS) return;
  CUmemLocation loc{};
  loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
  loc.id = 0;
  const auto advise = [&](CUmemLocation where) {
    return static_cast<int>(cuMemAdvise(managed, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, where));
  };
  std::printf("advise0=%d\n", advise(loc));
  std::printf("prefetch0=%d\n", static_cast<int>(cuMemPrefetchAsync(managed, bytes, loc, 0, nullptr)));
  std::printf("prefetch_sync=%d\n", static_cast<int>(cuCtxSynchronize()));
  loc.id = 2;
  std::printf("advise2=%d\n", advise(loc));
  std::printf("prefetch2=%d\n", static_cast<int>(cuMemPrefetchAsync(managed, bytes, loc, 0, nullptr)));
  loc.type = CU_MEM_LOCATION_TYPE_HOST;
  std::printf("advise_host=%d\n", advise(loc));
  // Batch copies whose location hint names GPU 2 (simcuda does not implement batch copies, so
  // only the shim's refusal, before the driver, is observable).
  CUmemcpyAttributes attrs{};
  attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  attrs.srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
  attrs.srcLocHint.id = 2;
  attrs.dstLocHint.type = CU_MEM_LOCATION_TYPE_HOST;
  CUdeviceptr dst = managed, src = managed + bytes / 2;
  size_t size = bytes / 2, attrs_idx = 0;
  std::printf("batch_hint2=%d\n", static_cast<int>(cuMemcpyBatchAsync(
                                       &dst, &src, &size, 1, &attrs, &attrs_idx, 1, nullptr)));
  CUDA_MEMCPY3D_BATCH_OP op{};
  op.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op.src.op.ptr.ptr = src;
  op.src.op.ptr.locHint = attrs.srcLocHint;
  op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op.dst.op.ptr.ptr = dst;
  op.dst.op.ptr.locHint = attrs.dstLocHint;
  op.extent = {size, 1, 1};
  op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  std::printf("batch3d_hint2=%d\n", static_cast<int>(cuMemcpy3DBatchAsync(1, &op, 0, nullptr)));
  (void)cuMemFree(managed);
  // Graph memory-allocation nodes whose pool names GPU 2 (simcuda has no graph allocation nodes:
  // only the shim's refusal is observable; no graph is needed for it).
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
  alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  alloc.poolProps.location.id = 2;
  alloc.bytesize = bytes;
  CUgraphNode node = nullptr;
  std::printf("graph_alloc2=%d\n", static_cast<int>(cuGraphAddMemAllocNode(&node, nullptr, nullptr,
                                                                             0, &alloc)));
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  params.alloc.poolProps = alloc.poolProps;
  params.alloc.bytesize = bytes;
  std::printf("graph_node2=%d\n",
              static_cast<int>(cuGraphAddNode(&node, nullptr, nullptr, nullptr, 0, &params)));
}

}  // namespace

int Devices(const std::string& how) {
  Api api;
  if (!LoadBy(how, &api) || api.device_get_count == nullptr || api.by_pci_bus_id == nullptr ||
      api.can_access_peer == nullptr || api.p2p_attribute == nullptr ||
      api.pointer_attribute == nullptr || api.ctx_create == nullptr ||
      api.device_attribute == nullptr || api.default_mem_pool == nullptr) {
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
  // Another GPU: under the shim ordinal 0 always names the program's own device, so GPU 0 cannot
  // be named from GPU 1 (GPU 2 does not exist; the shim refuses it before the driver could).
  const CUdevice other = dev == 0 ? 1 : dev + 1;
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
  CUfunction saxpy = nullptr;
  CUresult launched = cuModuleLoadData(&module, basic_kernels_ptx);
  if (launched == CUDA_SUCCESS) launched = cuModuleGetFunction(&saxpy, module, "saxpy");
  if (launched == CUDA_SUCCESS) launched = Triple(saxpy, p, n);
  const CUresult synced = cuCtxSynchronize();
  std::printf("kernel=%d\nsync=%d\n", static_cast<int>(launched), static_cast<int>(synced));
  std::printf("dtoh=%d\n", static_cast<int>(cuMemcpyDtoH(host.data(), p, n * sizeof(float))));
  std::printf("result_ok=%d\n", host[0] == 4.5f && host[n - 1] == 4.5f ? 1 : 0);
  (void)api.mem_free(p);
  VmmOnItsDevice(api, saxpy);
  CUcontext primary = nullptr;
  (void)cuCtxGetCurrent(&primary);
  LiteralDevices(api, dev, primary);
  LiteralLocations(api, dev);
  return 0;
}

}  // namespace gshare::probe
