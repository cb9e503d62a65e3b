// The generated entry-point tables (see gen/gen_entry_points.py): the cuGetProcAddress map and
// the CUresult names. Deliberately free of cuda.h so the generated stubs can be compiled.
#ifndef SIMCUDA_SRC_ENTRY_TABLE_H_
#define SIMCUDA_SRC_ENTRY_TABLE_H_

#include <cstddef>

namespace simcuda {

// One exported variant of a driver entry point. Rows are sorted by (base, per_thread, version).
struct ProcEntry {
  const char* base;     // name as asked for by cuGetProcAddress ("cuMemAlloc")
  int version;          // ABI version from cudaTypedefs.h (PFN_cuMemAlloc_v3020 -> 3020)
  int per_thread;       // 1 for the _ptds/_ptsz variant
  const char* symbol;   // exported symbol ("cuMemAlloc_v2")
  void* address;
};
extern const ProcEntry kProcEntries[];
extern const std::size_t kProcEntryCount;

struct ErrorEntry {
  int code;
  const char* name;  // "CUDA_ERROR_OUT_OF_MEMORY"
  const char* text;  // first sentence of cuda.h's description
};
extern const ErrorEntry kErrorEntries[];
extern const std::size_t kErrorEntryCount;

// Logs (once per name) that a program called an entry point simcuda does not implement and
// returns CUDA_ERROR_NOT_SUPPORTED (801). Thread-safe.
int ReportUnsupported(const char* name);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_ENTRY_TABLE_H_
