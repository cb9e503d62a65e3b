// A tiny kernel plugin built in several variants (TEST_PLUGIN_VARIANT_*) to test the registry:
// a good plugin, one that repeats a name, one with the wrong ABI version, one without the entry
// point, one with a malformed descriptor, and one whose vector_add is wrong (put first in
// SIMCUDA_KERNELS, it shadows the real one, so simcuda-demo must report a wrong result).
#include <cstddef>

#include "simcuda/kernel_plugin.h"

namespace {

[[maybe_unused]] void Store42(const SimcudaLaunchDims*, void* const* params) {
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
#elif defined(TEST_PLUGIN_VARIANT_wrong_vector_add)
void WrongVectorAdd(const SimcudaLaunchDims*, void* const* params) {
  const float* a = *static_cast<const float* const*>(params[0]);
  const float* b = *static_cast<const float* const*>(params[1]);
  float* c = *static_cast<float* const*>(params[2]);
  const unsigned long long n = *static_cast<const unsigned long long*>(params[3]);
  for (unsigned long long i = 0; i < n; ++i) c[i] = a[i] - b[i];  // deliberately wrong
}
const size_t kVectorAddParams[] = {sizeof(void*), sizeof(void*), sizeof(void*), 8};
const SimcudaKernelDesc kTable[] = {
    {"vector_add", WrongVectorAdd, NoCost, 4, kVectorAddParams}};
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
