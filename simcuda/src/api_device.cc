// Entry points: devices (count, names, UUIDs, attributes, memory size, PCI bus ids).
#include <cstdio>
#include <cstring>

#include "api.h"
#include "driver.h"
#include "mps_client.h"

namespace {

const simcuda::DeviceInfo& Info(CUdevice dev) { return simcuda::Driver()->devices[static_cast<size_t>(dev)]; }

// The value of `attrib` for a device, or false if simcuda does not know it.
bool Attribute(CUdevice dev, const simcuda::DeviceInfo& info, CUdevice_attribute attrib, int* value) {
  const simcuda::DeviceSpec& s = info.spec;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *value = 1024; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *value = 65535; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 49152; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 233472; return true;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *value = 65536; return true;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *value = 2147483647; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *value = 65536; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *value = 65536; return true;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = s.clock_khz; return true;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *value = 2619000; return true;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = 5120; return true;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 52428800; return true;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *value = 512; return true;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: *value = 32; return true;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = s.sm_count; return true;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *value = CU_COMPUTEMODE_DEFAULT; return true;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = info.pci_bus; return true;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *value = 2; return true;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 32; return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = s.cc_major; return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = s.cc_minor; return true;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: *value = 1; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *value = 1024; return true;
    case CU_DEVICE_ATTRIBUTE_MPS_ENABLED: *value = simcuda::MpsServes(dev) ? 1 : 0; return true;
    case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: *value = 0; return true;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *value = -1; return true;
    default: return false;
  }
}

}  // namespace

extern "C" {

CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simcuda::DriverState* d = simcuda::Driver();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  *count = static_cast<int>(d->devices.size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(ordinal); r != CUDA_SUCCESS) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  std::snprintf(name, static_cast<size_t>(len), "%s", Info(dev).spec.name.c_str());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  *uuid = Info(dev).uuid;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  *bytes = simcuda::Driver()->registry->Capacity(dev);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  if (!Attribute(dev, Info(dev), attrib, pi)) {
    if (attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
    *pi = 0;  // known to cuda.h but not modelled: reported as unsupported/zero
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  *major = Info(dev).spec.cc_major;
  *minor = Info(dev).spec.cc_minor;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  std::snprintf(pciBusId, static_cast<size_t>(len), "00000000:%02X:00.0", Info(dev).pci_bus);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simcuda::DriverState* d = simcuda::Driver();
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  int n = std::sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &device, &function);
  if (n < 3) {
    domain = 0;
    n = std::sscanf(pciBusId, "%x:%x.%x", &bus, &device, &function);
    if (n < 2) return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < d->devices.size(); ++i) {
    if (domain == 0 && device == 0 && bus == static_cast<unsigned>(d->devices[i].pci_bus)) {
      *dev = static_cast<CUdevice>(i);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGetLuid(char* luid, unsigned int* deviceNodeMask, CUdevice dev) {
  (void)luid;
  (void)deviceNodeMask;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  if (CUresult r = simcuda::CheckDevice(peerDev); r != CUDA_SUCCESS) return r;
  *canAccessPeer = dev != peerDev ? 1 : 0;
  return CUDA_SUCCESS;
}

}  // extern "C"
