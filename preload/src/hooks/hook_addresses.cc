// Name -> address of every hook (the dlsym and cuGetProcAddress maps' values), built from the
// generated GSHARE_HOOKED_EXPORTS list; each hook's type is checked against the PFN typedef of
// its variant in cudaTypedefs.h. Compiled with __CUDA_API_VERSION_INTERNAL so cuda.h declares
// every export under its real name.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <type_traits>

#include "hook_table.h"
#include "runtime/symbols.h"

namespace gshare::preload {
namespace {

#define GSHARE_CHECK_ABI(name, pfn) \
  static_assert(std::is_same_v<decltype(&::name), pfn>, #name " has the wrong signature");
GSHARE_HOOKED_EXPORTS(GSHARE_CHECK_ABI)
#undef GSHARE_CHECK_ABI

struct Export {
  std::string_view name;
  void* fn;
};

const std::array<Export, GSHARE_HOOKED_EXPORT_COUNT>& SortedExports() {
  static const auto table = [] {
    std::array<Export, GSHARE_HOOKED_EXPORT_COUNT> t = {{
#define GSHARE_EXPORT_ROW(name, pfn) {#name, reinterpret_cast<void*>(&::name)},
        GSHARE_HOOKED_EXPORTS(GSHARE_EXPORT_ROW)
#undef GSHARE_EXPORT_ROW
    }};
    std::sort(t.begin(), t.end(), [](const Export& a, const Export& b) { return a.name < b.name; });
    return t;
  }();
  return table;
}

}  // namespace

void* HookedExport(std::string_view name) {
  const auto& t = SortedExports();
  const auto it = std::lower_bound(t.begin(), t.end(), name,
                                   [](const Export& e, std::string_view n) { return e.name < n; });
  return it != t.end() && it->name == name ? it->fn : nullptr;
}

}  // namespace gshare::preload
