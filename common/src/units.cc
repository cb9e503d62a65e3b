// Implementation of gshare/common/units.h.
#include "gshare/common/units.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace gshare {
namespace {

struct Unit {
  std::string_view name;
  double factor;
};

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// Splits "  12.5 GiB " into number "12.5" and unit "GiB". Fails if no number leads.
Status SplitNumberAndUnit(std::string_view text, double* number, std::string_view* unit) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  if (text.empty()) return Invalid("empty value");
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) {
    return Invalid("'" + std::string(text) + "' does not start with a non-negative number");
  }
  std::string_view num = text.substr(0, digits);
  auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), *number);
  if (ec != std::errc() || ptr != num.data() + num.size() || !std::isfinite(*number)) {
    return Invalid("'" + std::string(num) + "' is not a valid number");
  }
  std::string_view rest = text.substr(digits);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
  *unit = rest;
  return Status::Ok();
}

}  // namespace

Result<uint64_t> ParseByteSize(std::string_view text) {
  static constexpr std::array<Unit, 11> kUnits{{
      {"", 1.0}, {"B", 1.0}, {"b", 1.0},
      {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024},
      {"TiB", 1024.0 * 1024 * 1024 * 1024},
      {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
  }};
  double number = 0;
  std::string_view unit;
  if (Status split = SplitNumberAndUnit(text, &number, &unit); !split.ok()) return split;
  for (const Unit& u : kUnits) {
    if (u.name != unit) continue;
    double bytes = number * u.factor;
    if (bytes >= 18446744073709549568.0) {  // largest double below 2^64
      return Invalid("'" + std::string(text) + "' is too large");
    }
    if (bytes != std::floor(bytes)) {
      return Invalid("'" + std::string(text) + "' is not a whole number of bytes");
    }
    return static_cast<uint64_t>(bytes);
  }
  return Invalid("unknown size unit '" + std::string(unit) +
                 "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
}

std::string FormatByteSize(uint64_t bytes) {
  static constexpr std::array<std::string_view, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t i = 0;
  while (value >= 1024.0 && i + 1 < kNames.size()) {
    value /= 1024.0;
    ++i;
  }
  char buf[64];
  if (value == std::floor(value)) {
    std::snprintf(buf, sizeof buf, "%.0f %s", value, kNames[i].data());
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s", value, kNames[i].data());
  }
  return buf;
}

Result<std::chrono::nanoseconds> ParseDuration(std::string_view text) {
  static constexpr std::array<Unit, 5> kUnits{{
      {"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"min", 60e9},
  }};
  double number = 0;
  std::string_view unit;
  if (Status split = SplitNumberAndUnit(text, &number, &unit); !split.ok()) return split;
  if (unit.empty()) return Invalid("'" + std::string(text) + "' needs a unit (ns, us, ms, s or min)");
  for (const Unit& u : kUnits) {
    if (u.name != unit) continue;
    double ns = number * u.factor;
    if (ns >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
      return Invalid("'" + std::string(text) + "' is too large");
    }
    return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(ns)));
  }
  return Invalid("unknown duration unit '" + std::string(unit) + "' (use ns, us, ms, s or min)");
}

}  // namespace gshare
