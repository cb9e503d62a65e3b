// Entry points: pointer attributes (cuPointerGetAttribute(s), cuPointerSetAttribute).
#include <cstring>

#include "allocations.h"
#include "api.h"
#include "driver.h"

namespace {

using simcuda::Allocation;
using simcuda::MemKind;

template <typename T>
void Put(void* data, T value) {
  std::memcpy(data, &value, sizeof value);
}

bool IsDevice(MemKind k) { return k == MemKind::kDevice || k == MemKind::kManaged || k == MemKind::kVmm; }

// Writes attribute `attr` of `a` (nullptr: not a CUDA pointer) into `data`.
CUresult Attribute(const Allocation* a, CUpointer_attribute attr, void* data, CUdeviceptr ptr) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<CUcontext>(data, a->ctx);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<unsigned>(data, IsDevice(a->kind) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<CUdeviceptr>(data, ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (a == nullptr || (a->kind != MemKind::kHost && a->kind != MemKind::kHostRegistered &&
                           a->kind != MemKind::kManaged)) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      Put<void*>(data, reinterpret_cast<void*>(ptr));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      Put<bool>(data, true);
      return a == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<unsigned long long>(data, a->buffer_id);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<bool>(data, a->kind == MemKind::kManaged);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<int>(data, a->device);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<bool>(data, false);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<CUdeviceptr>(data, a->base);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<size_t>(data, a->size);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      Put<bool>(data, a != nullptr);
      return a == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<unsigned long long>(data, 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<bool>(data, false);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<unsigned>(data, a->kind == MemKind::kVmm ? a->flags
                                                   : static_cast<unsigned>(CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<CUmemoryPool>(data, a->pool);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      Put<unsigned long long>(data, a->buffer_id);
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

extern "C" {

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  std::optional<Allocation> a = simcuda::AllocationTable::Instance().Find(ptr);
  return Attribute(a ? &*a : nullptr, attribute, data, ptr);
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes, void** data,
                                CUdeviceptr ptr) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (numAttributes == 0 || attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::optional<Allocation> a = simcuda::AllocationTable::Instance().Find(ptr);
  for (unsigned i = 0; i < numAttributes; ++i) {
    if (data[i] == nullptr) continue;
    if (!a) {
      // Not a CUDA pointer: default values and success (unlike cuPointerGetAttribute).
      switch (attributes[i]) {
        case CU_POINTER_ATTRIBUTE_CONTEXT: Put<CUcontext>(data[i], nullptr); break;
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: Put<unsigned>(data[i], 0); break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: Put<int>(data[i], -2); break;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: Put<CUdeviceptr>(data[i], 0); break;
        case CU_POINTER_ATTRIBUTE_HOST_POINTER: Put<void*>(data[i], nullptr); break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: Put<size_t>(data[i], 0); break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID: Put<unsigned long long>(data[i], 0); break;
        default: Put<bool>(data[i], false); break;
      }
      continue;
    }
    CUresult r = Attribute(&*a, attributes[i], data[i], ptr);
    if (r != CUDA_SUCCESS && attributes[i] != CU_POINTER_ATTRIBUTE_HOST_POINTER) return r;
    if (r != CUDA_SUCCESS) Put<void*>(data[i], nullptr);
  }
  return CUDA_SUCCESS;
}

CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (value == nullptr || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) return CUDA_ERROR_INVALID_VALUE;
  return simcuda::AllocationTable::Instance().Find(ptr) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
