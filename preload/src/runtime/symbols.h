// Lookup in the generated hook table: which exported names the shim hooks (the dlsym map) and
// which variant of a base name a cuGetProcAddress caller gets for its cudaVersion and flags
// (the cuGetProcAddress map). Both come from preload/gen/hooks.txt through gen_hooks.py.
//
// Thread-safety: pure lookups over constant tables.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gshare::preload {

enum class StreamKind : uint8_t { kNone, kPtds, kPtsz };

// One ABI variant of a driver entry point whose base name has at least one hooked variant.
struct DriverVariant {
  const char* base;         // "cuMemcpyHtoDAsync"
  int version;              // ABI version from cudaTypedefs.h (PFN_..._v3020 -> 3020)
  StreamKind kind;          // per-thread-stream form or not
  const char* export_name;  // "cuMemcpyHtoDAsync_v2"
  bool hooked;              // the shim defines this exact export
};

// Every variant of every hooked base, sorted by (base, kind, version).
std::span<const DriverVariant> HookedBaseVariants();

// True when the shim defines (and exports) the driver symbol `name`.
bool IsHookedExport(std::string_view name);

// Number of hooked exports, and the i-th name (sorted), for tests and docs.
size_t HookedExportCount();
const char* HookedExportName(size_t i);

// The shim's own function for the exported name `name`, or null when it is not hooked.
// Defined in libgshare.so only (hooks/hook_addresses.cc), next to the hooks themselves.
void* HookedExport(std::string_view name);

// The variant the driver returns for cuGetProcAddress(base, cudaVersion, flags): the highest ABI
// version <= cuda_version, of the per-thread-stream form when `per_thread` and one exists.
// Null when `base` has no hooked variant or none is old enough.
const DriverVariant* SelectVariant(std::string_view base, int cuda_version, bool per_thread);

}  // namespace gshare::preload
