// Parity of the generated hook table with the CUDA headers and the toolkit's libcuda: every
// hooked export is a real driver symbol, and cuGetProcAddress variant selection picks what the
// headers say each (cudaVersion, per-thread-stream) caller gets. docs/hooks.md is up to date.
// On a GPU host (tests/gpu/smoke.sh) GSHARE_TEST_DRIVER_LIBRARY names the real driver to check
// the exports against, and GSHARE_TEST_PREBUILT=1 says the build tree is on another machine.
#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "runtime/symbols.h"

namespace gshare::preload {
namespace {

std::string Select(const char* base, int version, bool per_thread) {
  const DriverVariant* v = SelectVariant(base, version, per_thread);
  return v == nullptr ? "none" : v->export_name;
}

TEST(HookTable, VersionedVariantsFollowTheHeaders) {
  EXPECT_EQ(Select("cuMemAlloc", 13000, false), "cuMemAlloc_v2");
  EXPECT_EQ(Select("cuMemAlloc", 12000, false), "cuMemAlloc_v2");
  EXPECT_EQ(Select("cuMemAlloc", 3020, false), "cuMemAlloc_v2");
  EXPECT_EQ(Select("cuMemAlloc", 3010, false), "cuMemAlloc");
  EXPECT_EQ(Select("cuMemAlloc", 1000, false), "none");
  EXPECT_EQ(Select("cuGetProcAddress", 11030, false), "cuGetProcAddress");
  EXPECT_EQ(Select("cuGetProcAddress", 12000, false), "cuGetProcAddress_v2");
  EXPECT_EQ(Select("cuStreamWaitValue32", 11000, false), "cuStreamWaitValue32");
  EXPECT_EQ(Select("cuStreamWaitValue32", 12000, false), "cuStreamWaitValue32_v2");
  EXPECT_EQ(Select("cuMemGetInfo", 12000, false), "cuMemGetInfo_v2");
  EXPECT_EQ(Select("cuCtxGetCurrent", 12000, false), "none");  // not hooked: passes through
  // Every ABI version of a call that changes the current context is hooked (the in-flight
  // tracker's per-thread cache of the default stream, context_hooks.cc).
  EXPECT_EQ(Select("cuCtxSetCurrent", 12000, false), "cuCtxSetCurrent");
  EXPECT_EQ(Select("cuCtxPushCurrent", 12000, false), "cuCtxPushCurrent_v2");
  EXPECT_EQ(Select("cuCtxPushCurrent", 3020, false), "cuCtxPushCurrent");
  EXPECT_EQ(Select("cuCtxPopCurrent", 12000, false), "cuCtxPopCurrent_v2");
  EXPECT_EQ(Select("cuCtxPopCurrent", 3020, false), "cuCtxPopCurrent");
  // Every ABI version of a call taking a CUdevice is hooked (the device view, docs/multi-gpu.md).
  EXPECT_EQ(Select("cuCtxCreate", 13000, false), "cuCtxCreate_v4");
  EXPECT_EQ(Select("cuCtxCreate", 12000, false), "cuCtxCreate_v3");
  EXPECT_EQ(Select("cuCtxCreate", 3020, false), "cuCtxCreate_v2");
  EXPECT_EQ(Select("cuMemAdvise", 13000, false), "cuMemAdvise_v2");
  EXPECT_EQ(Select("cuMemAdvise", 11000, false), "cuMemAdvise");
  EXPECT_EQ(Select("cuMemPrefetchAsync", 13000, true), "cuMemPrefetchAsync_v2_ptsz");
  // An ABI that changed in CUDA 13: a CUDA 12.8/12.9 caller keeps the 12.8 variant.
  EXPECT_EQ(Select("cuMemcpyBatchAsync", 12080, false), "cuMemcpyBatchAsync");
  EXPECT_EQ(Select("cuMemcpyBatchAsync", 12090, true), "cuMemcpyBatchAsync_ptsz");
  EXPECT_EQ(Select("cuMemcpyBatchAsync", 13000, false), "cuMemcpyBatchAsync_v2");
  EXPECT_EQ(Select("cuMemcpyBatchAsync", 13000, true), "cuMemcpyBatchAsync_v2_ptsz");
}

TEST(HookTable, PerThreadStreamVariants) {
  EXPECT_EQ(Select("cuMemcpyHtoDAsync", 13000, true), "cuMemcpyHtoDAsync_v2_ptsz");
  EXPECT_EQ(Select("cuMemcpyHtoDAsync", 13000, false), "cuMemcpyHtoDAsync_v2");
  EXPECT_EQ(Select("cuMemcpyHtoD", 12000, true), "cuMemcpyHtoD_v2_ptds");
  EXPECT_EQ(Select("cuLaunchKernel", 12000, true), "cuLaunchKernel_ptsz");
  EXPECT_EQ(Select("cuLaunchKernel", 12000, false), "cuLaunchKernel");
  EXPECT_EQ(Select("cuStreamWaitValue32", 12000, true), "cuStreamWaitValue32_v2_ptsz");
  EXPECT_EQ(Select("cuMemAllocAsync", 12000, true), "cuMemAllocAsync_ptsz");
  // No per-thread form: the plain variant.
  EXPECT_EQ(Select("cuMemAlloc", 12000, true), "cuMemAlloc_v2");
  // The per-thread form appeared later than the plain one.
  EXPECT_EQ(Select("cuMemcpyHtoDAsync", 6000, true), "cuMemcpyHtoDAsync_v2");
}

const char* DriverToCheck() {
  const char* env = std::getenv("GSHARE_TEST_DRIVER_LIBRARY");
  return env != nullptr && *env != '\0' ? env : GSHARE_CUDA_STUB;
}

TEST(HookTable, EveryHookedExportIsADriverSymbol) {
  const char* driver = DriverToCheck();
  void* stub = dlopen(driver, RTLD_LAZY | RTLD_LOCAL);
  ASSERT_NE(stub, nullptr) << dlerror();
  ASSERT_GT(HookedExportCount(), 100u);
  for (size_t i = 0; i < HookedExportCount(); ++i) {
    const char* name = HookedExportName(i);
    EXPECT_NE(dlsym(stub, name), nullptr) << name << " is not exported by " << driver;
    EXPECT_TRUE(IsHookedExport(name));
  }
  EXPECT_FALSE(IsHookedExport("cuGetExportTable"));  // passed through untouched
  EXPECT_FALSE(IsHookedExport("cuCtxGetCurrent"));
  EXPECT_TRUE(IsHookedExport("cuCtxSetCurrent"));
  dlclose(stub);
}

TEST(HookTable, VariantRowsAreSortedAndKnown) {
  const auto variants = HookedBaseVariants();
  ASSERT_FALSE(variants.empty());
  for (size_t i = 1; i < variants.size(); ++i) {
    EXPECT_LE(std::string_view(variants[i - 1].base), std::string_view(variants[i].base));
  }
  for (const DriverVariant& v : variants) {
    EXPECT_EQ(v.hooked, IsHookedExport(v.export_name)) << v.export_name;
  }
}

// Every exported ABI version of a hooked call is hooked: an old caller (cuGetProcAddress with
// an early cudaVersion, dlsym of the unversioned name) never reaches the driver's own copy of a
// call the shim counts or gates (before: the v1 cuMemAlloc, cuMemAllocPitch, cuMemFree,
// cuMemGetInfo, cuMemGetAddressRange and cuIpcOpenMemHandle were the driver's).
TEST(HookTable, EveryVersionOfAHookedCallIsHooked) {
  for (const DriverVariant& v : HookedBaseVariants()) {
    EXPECT_TRUE(v.hooked) << v.export_name << " (" << v.base << " v" << v.version
                          << ") is exported by the driver but not hooked";
  }
  EXPECT_EQ(Select("cuMemAlloc", 3000, false), "cuMemAlloc");
  EXPECT_TRUE(IsHookedExport("cuMemAlloc"));
}

TEST(HookTable, DocsListMatchesTheBuild) {
  if (const char* prebuilt = std::getenv("GSHARE_TEST_PREBUILT"); prebuilt && *prebuilt == '1') {
    GTEST_SKIP() << "GSHARE_TEST_PREBUILT=1: the build tree (generated hooks.md) is on the build "
                    "machine, not here";
  }
  std::ifstream generated(GSHARE_HOOKS_MD), checked_in(GSHARE_DOCS_HOOKS_MD);
  ASSERT_TRUE(generated.good()) << GSHARE_HOOKS_MD;
  ASSERT_TRUE(checked_in.good()) << GSHARE_DOCS_HOOKS_MD;
  std::stringstream a, b;
  a << generated.rdbuf();
  b << checked_in.rdbuf();
  EXPECT_EQ(a.str(), b.str()) << "docs/hooks.md is stale: copy " << GSHARE_HOOKS_MD;
}

}  // namespace
}  // namespace gshare::preload
