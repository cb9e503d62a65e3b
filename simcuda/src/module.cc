// Modules, libraries, functions and kernels (see module.h).
#include "module.h"

#include <fcntl.h>
#include <unistd.h>

#include "context.h"
#include "handle_set.h"
#include "kernel_registry.h"
#include "log.h"
#include "module_image.h"

namespace simcuda {
namespace {

inline constexpr uint32_t kModuleMagic = 0x4d4f4431;    // "MOD1"
inline constexpr uint32_t kFunctionMagic = 0x46554e31;  // "FUN1"
inline constexpr uint32_t kLibraryMagic = 0x4c494231;   // "LIB1"
inline constexpr uint32_t kKernelMagic = 0x4b524e31;    // "KRN1"

CUresult Scan(const void* image, size_t size, std::vector<std::string>* entries) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::string error;
  std::optional<ModuleImageInfo> info =
      size == 0 ? ScanModuleImage(image, &error) : ScanModuleImageSized(image, size, &error);
  if (!info) {
    Log(LogLevel::kError, "cannot load module image: %s", error.c_str());
    return CUDA_ERROR_INVALID_IMAGE;
  }
  *entries = std::move(info->entries);
  return CUDA_SUCCESS;
}

bool HasEntry(const std::vector<std::string>& entries, const std::string& name) {
  for (const std::string& e : entries) {
    if (e == name) return true;
  }
  return false;
}

// The plugin descriptor for `name`, logging why there is none.
const SimcudaKernelDesc* Bind(const std::string& name) {
  const SimcudaKernelDesc* desc = FindKernel(name);
  if (desc == nullptr) {
    std::string why = KernelRegistryError();
    Log(LogLevel::kError, "no CPU implementation of kernel '%s' in the kernel plugins%s%s", name.c_str(),
        why.empty() ? "" : ": ", why.c_str());
  }
  return desc;
}

}  // namespace

CUresult LoadModule(CUctx_st* ctx, const void* image, size_t size, CUmod_st** out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<std::string> entries;
  if (CUresult r = Scan(image, size, &entries); r != CUDA_SUCCESS) return r;
  auto* mod = new CUmod_st();
  mod->magic = kModuleMagic;
  mod->ctx = ctx;
  mod->library = nullptr;
  mod->entries = std::move(entries);
  HandleSet<CUmod_st>::Instance().Add(mod);
  *out = mod;
  return CUDA_SUCCESS;
}

CUresult UnloadModule(CUmod_st* mod) {
  if (!HandleSet<CUmod_st>::Instance().Remove(mod)) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& [name, f] : mod->functions) {
    HandleSet<CUfunc_st>::Instance().Remove(f);
    delete f;
  }
  mod->magic = 0;
  delete mod;
  return CUDA_SUCCESS;
}

CUresult GetFunction(CUmod_st* mod, const char* name, CUfunc_st** out) {
  if (out == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!IsLiveModule(mod)) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(mod->mu);
  auto it = mod->functions.find(name);
  if (it != mod->functions.end()) {
    *out = it->second;
    return CUDA_SUCCESS;
  }
  if (!HasEntry(mod->entries, name)) return CUDA_ERROR_NOT_FOUND;
  const SimcudaKernelDesc* desc = Bind(name);
  if (desc == nullptr) return CUDA_ERROR_NOT_FOUND;
  auto* f = new CUfunc_st{kFunctionMagic, mod, name, desc};
  mod->functions[name] = f;
  HandleSet<CUfunc_st>::Instance().Add(f);
  *out = f;
  return CUDA_SUCCESS;
}

bool IsLiveModule(CUmod_st* mod) { return HandleSet<CUmod_st>::Instance().Contains(mod); }
bool IsLiveFunction(CUfunc_st* f) { return HandleSet<CUfunc_st>::Instance().Contains(f); }

