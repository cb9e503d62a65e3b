// Locating and opening the real driver (see real_driver.h).
#include "runtime/real_driver.h"

#include <dlfcn.h>

#include <cstddef>

namespace gshare::preload {
namespace {

// Any address inside libgshare.so, to recognise ourselves.
void OwnAnchor() {}

}  // namespace

// No std::atomic and no std:: helpers here: GCC does not inline instrumented code into a
// GSHARE_NO_SANITIZE function, and an out-of-line instrumented call crashes while a sanitizer
// runtime initialises (its shadow memory does not exist yet).
GSHARE_NO_SANITIZE DlsymFn RealDlsym() {
  static DlsymFn cached = nullptr;
  DlsymFn fn = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
  if (fn != nullptr) return fn;
  // glibc >= 2.34 keeps dlsym in libc under GLIBC_2.34; older ones under GLIBC_2.2.5.
  static const char* const kVersions[] = {"GLIBC_2.34", "GLIBC_2.2.5"};
  for (size_t i = 0; i < sizeof(kVersions) / sizeof(kVersions[0]) && fn == nullptr; ++i) {
    fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", kVersions[i]));
  }
  __atomic_store_n(&cached, fn, __ATOMIC_RELEASE);
  return fn;
}

void* RealDriver::Resolve(const char* name) const {
  return handle == nullptr ? nullptr : RealDlsym()(handle, name);
}

std::string LoadRealDriver(const std::string& path, RealDriver* out) {
  const std::string target = path.empty() ? "libcuda.so.1" : path;
  if (RealDlsym() == nullptr) return "cannot find glibc's dlsym with dlvsym";
  void* handle = dlopen(target.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return "cannot open the real CUDA driver '" + target + "': " + (why ? why : "unknown error");
  }
  void* init = RealDlsym()(handle, "cuInit");
  Dl_info self{};
  Dl_info theirs{};
  if (init == nullptr) return "'" + target + "' has no cuInit: not a CUDA driver";
  if (dladdr(reinterpret_cast<void*>(&OwnAnchor), &self) != 0 && dladdr(init, &theirs) != 0 &&
      self.dli_fbase == theirs.dli_fbase) {
    return "'" + target + "' resolves to libgshare.so itself; set GSHARE_REAL_LIBCUDA";
  }
  out->handle = handle;
  out->path = theirs.dli_fname != nullptr ? theirs.dli_fname : target;
#define GSHARE_RESOLVE_MEMBER(name, pfn) \
  out->name = reinterpret_cast<pfn>(RealDlsym()(handle, #name));
  GSHARE_HOOKED_EXPORTS(GSHARE_RESOLVE_MEMBER)
#undef GSHARE_RESOLVE_MEMBER
  if (out->cuGetProcAddress_v2 == nullptr) {
    return "'" + out->path + "' lacks cuGetProcAddress_v2 (a CUDA 12+ driver is required)";
  }
  return {};
}

bool IsDriverHandle(const RealDriver& driver, void* handle) {
  return handle != nullptr && handle == driver.handle;
}

}  // namespace gshare::preload
