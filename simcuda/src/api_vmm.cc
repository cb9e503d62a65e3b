// Entry points: virtual memory management (see vmm.h for the model).
#include "api.h"
#include "driver.h"
#include "vmm.h"

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  *granularity = simcuda::kVmmGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return simcuda::VmmAddressReserve(ptr, size, alignment, addr);
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  return simcuda::VmmAddressFree(ptr, size);
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  simcuda::WaitIfLocked();
  return simcuda::VmmCreate(handle, size, prop);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  return simcuda::VmmRelease(handle);
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  simcuda::WaitIfLocked();
  return simcuda::VmmMap(ptr, size, offset, handle);
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  simcuda::WaitIfLocked();
  return simcuda::VmmUnmap(ptr, size);
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  return simcuda::VmmSetAccess(ptr, size, desc, count);
}

CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  return simcuda::VmmGetAccess(flags, location, ptr);
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  return simcuda::VmmRetainHandle(handle, addr);
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  return simcuda::VmmGetProperties(prop, handle);
}

CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType, unsigned long long flags) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return simcuda::VmmExport(shareableHandle, handle, handleType);
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                        CUmemAllocationHandleType shHandleType) {
  if (CUresult r = simcuda::CheckInit(); r != CUDA_SUCCESS) return r;
  return simcuda::VmmImport(handle, osHandle, shHandleType);
}

}  // extern "C"
