// A tiny kernel plugin built in several variants (TEST_PLUGIN_VARIANT_*) to test the registry:
// a good plugin, one that repeats a name, one with the wrong ABI version, one without the entry
// point, and one with a malformed descriptor.
#include <cstddef>

#include "simcuda/kernel_plugin.h"

namespace {

void Store42(const SimcudaLaunchDims*, void* const* params) {
  **static_cast<int* const*>(params[0]) = 42;
}
SimcudaKernelCost NoCost(const SimcudaLaunchDims*, void* const*) { return {0.0, 4.0, 0.0}; }
const size_t kOnePointer[] = {sizeof(void*)};

#if defined(TEST_PLUGIN_VARIANT_good)
const SimcudaKernelDesc kTable[] = {
    {"test_a", Store42, NoCost, 1, kOnePointer},
    {"test_b", Store42, NoCost, 1, kOnePointer},
};
constexpr unsigned kAbi = SIMCUDA_PLUGIN_ABI;
#elif defined(TEST_PLUGIN_VARIANT_dup)
const SimcudaKernelDesc kTable[] = {
    {"test_a", Store42, NoCost, 1, kOnePointer},
    {"test_c", Store42, NoCost, 1, kOnePointer},
};
constexpr unsigned kAbi = SIMCUDA_PLUGIN_ABI;
#elif defined(TEST_PLUGIN_VARIANT_wrong_abi)
const SimcudaKernelDesc kTable[] = {{"test_wrong_abi", Store42, NoCost, 1, kOnePointer}};
constexpr unsigned kAbi = SIMCUDA_PLUGIN_ABI + 98;
#elif defined(TEST_PLUGIN_VARIANT_bad_desc)
const SimcudaKernelDesc kTable[] = {
    {"test_null_run", nullptr, NoCost, 1, kOnePointer},
    {"test_d", Store42, NoCost, 1, kOnePointer},
};
constexpr unsigned kAbi = SIMCUDA_PLUGIN_ABI;
#elif defined(TEST_PLUGIN_VARIANT_no_entry)
const SimcudaKernelDesc kTable[] = {{"test_no_entry", Store42, NoCost, 1, kOnePointer}};
constexpr unsigned kAbi = SIMCUDA_PLUGIN_ABI;
#define TEST_PLUGIN_ENTRY_NAME not_the_entry_point
#endif

}  // namespace

#ifndef TEST_PLUGIN_ENTRY_NAME
#define TEST_PLUGIN_ENTRY_NAME simcuda_kernels
#endif

extern "C" __attribute__((visibility("default"))) const SimcudaKernelDesc* TEST_PLUGIN_ENTRY_NAME(
    unsigned int* abi, size_t* count) {
  *abi = kAbi;
  *count = sizeof(kTable) / sizeof(kTable[0]);
  return kTable;
}
