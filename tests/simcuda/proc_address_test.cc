// Tests of cuGetProcAddress(_v2): versioned lookup, per-thread-stream variants, symbol status.
#include <dlfcn.h>

#include "test_util.h"

// The CUDA 11.3 form, which cuda.h hides behind the cuGetProcAddress -> _v2 macro.
#undef cuGetProcAddress
extern "C" CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);

namespace {

void* Sym(const char* name) {
  void* self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void* p = self != nullptr ? dlsym(self, name) : nullptr;
  return p;
}

void* Lookup(const char* name, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* st,
             CUresult* result) {
  void* fn = nullptr;
  *result = cuGetProcAddress_v2(name, &fn, version, flags, st);
  return fn;
}

TEST(ProcAddress, NewestVariantNotNewerThanTheAskedVersion) {
  CUdriverProcAddressQueryResult st;
  CUresult r;
  EXPECT_EQ(Lookup("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st, &r), Sym("cuMemAlloc_v2"));
  EXPECT_EQ(r, CUDA_SUCCESS);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(Lookup("cuMemAlloc", 3000, CU_GET_PROC_ADDRESS_DEFAULT, &st, &r), Sym("cuMemAlloc"));
  EXPECT_EQ(Lookup("cuCtxCreate", 12000, 0, &st, &r), Sym("cuCtxCreate_v3"));
  EXPECT_EQ(Lookup("cuCtxCreate", 13000, 0, &st, &r), Sym("cuCtxCreate_v4"));
  EXPECT_EQ(Lookup("cuStreamGetCaptureInfo", 12030, 0, &st, &r), Sym("cuStreamGetCaptureInfo_v3"));
  EXPECT_EQ(Lookup("cuEventElapsedTime", 12000, 0, &st, &r), Sym("cuEventElapsedTime"));
  EXPECT_EQ(Lookup("cuEventElapsedTime", 13000, 0, &st, &r), Sym("cuEventElapsedTime_v2"));
  EXPECT_NE(Sym("cuMemAlloc_v2"), nullptr);
}

TEST(ProcAddress, PerThreadDefaultStreamVariants) {
  CUdriverProcAddressQueryResult st;
  CUresult r;
  EXPECT_EQ(Lookup("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st, &r),
            Sym("cuMemcpyHtoD_v2_ptds"));
  EXPECT_EQ(Lookup("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st, &r),
            Sym("cuLaunchKernel_ptsz"));
  EXPECT_EQ(Lookup("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st, &r),
            Sym("cuLaunchKernel"));
  // No per-thread variant: the ordinary one.
  EXPECT_EQ(Lookup("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st, &r),
            Sym("cuMemAlloc_v2"));
}

TEST(ProcAddress, MissingAndTooNewSymbols) {
  CUdriverProcAddressQueryResult st;
  CUresult r;
  EXPECT_EQ(Lookup("cuNoSuchFunction", 13000, 0, &st, &r), nullptr);
  EXPECT_EQ(r, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(Lookup("cuMemAllocAsync", 10000, 0, &st, &r), nullptr);  // added in 11.2
  EXPECT_EQ(r, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  void* fn = nullptr;
  EXPECT_EQ(cuGetProcAddress("cuInit", &fn, 13000, 0), CUDA_SUCCESS);  // the v1 form
  EXPECT_EQ(fn, Sym("cuInit"));
}

TEST(ProcAddress, UnimplementedEntryPointsSayNotSupported) {
  using Fn = CUresult (*)(CUgraph*, unsigned int);
  void* fn = nullptr;
  ASSERT_EQ(cuGetProcAddress("cuGraphCreate", &fn, 13000, 0), CUDA_SUCCESS);
  ASSERT_NE(fn, nullptr);
  CUgraph g;
  EXPECT_EQ(reinterpret_cast<Fn>(fn)(&g, 0), CUDA_ERROR_NOT_SUPPORTED);
  const void* table = reinterpret_cast<const void*>(1);
  CUuuid id{};
  EXPECT_EQ(cuGetExportTable(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
}

}  // namespace
