// Fuzz target: the model catalog parser (tools/workload, ParseCatalog; TOML through toml++).
// Any text is parsed or rejected with a message; nothing throws out of the parser; every model
// of an accepted catalog has a name and can be looked up by it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gshare/workload/catalog.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace wl = gshare::workload;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto catalog = wl::ParseCatalog(text, "fuzz.toml");
  if (!catalog.ok()) {
    FUZZ_CHECK(!catalog.status().message().empty());
    return 0;
  }
  for (const auto& m : catalog->models) {
    FUZZ_CHECK(!m.name.empty());
    FUZZ_CHECK(catalog->Find(m.name) >= 0);
    (void)wl::ExecQuantileMs(m, 0.5);
    (void)wl::SloMs(m);
  }
  return 0;
}
