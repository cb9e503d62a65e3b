// Parsing and formatting of byte sizes ("1536MiB", "2GiB", "4096") and durations ("20ms",
// "500us", "1.5s") as they appear in environment variables, flags and config files.
// Pure functions; thread-safe; no allocation beyond the returned strings.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "gshare/common/status.h"

namespace gshare {

// Parses a byte size: a non-negative number (integer or decimal) followed by an optional unit.
// Units: B, KiB, MiB, GiB, TiB (powers of 1024), KB, MB, GB, TB (powers of 1000); case of the
// unit letters is significant only in that "b" alone is accepted as bytes. A bare number is
// bytes. Whitespace between number and unit is allowed. On failure returns kInvalidArgument
// whose message names the problem (not the variable: the caller knows which variable it
// parsed).
Result<uint64_t> ParseByteSize(std::string_view text);

// Formats bytes with the largest binary unit that keeps the value >= 1 ("1.50 GiB", "512 MiB",
// "17 B"); whole numbers print without decimals.
std::string FormatByteSize(uint64_t bytes);

// Parses a duration: a non-negative number followed by a unit: ns, us, ms, s, min. A unit is
// required (a bare "20" is ambiguous and rejected). Errors as ParseByteSize's.
Result<std::chrono::nanoseconds> ParseDuration(std::string_view text);

}  // namespace gshare