CUresult LoadLibrary(const void* image, size_t size, CUlib_st** out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<std::string> entries;
  if (CUresult r = Scan(image, size, &entries); r != CUDA_SUCCESS) return r;
  auto* lib = new CUlib_st();
  lib->magic = kLibraryMagic;
  lib->entries = std::move(entries);
  HandleSet<CUlib_st>::Instance().Add(lib);
  *out = lib;
  return CUDA_SUCCESS;
}

CUresult UnloadLibrary(CUlib_st* lib) {
  if (!HandleSet<CUlib_st>::Instance().Remove(lib)) return CUDA_ERROR_INVALID_HANDLE;
  {
    std::lock_guard<std::mutex> lock(lib->mu);
    for (auto& [ctx, mod] : lib->modules) UnloadModule(mod);
    for (auto& [name, k] : lib->kernels) {
      HandleSet<CUkern_st>::Instance().Remove(k);
      delete k;
    }
    lib->magic = 0;
  }
  delete lib;
  return CUDA_SUCCESS;
}

CUresult GetKernel(CUlib_st* lib, const char* name, CUkern_st** out) {
  if (out == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!IsLiveLibrary(lib)) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(lib->mu);
  auto it = lib->kernels.find(name);
  if (it != lib->kernels.end()) {
    *out = it->second;
    return CUDA_SUCCESS;
  }
  if (!HasEntry(lib->entries, name)) return CUDA_ERROR_NOT_FOUND;
  const SimcudaKernelDesc* desc = Bind(name);
  if (desc == nullptr) return CUDA_ERROR_NOT_FOUND;
  auto* k = new CUkern_st{kKernelMagic, lib, name, desc};
  lib->kernels[name] = k;
  HandleSet<CUkern_st>::Instance().Add(k);
  *out = k;
  return CUDA_SUCCESS;
}

CUresult LibraryModule(CUlib_st* lib, CUctx_st* ctx, CUmod_st** out) {
  if (!IsLiveLibrary(lib)) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(lib->mu);
  auto it = lib->modules.find(ctx);
  if (it != lib->modules.end() && IsLiveModule(it->second)) {
    *out = it->second;
    return CUDA_SUCCESS;
  }
  auto* mod = new CUmod_st();
  mod->magic = kModuleMagic;
  mod->ctx = ctx;
  mod->library = lib;
  mod->entries = lib->entries;
  HandleSet<CUmod_st>::Instance().Add(mod);
  lib->modules[ctx] = mod;
  *out = mod;
  return CUDA_SUCCESS;
}

bool IsLiveLibrary(CUlib_st* lib) { return HandleSet<CUlib_st>::Instance().Contains(lib); }
bool IsLiveKernel(CUkern_st* k) { return HandleSet<CUkern_st>::Instance().Contains(k); }

CUresult ResolveFunction(CUfunction f, CUctx_st* ctx, CUfunc_st** out) {
  if (IsLiveFunction(f)) {
    *out = f;
    return CUDA_SUCCESS;
  }
  auto* k = reinterpret_cast<CUkern_st*>(f);
  if (!IsLiveKernel(k)) return CUDA_ERROR_INVALID_HANDLE;
  CUmod_st* mod = nullptr;
  if (CUresult r = LibraryModule(k->library, ctx, &mod); r != CUDA_SUCCESS) return r;
  return GetFunction(mod, k->name.c_str(), out);
}

bool ReadFile(const char* path, std::vector<unsigned char>* out) {
  if (path == nullptr) return false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  unsigned char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out->insert(out->end(), buf, buf + n);
  close(fd);
  if (n < 0) return false;
  out->push_back(0);  // PTX text must be NUL-terminated
  return true;
}

// Context teardown: unloads the modules made in `ctx`.
void ReleaseContextModules(CUctx_st* ctx) {
  for (CUmod_st* mod : HandleSet<CUmod_st>::Instance().Snapshot()) {
    if (mod->ctx != ctx) continue;
    if (mod->library != nullptr) {
      std::lock_guard<std::mutex> lock(mod->library->mu);
      mod->library->modules.erase(ctx);
    }
    UnloadModule(mod);
  }
}

}  // namespace simcuda
