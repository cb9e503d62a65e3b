// Virtual memory management (cuMemAddressReserve / cuMemCreate / cuMemMap / cuMemSetAccess ...).
//
// Reserved ranges are PROT_NONE anonymous mappings, so touching a reserved but unmapped address
// faults (SIGSEGV), as on a GPU. Physical memory ("handles") is a memfd; cuMemMap maps it with
// MAP_FIXED at the reserved address, PROT_NONE until cuMemSetAccess grants access (access resets
// on every new mapping); cuMemUnmap puts the PROT_NONE reservation back. Device capacity is
// accounted from cuMemCreate until the last reference (handle or mapping) goes; released memfds
// go to a per-process pool of already-populated memory that the next cuMemCreate of the same
// size reuses (so swap benchmarks do not measure page faults). Recycled memory has undefined
// contents: simcuda writes a poison word at the start of every 4 KiB page when it maps it.
// Thread-safety: every function is thread-safe (one mutex).
#ifndef SIMCUDA_SRC_VMM_H_
#define SIMCUDA_SRC_VMM_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "api.h"

namespace simcuda {

inline constexpr size_t kVmmGranularity = 2u << 20;
inline constexpr uint64_t kVmmPoisonWord = 0xdeadd00ddeadd00dull;

CUresult VmmAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr);
CUresult VmmAddressFree(CUdeviceptr ptr, size_t size);
CUresult VmmCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop);
CUresult VmmRelease(CUmemGenericAllocationHandle handle);
CUresult VmmMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle);
CUresult VmmUnmap(CUdeviceptr ptr, size_t size);
CUresult VmmSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count);
CUresult VmmGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr);
CUresult VmmRetainHandle(CUmemGenericAllocationHandle* handle, void* addr);
CUresult VmmGetProperties(CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle);
CUresult VmmExport(void* shareable, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType type);
CUresult VmmImport(CUmemGenericAllocationHandle* handle, void* os_handle, CUmemAllocationHandleType type);

// Process checkpoint support. VmmCheckpoint copies the contents of every physical allocation
// into host memory, drops the memfds (releasing device capacity) and leaves the mapped ranges
// PROT_NONE; handles stay valid. VmmRestore creates new physical memory on
// device_map[old device] (accounting there), copies the contents back and re-maps every mapping
// at the same address with the same access. Returns the bytes moved, or -1 on failure.
int64_t VmmCheckpoint();
int64_t VmmRestore(const std::vector<int>& device_map);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_VMM_H_
