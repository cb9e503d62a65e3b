// preload_probe's devices mode: the devices the program sees, reached one of the driver.h ways
// (count, ordinal 0 and 1, PCI bus id and peer queries), its context's device, where an
// allocation lives, a kernel and copies on it, and its own VMM memory on its device.
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

}  // namespace

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
  return 0;
}

}  // namespace gshare::probe
