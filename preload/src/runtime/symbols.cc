// The generated hook table and its lookups (see symbols.h). Compiled with
// __CUDA_API_VERSION_INTERNAL so cuda.h declares every export under its real name.
#include "runtime/symbols.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include "hook_table.h"

namespace gshare::preload {
namespace {

constexpr DriverVariant kVariants[] = {
#include "variants.inc"
};

struct Export {
  const char* name;
  void* fn;
};

// The hooks must have exactly the ABI cudaTypedefs.h gives their variant.
#define GSHARE_CHECK_ABI(name, pfn)                                        \
  static_assert(std::is_same_v<decltype(&::name), pfn>, #name " has the wrong signature");
GSHARE_HOOKED_EXPORTS(GSHARE_CHECK_ABI)
#undef GSHARE_CHECK_ABI

const std::array<Export, GSHARE_HOOKED_EXPORT_COUNT>& SortedExports() {
  static const auto table = [] {
    std::array<Export, GSHARE_HOOKED_EXPORT_COUNT> t = {{
#define GSHARE_EXPORT_ROW(name, pfn) {#name, reinterpret_cast<void*>(&::name)},
        GSHARE_HOOKED_EXPORTS(GSHARE_EXPORT_ROW)
#undef GSHARE_EXPORT_ROW
    }};
    std::sort(t.begin(), t.end(),
              [](const Export& a, const Export& b) { return std::strcmp(a.name, b.name) < 0; });
    return t;
  }();
  return table;
}

}  // namespace

std::span<const DriverVariant> HookedBaseVariants() { return kVariants; }

void* HookedExport(std::string_view name) {
  const auto& t = SortedExports();
  const auto it = std::lower_bound(t.begin(), t.end(), name,
                                   [](const Export& e, std::string_view n) { return e.name < n; });
  return it != t.end() && it->name == name ? it->fn : nullptr;
}

size_t HookedExportCount() { return GSHARE_HOOKED_EXPORT_COUNT; }

const char* HookedExportName(size_t i) { return SortedExports()[i].name; }

const DriverVariant* SelectVariant(std::string_view base, int cuda_version, bool per_thread) {
  const auto [first, last] = std::equal_range(
      std::begin(kVariants), std::end(kVariants), base,
      [](const auto& a, const auto& b) {
        if constexpr (std::is_same_v<std::decay_t<decltype(a)>, DriverVariant>) {
          return std::string_view(a.base) < b;
        } else {
          return a < std::string_view(b.base);
        }
      });
  const DriverVariant* best_plain = nullptr;
  const DriverVariant* best_per_thread = nullptr;
  for (const DriverVariant* v = first; v != last; ++v) {
    if (v->version > cuda_version) continue;
    const DriverVariant*& best = v->kind == StreamKind::kNone ? best_plain : best_per_thread;
    if (best == nullptr || v->version > best->version) best = v;
  }
  return per_thread && best_per_thread != nullptr ? best_per_thread : best_plain;
}

}  // namespace gshare::preload
