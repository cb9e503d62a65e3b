// Entry points: initialisation, versions, error names and entry-point lookup
// (cuInit, cuDriverGetVersion, cuGetErrorName/String, cuGetProcAddress(_v2), cuGetExportTable).
#include <cstring>
#include <string_view>

#include "api.h"
#include "driver.h"
#include "entry_table.h"

namespace {

const simcuda::ErrorEntry* FindError(CUresult code) {
  for (size_t i = 0; i < simcuda::kErrorEntryCount; ++i) {
    if (simcuda::kErrorEntries[i].code == static_cast<int>(code)) return &simcuda::kErrorEntries[i];
  }
  return nullptr;
}

// Picks the newest variant of `symbol` whose ABI version is <= cuda_version, preferring the
// per-thread-stream variant when asked for; fills `status` as the real driver does.
CUresult LookUp(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  std::string_view name(symbol);
  const simcuda::ProcEntry* best = nullptr;
  const simcuda::ProcEntry* best_pt = nullptr;
  bool exists = false;
  for (size_t i = 0; i < simcuda::kProcEntryCount; ++i) {
    const simcuda::ProcEntry& e = simcuda::kProcEntries[i];
    if (name != e.base) continue;
    exists = true;
    if (e.version > cuda_version) continue;
    const simcuda::ProcEntry*& slot = e.per_thread ? best_pt : best;
    if (slot == nullptr || e.version > slot->version) slot = &e;
  }
  if (per_thread && best_pt != nullptr) best = best_pt;
  if (best == nullptr) {
    if (status != nullptr) {
      *status = exists ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = best->address;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return simcuda::InitDriver();
}

CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const simcuda::ErrorEntry* e = FindError(error);
  if (e == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = e->name;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const simcuda::ErrorEntry* e = FindError(error);
  if (e == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = e->text;
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return LookUp(symbol, pfn, cudaVersion, flags, nullptr);
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  return LookUp(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  (void)pExportTableId;
  if (ppExportTable != nullptr) *ppExportTable = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // extern "C"
