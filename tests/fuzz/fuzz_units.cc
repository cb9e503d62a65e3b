// Fuzz target: common/units parsing (ParseByteSize, ParseDuration) on any text, and the
// byte-size formatter on any value. Parsers return a value or an error message; formatting a
// value and parsing it back lands within the formatter's rounding (3 significant digits).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "gshare/common/units.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto bytes = gshare::ParseByteSize(text);
  FUZZ_CHECK(bytes.ok() || (bytes.status().code() == gshare::StatusCode::kInvalidArgument &&
                            !bytes.status().message().empty()));
  const auto duration = gshare::ParseDuration(text);
  FUZZ_CHECK(duration.ok() || (duration.status().code() == gshare::StatusCode::kInvalidArgument &&
                               !duration.status().message().empty()));
  if (duration.ok()) FUZZ_CHECK(duration->count() >= 0);

  gshare::fuzz::FuzzInput in(data, size);
  const auto value = in.Take<uint64_t>();
  const std::string formatted = gshare::FormatByteSize(value);
  FUZZ_CHECK(!formatted.empty());
  const auto back = gshare::ParseByteSize(formatted);
  if (back.ok()) {
    const double ratio = static_cast<double>(*back) / (value == 0 ? 1.0 : static_cast<double>(value));
    FUZZ_CHECK(value == 0 ? *back == 0 : (ratio > 0.99 && ratio < 1.01));
  }
  return 0;
}
