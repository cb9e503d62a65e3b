// Entry points: modules, libraries, functions and kernels (loading and lookup).
#include <cstring>
#include <vector>

#include "api.h"
#include "context.h"
#include "driver.h"
#include "module.h"

namespace {

CUresult CurrentCtx(CUctx_st** ctx) { return simcuda::GetCurrent(ctx); }

CUresult LoadInCurrent(CUmodule* module, const void* image, size_t size) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = CurrentCtx(&ctx); r != CUDA_SUCCESS) return r;
  return simcuda::LoadModule(ctx, image, size, module);
}

int FunctionAttribute(CUfunction_attribute attrib, const SimcudaKernelDesc* desc, bool* known) {
  *known = true;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: return 0;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: return 0;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: return 0;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: return 32;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: return 80;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: return 90;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: return 0;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: return 49152;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: return -1;
    default:
      (void)desc;
      *known = false;
      return 0;
  }
}

}  // namespace

extern "C" {

CUresult cuModuleLoadData(CUmodule* module, const void* image) { return LoadInCurrent(module, image, 0); }

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                            CUjit_option* options, void** optionValues) {
  (void)numOptions;
  (void)options;
  (void)optionValues;  // JIT options do not apply: nothing is compiled
  return LoadInCurrent(module, image, 0);
}

CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return LoadInCurrent(module, fatCubin, 0);
}

CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  std::vector<unsigned char> bytes;
  if (!simcuda::ReadFile(fname, &bytes)) return CUDA_ERROR_FILE_NOT_FOUND;
  return LoadInCurrent(module, bytes.data(), bytes.size());
}

CUresult cuModuleUnload(CUmodule hmod) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (simcuda::IsLiveModule(hmod) && hmod->library != nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return simcuda::UnloadModule(hmod);
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return simcuda::GetFunction(hmod, name, hfunc);
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  (void)dptr;
  (void)bytes;
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (!simcuda::IsLiveModule(hmod) || name == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_ERROR_NOT_FOUND;  // module globals are not modelled (see docs/simcuda.md)
}

CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule mod) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!simcuda::IsLiveModule(mod)) return CUDA_ERROR_INVALID_HANDLE;
  *count = static_cast<unsigned>(mod->entries.size());
  return CUDA_SUCCESS;
}

CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_EAGER_LOADING;
  return CUDA_SUCCESS;
}

// JIT and library options do not apply: nothing is compiled, everything loads eagerly.
CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**, unsigned int,
                           CUlibraryOption*, void**, unsigned int) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return simcuda::LoadLibrary(code, 0, library);
}

CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option*, void**,
                               unsigned int, CUlibraryOption*, void**, unsigned int) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  std::vector<unsigned char> bytes;
  if (!simcuda::ReadFile(fileName, &bytes)) return CUDA_ERROR_FILE_NOT_FOUND;
  return simcuda::LoadLibrary(bytes.data(), bytes.size(), library);
}

CUresult cuLibraryUnload(CUlibrary library) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return simcuda::UnloadLibrary(library);
}

CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return simcuda::GetKernel(library, name, pKernel);
}

CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  if (pMod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = CurrentCtx(&ctx); r != CUDA_SUCCESS) return r;
  return simcuda::LibraryModule(library, ctx, pMod);
}

CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary lib) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!simcuda::IsLiveLibrary(lib)) return CUDA_ERROR_INVALID_HANDLE;
  *count = static_cast<unsigned>(lib->entries.size());
  return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = CurrentCtx(&ctx); r != CUDA_SUCCESS) return r;
  if (!simcuda::IsLiveKernel(kernel)) return CUDA_ERROR_INVALID_HANDLE;
  return simcuda::ResolveFunction(reinterpret_cast<CUfunction>(kernel), ctx, pFunc);
}

CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!simcuda::IsLiveKernel(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  *name = hfunc->name.c_str();
  return CUDA_SUCCESS;
}

CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  if (!simcuda::IsLiveKernel(kernel)) return CUDA_ERROR_INVALID_HANDLE;
  bool known = false;
  *pi = FunctionAttribute(attrib, kernel->desc, &known);
  return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
  (void)attrib;
  (void)val;
  if (CUresult r = simcuda::CheckDevice(dev); r != CUDA_SUCCESS) return r;
  return simcuda::IsLiveKernel(kernel) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (!simcuda::IsLiveFunction(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  bool known = false;
  *pi = FunctionAttribute(attrib, hfunc->desc, &known);
  return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  (void)attrib;
  (void)value;
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return simcuda::IsLiveFunction(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  (void)config;
  if (simcuda::Driver() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return simcuda::IsLiveFunction(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!simcuda::IsLiveFunction(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  *name = hfunc->name.c_str();
  return CUDA_SUCCESS;
}

CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  if (hmod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!simcuda::IsLiveFunction(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  *hmod = hfunc->module;
  return CUDA_SUCCESS;
}

CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction function) {
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!simcuda::IsLiveFunction(function)) return CUDA_ERROR_INVALID_HANDLE;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}

CUresult cuFuncLoad(CUfunction function) {
  return simcuda::IsLiveFunction(function) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize) {
  (void)dynamicSMemSize;
  if (numBlocks == nullptr || blockSize <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!simcuda::IsLiveFunction(func)) return CUDA_ERROR_INVALID_HANDLE;
  *numBlocks = blockSize > 1024 ? 0 : 2048 / blockSize;
  return CUDA_SUCCESS;
}

}  // extern "C"
