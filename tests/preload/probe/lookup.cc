// preload_probe's lookup mode: where dlsym (on RTLD_DEFAULT, RTLD_NEXT, libcuda's and another
// library's handle) and cuGetProcAddress_v2 (versions, per-thread variants, unhooked and
// missing names) lead, as "library:symbol".
#include <dlfcn.h>

#include <cstdio>

#include "driver.h"
#include "modes.h"

namespace gshare::probe {

int Lookup() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  std::printf("default_alloc=%s\n", WhereIs(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2")).c_str());
  std::printf("next_alloc=%s\n", WhereIs(dlsym(RTLD_NEXT, "cuMemAlloc_v2")).c_str());
  std::printf("cuda_alloc=%s\n", WhereIs(dlsym(cuda, "cuMemAlloc_v2")).c_str());
  std::printf("libc_alloc=%s\n", WhereIs(dlsym(libc, "cuMemAlloc_v2")).c_str());
  std::printf("next_malloc=%s\n", WhereIs(dlsym(RTLD_NEXT, "malloc")).c_str());
  std::printf("cuda_unhooked=%s\n", WhereIs(dlsym(cuda, "cuCtxGetCurrent")).c_str());
  std::printf("cuda_export_table=%s\n", WhereIs(dlsym(cuda, "cuGetExportTable")).c_str());
  std::printf("cuda_missing=%s\n", WhereIs(dlsym(cuda, "cuNoSuchFunction")).c_str());
  auto get = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(cuda, "cuGetProcAddress_v2"));
  std::printf("get_proc=%s\n", WhereIs(reinterpret_cast<void*>(get)).c_str());
  auto ask = [&](const char* key, const char* name, int version, cuuint64_t flags) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult r = get(name, &fn, version, flags, &status);
    std::printf("%s=%d:%d:%s\n", key, static_cast<int>(r), static_cast<int>(status),
                WhereIs(fn).c_str());
  };
  ask("proc_get_proc", "cuGetProcAddress", 12000, 0);
  ask("proc_get_proc_11", "cuGetProcAddress", 11030, 0);
  ask("proc_alloc_12", "cuMemAlloc", 12000, 0);
  ask("proc_htod_ptds", "cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  ask("proc_export_table", "cuGetExportTable", 12000, 0);
  ask("proc_unhooked", "cuCtxGetCurrent", 12000, 0);
  ask("proc_missing", "cuNoSuchFunction", 12000, 0);
  return 0;
}

}  // namespace gshare::probe
