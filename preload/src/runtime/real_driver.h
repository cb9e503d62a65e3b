// The real CUDA driver behind the shim: the libcuda.so.1 the process would load (simcuda under
// the tests, NVIDIA's on a GPU host; GSHARE_REAL_LIBCUDA overrides), opened with dlopen and
// checked not to be libgshare.so itself. Holds one function pointer per hooked export (the
// generated GSHARE_HOOKED_EXPORTS list) and resolves anything else on demand.
//
// Thread-safety: a loaded RealDriver is immutable; share it freely.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

#include "hook_table.h"

namespace gshare::preload {

using DlsymFn = void* (*)(void* handle, const char* name);

// For the dlsym path only: a sanitizer runtime (ASan, TSan) resolves its interceptors with
// dlsym(RTLD_NEXT, ...) while it initialises, which reaches our interposed dlsym before the
// sanitizer's shadow memory exists; instrumented code there crashes (SIGSEGV in DlsymHook under
// an ASan build of the tests). No effect in normal builds.
#define GSHARE_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))

// glibc's own dlsym (found with dlvsym, never through our interposed dlsym).
// Never null after the first call; thread-safe.
GSHARE_NO_SANITIZE DlsymFn RealDlsym();

struct RealDriver {
  void* handle = nullptr;  // dlopen handle of the real libcuda.so.1
  std::string path;        // what was opened
#define GSHARE_REAL_MEMBER(name, pfn) pfn name = nullptr;
  GSHARE_HOOKED_EXPORTS(GSHARE_REAL_MEMBER)
#undef GSHARE_REAL_MEMBER

  // The real driver's symbol `name` (exact exported name), or null.
  [[nodiscard]] void* Resolve(const char* name) const;
};

// Opens the real driver (`path`, or "libcuda.so.1" when empty) and fills *out. Returns an error
// message (and leaves *out unusable) when it cannot be opened, resolves to this library, or
// lacks cuGetProcAddress_v2. Hooked exports the driver lacks stay null (the hook then reports
// CUDA_ERROR_NOT_SUPPORTED).
std::string LoadRealDriver(const std::string& path, RealDriver* out);

// True when `handle` (as passed to dlsym) names the real driver: its dlopen handle.
bool IsDriverHandle(const RealDriver& driver, void* handle);

}  // namespace gshare::preload
