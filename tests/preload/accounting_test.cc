// The quota's edges in real processes on simcuda (issue 17; probe/accounting.cc): stream-ordered
// frees are seen by every quota check, free memory is never reported beyond what the device can
// give, VMM memory counts until its last mapping is gone, and the driver's v1 entry points
// allocate within the quota however they are reached.
#include <cuda.h>

#include <string>

#include <gtest/gtest.h>

#include "child_process.h"
#include "shim_test.h"

namespace gshare::test {
namespace {

class Accounting : public ShimTest {};

// 16 x 16 MiB stream-ordered pieces fill a 256 MiB quota; once their frees have completed on the
// stream, cuMemCreate and cuMemAllocManaged (quota checks outside the allocator) find the
// memory free without a cuMemGetInfo first — also when the application told the default pool
// to keep everything it frees (every pool is the vGPU: its threshold holds no quota).
TEST_F(Accounting, StreamOrderedFreesAreSeenByEveryQuotaCheck) {
  for (const char* pool : {"", "threshold"}) {
    SCOPED_TRACE(std::string("pool threshold: ") + (*pool ? "maximum" : "default"));
    const auto kv =
        RunKeyValues({GSHARE_PROBE, "accounting", "async-frees", pool}, Env(true, "256MiB"));
    ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
    ExpectValues(kv, {
                         {"async_pieces", "16"},
                         {"async_refusal", N(CUDA_ERROR_OUT_OF_MEMORY)},
                         {"create_after_frees", "0"},
                         {"managed_after_frees", "0"},
                         {"free_end", N(256 * kMiB)},
                     });
  }
}

// An 8 GiB quota on a 4 GiB device: allocations stop at 4 GiB, and then cuMemGetInfo reports
// nothing free of a 4 GiB total (before: 4 GiB free of 8 GiB); cuDeviceTotalMem agrees.
TEST_F(Accounting, FreeMemoryIsNeverReportedBeyondTheDevice) {
  const auto kv = RunKeyValues({GSHARE_PROBE, "accounting", "beyond-device", "256"},
                               Env(true, "8GiB", "4GiB"));
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
  ExpectValues(kv, {
                       {"free_start", N(4 * kGiB)},
                       {"total_start", N(4 * kGiB)},
                       {"allocated", N(4 * kGiB)},
                       {"refusal", N(CUDA_ERROR_OUT_OF_MEMORY)},
                       {"free_at_refusal", "0"},
                       {"total_at_refusal", N(4 * kGiB)},
                       {"device_total", N(4 * kGiB)},
                   });
}

// The VMM idiom (create, reserve, map, set access, release) with a 64 MiB quota: the released
// handle's memory lives on in its mapping and stays counted, so a second round is refused
// (before: 12 rounds held 768 MiB while cuMemGetInfo said 64 of 64 MiB free); unmapping gives
// it back. A retained handle keeps unmapped memory counted until its release; an imported
// handle counts what it maps.
TEST_F(Accounting, VmmMemoryCountsUntilItsLastMappingIsGone) {
  const auto kv = RunKeyValues({GSHARE_PROBE, "accounting", "vmm-idiom", "64"}, Env(true, "64MiB"));
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
  ExpectValues(kv, {
                       {"vmm_free0", N(64 * kMiB)},
                       {"vmm_rounds_held", "1"},
                       {"vmm_refusal", N(CUDA_ERROR_OUT_OF_MEMORY)},
                       {"vmm_free_while_held", "0"},
                       {"vmm_free_after_unmap", N(64 * kMiB)},
                       {"vmm_after_unmap", "0"},
                       {"vmm_retain", "0"},
                       {"vmm_free_retained_unmapped", "0"},
                       {"vmm_free_retained_released", N(64 * kMiB)},
                       {"import_map", "0"},
                       {"import_counted", N(32 * kMiB)},
                       {"vmm_free_end", N(64 * kMiB)},
                   });
}

class LegacyEntryPoints : public ShimTest, public ::testing::WithParamInterface<const char*> {};

// cuGetProcAddress("cuMemAlloc", cudaVersion 3000) and dlsym("cuMemAlloc") reach the v1
// functions (32-bit pointers and sizes): the shim's hooks, within the 64 MiB quota.
TEST_P(LegacyEntryPoints, AllocateWithinTheQuota) {
  const auto kv = RunKeyValues({GSHARE_PROBE, "accounting", "legacy", GetParam()}, Env(true, "64MiB"));
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
  ExpectValues(kv, {
                       {"legacy_alloc_fn", "libgshare.so:cuMemAlloc"},
                       {"legacy_free_fn", "libgshare.so:cuMemFree"},
                       {"legacy_info_fn", "libgshare.so:cuMemGetInfo"},
                       {"legacy_roundtrip", "1"},
                       {"legacy_allocations", "4"},
                       {"legacy_refusal", N(CUDA_ERROR_OUT_OF_MEMORY)},
                       {"legacy_free", "0"},
                       {"legacy_total", N(64 * kMiB)},
                       {"legacy_device_total", N(64 * kMiB)},
                       {"free_v2_while_held", "0"},
                       {"legacy_free_result", "0"},
                       {"free_v2_end", N(64 * kMiB)},
                   });
}

// Without the shim simcuda allocates through them as the driver does (before: stubs returning
// CUDA_ERROR_NOT_SUPPORTED), with pointers a 32-bit CUdeviceptr holds.
TEST_P(LegacyEntryPoints, AllocateOnSimcudaAsOnTheDriver) {
  const auto kv = RunKeyValues({GSHARE_PROBE, "accounting", "legacy", GetParam()}, Env(false));
  ASSERT_EQ(S(kv, "exit"), "0") << S(kv, "error");
  ExpectValues(kv, {
                       {"legacy_alloc_fn", "libcuda.so.1:cuMemAlloc"},
                       {"legacy_roundtrip", "1"},
                       {"legacy_allocations", "32"},
                       {"legacy_refusal", "0"},
                       {"legacy_device_total", N(4 * kGiB - 1)},
                       {"legacy_free_result", "0"},
                   });
}

INSTANTIATE_TEST_SUITE_P(Ways, LegacyEntryPoints, ::testing::Values("procaddr", "dlsym"));

}  // namespace
}  // namespace gshare::test
