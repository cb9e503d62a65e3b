// Bootstrap hooks: cuInit, cuGetProcAddress(_v2) and dlsym — how every caller (linked by name,
// dlopen + dlsym, or cudart's cuGetProcAddress_v2) ends up at the shim's hooks.
#include <dlfcn.h>

#include <cstring>
#include <string_view>

#include "hooks/export.h"
#include "runtime/next_symbol.h"
#include "runtime/runtime.h"
#include "runtime/symbols.h"

namespace gshare::preload {
namespace {

// The hook to hand out instead of `real_fn`, found for cuGetProcAddress(symbol, version, flags).
void* SubstituteProc(const char* symbol, int cuda_version, cuuint64_t flags, void* real_fn) {
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  if (const DriverVariant* v = SelectVariant(symbol, cuda_version, per_thread); v != nullptr) {
    return v->hooked ? HookedExport(v->export_name) : real_fn;
  }
  void* exact = HookedExport(symbol);  // a caller asking for a versioned name directly
  return exact != nullptr ? exact : real_fn;
}

GSHARE_NO_SANITIZE void* DlsymHook(void* handle, const char* name, const void* caller) {
  if (name != nullptr && name[0] == 'c' && name[1] == 'u' && !Runtime::InitialisingOnThisThread()) {
    if (void* hook = HookedExport(name); hook != nullptr) {
      const Runtime& rt = Runtime::Get();
      const bool driver_lookup = handle == RTLD_DEFAULT || handle == RTLD_NEXT ||
                                 IsDriverHandle(rt.real(), handle);
      // Hand out the hook only for symbols the real driver has, so absence stays visible.
      if (driver_lookup && rt.real().Resolve(name) != nullptr) return hook;
    }
  }
  // glibc would search after libgshare.so (the object calling it now), not after the caller.
  if (handle == RTLD_NEXT) return NextDefinitionAfter(caller, name);
  return RealDlsym()(handle, name);
}

}  // namespace
}  // namespace gshare::preload

using gshare::preload::Runtime;

extern "C" {

GSHARE_EXPORT CUresult cuInit(unsigned int Flags) { return Runtime::Get().Init(Flags); }

GSHARE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                           cuuint64_t flags,
                                           CUdriverProcAddressQueryResult* symbolStatus) {
  const Runtime& rt = Runtime::Get();
  if (rt.real().cuGetProcAddress_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = rt.real().cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (r == CUDA_SUCCESS && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
    *pfn = gshare::preload::SubstituteProc(symbol, cudaVersion, flags, *pfn);
  }
  return r;
}

GSHARE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                        cuuint64_t flags) {
  const Runtime& rt = Runtime::Get();
  CUresult r = CUDA_ERROR_NOT_INITIALIZED;
  if (rt.real().cuGetProcAddress != nullptr) {
    r = rt.real().cuGetProcAddress(symbol, pfn, cudaVersion, flags);
  } else if (rt.real().cuGetProcAddress_v2 != nullptr) {
    r = rt.real().cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
  }
  if (r == CUDA_SUCCESS && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
    *pfn = gshare::preload::SubstituteProc(symbol, cudaVersion, flags, *pfn);
  }
  return r;
}

// dlsym, exported under both glibc symbol versions: GLIBC_2.34 (dlsym in libc) and GLIBC_2.2.5
// (programs linked against the older libdl). The version script defines both nodes.
GSHARE_EXPORT GSHARE_NO_SANITIZE void* gshare_dlsym_v234(void* handle, const char* name) {
  return gshare::preload::DlsymHook(handle, name, __builtin_return_address(0));
}
GSHARE_EXPORT GSHARE_NO_SANITIZE void* gshare_dlsym_v225(void* handle, const char* name) {
  return gshare::preload::DlsymHook(handle, name, __builtin_return_address(0));
}
__asm__(".symver gshare_dlsym_v234, dlsym@@GLIBC_2.34");
__asm__(".symver gshare_dlsym_v225, dlsym@GLIBC_2.2.5");

}  // extern "C"
