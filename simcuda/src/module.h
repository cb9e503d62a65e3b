// Modules, libraries, functions and kernels. A module image is scanned for entry names
// (module_image.h); a function binds an entry name to the kernel plugin descriptor of the same
// name (kernel_registry.h). A library (cuLibrary*) is context-independent: it keeps the scanned
// image and makes one module per context on demand. Thread-safety: all functions are
// thread-safe; handles are validated against live sets.
#ifndef SIMCUDA_SRC_MODULE_H_
#define SIMCUDA_SRC_MODULE_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "api.h"
#include "simcuda/kernel_plugin.h"

struct CUmod_st {
  uint32_t magic;
  CUctx_st* ctx;
  CUlib_st* library;  // the library it was made for, or null
  std::vector<std::string> entries;
  std::mutex mu;
  std::map<std::string, CUfunc_st*> functions;  // guarded by mu
};

struct CUfunc_st {
  uint32_t magic;
  CUmod_st* module;
  std::string name;
  const SimcudaKernelDesc* desc;
};

struct CUlib_st {
  uint32_t magic;
  std::vector<std::string> entries;
  std::mutex mu;
  std::map<CUctx_st*, CUmod_st*> modules;     // guarded by mu
  std::map<std::string, CUkern_st*> kernels;  // guarded by mu
};

struct CUkern_st {
  uint32_t magic;
  CUlib_st* library;
  std::string name;
  const SimcudaKernelDesc* desc;
};

namespace simcuda {

// Scans `image` (size unknown: 0) and creates a module in `ctx`.
CUresult LoadModule(CUctx_st* ctx, const void* image, size_t size, CUmod_st** out);
CUresult UnloadModule(CUmod_st* mod);
CUresult GetFunction(CUmod_st* mod, const char* name, CUfunc_st** out);
bool IsLiveModule(CUmod_st* mod);
bool IsLiveFunction(CUfunc_st* f);

CUresult LoadLibrary(const void* image, size_t size, CUlib_st** out);
CUresult UnloadLibrary(CUlib_st* lib);
CUresult GetKernel(CUlib_st* lib, const char* name, CUkern_st** out);
// The library's module in `ctx` (created on first use).
CUresult LibraryModule(CUlib_st* lib, CUctx_st* ctx, CUmod_st** out);
bool IsLiveLibrary(CUlib_st* lib);
bool IsLiveKernel(CUkern_st* k);

// A launchable function from a CUfunction or a CUkernel handle (CUDA 12 lets programs pass
// CUkernel where CUfunction is expected); the kernel's function lives in `ctx`.
CUresult ResolveFunction(CUfunction f, CUctx_st* ctx, CUfunc_st** out);

// Reads a whole file (cuModuleLoad, cuLibraryLoadFromFile).
bool ReadFile(const char* path, std::vector<unsigned char>* out);

}  // namespace simcuda

#endif  // SIMCUDA_SRC_MODULE_H_
