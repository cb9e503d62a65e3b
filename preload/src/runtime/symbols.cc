// The generated hook table and its lookups (see symbols.h): names and variants only, so unit
// tests can link it without the hooks themselves.
#include "runtime/symbols.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <type_traits>

#include "hook_table.h"

namespace gshare::preload {
namespace {

constexpr DriverVariant kVariants[] = {
#include "variants.inc"
};

const std::array<std::string_view, GSHARE_HOOKED_EXPORT_COUNT>& SortedNames() {
  static const auto table = [] {
    std::array<std::string_view, GSHARE_HOOKED_EXPORT_COUNT> t = {{
#define GSHARE_NAME_ROW(name, pfn) #name,
        GSHARE_HOOKED_EXPORTS(GSHARE_NAME_ROW)
#undef GSHARE_NAME_ROW
    }};
    std::sort(t.begin(), t.end());
    return t;
  }();
  return table;
}

}  // namespace

std::span<const DriverVariant> HookedBaseVariants() { return kVariants; }

bool IsHookedExport(std::string_view name) {
  const auto& t = SortedNames();
  return std::binary_search(t.begin(), t.end(), name);
}

size_t HookedExportCount() { return GSHARE_HOOKED_EXPORT_COUNT; }

const char* HookedExportName(size_t i) { return SortedNames()[i].data(); }

const DriverVariant* SelectVariant(std::string_view base, int cuda_version, bool per_thread) {
  const DriverVariant* first = std::begin(kVariants);
  const DriverVariant* last = std::end(kVariants);
  first = std::lower_bound(first, last, base, [](const DriverVariant& v, std::string_view b) {
    return std::string_view(v.base) < b;
  });
  const DriverVariant* best_plain = nullptr;
  const DriverVariant* best_per_thread = nullptr;
  for (const DriverVariant* v = first; v != last && v->base == base; ++v) {
    if (v->version > cuda_version) continue;
    const DriverVariant*& best = v->kind == StreamKind::kNone ? best_plain : best_per_thread;
    if (best == nullptr || v->version > best->version) best = v;
  }
  return per_thread && best_per_thread != nullptr ? best_per_thread : best_plain;
}

}  // namespace gshare::preload
