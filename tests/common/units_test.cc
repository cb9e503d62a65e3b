// Tests of size and duration parsing (gshare/common/units.h).
#include "gshare/common/units.h"

#include <gtest/gtest.h>

namespace gshare {
namespace {

// The value of an OK result, or 0 (a failure then shows as the test's mismatch).
uint64_t Bytes(const Result<uint64_t>& r) { return r.ok() ? *r : 0; }
std::chrono::nanoseconds Nanos(const Result<std::chrono::nanoseconds>& r) {
  return r.ok() ? *r : std::chrono::nanoseconds(-1);
}

// The message of a failed parse, after checking its code; "" when it did not fail.
template <typename T>
std::string Rejection(const Result<T>& r) {
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  return r.status().message();
}

TEST(ParseByteSize, AcceptsBinaryAndDecimalUnits) {
  EXPECT_EQ(Bytes(ParseByteSize("1536MiB")), 1536ull << 20);
  EXPECT_EQ(Bytes(ParseByteSize("2GiB")), 2ull << 30);
  EXPECT_EQ(Bytes(ParseByteSize("1.5 GiB")), 3ull << 29);
  EXPECT_EQ(Bytes(ParseByteSize("4096")), 4096u);
  EXPECT_EQ(Bytes(ParseByteSize("10B")), 10u);
  EXPECT_EQ(Bytes(ParseByteSize("3KB")), 3000u);
  EXPECT_EQ(Bytes(ParseByteSize(" 1TiB ")), 1ull << 40);
  EXPECT_EQ(Bytes(ParseByteSize("0")), 0u);
  EXPECT_TRUE(ParseByteSize("0").ok());
}

TEST(ParseByteSize, RejectsMalformedValuesWithAReason) {
  EXPECT_EQ(Rejection(ParseByteSize("")), "empty value");
  EXPECT_EQ(Rejection(ParseByteSize("  ")), "empty value");
  EXPECT_EQ(Rejection(ParseByteSize("-1GiB")), "'-1GiB' does not start with a non-negative number");
  EXPECT_EQ(Rejection(ParseByteSize("12 parsecs")),
            "unknown size unit 'parsecs' (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
  EXPECT_EQ(Rejection(ParseByteSize("1.2.3MiB")), "'1.2.3' is not a valid number");
  EXPECT_EQ(Rejection(ParseByteSize("0.3B")), "'0.3B' is not a whole number of bytes");
  EXPECT_EQ(Rejection(ParseByteSize("99999999999TiB")), "'99999999999TiB' is too large");
}

TEST(FormatByteSize, PicksTheLargestUnit) {
  EXPECT_EQ(FormatByteSize(17), "17 B");
  EXPECT_EQ(FormatByteSize(512ull << 20), "512 MiB");
  EXPECT_EQ(FormatByteSize(3ull << 29), "1.50 GiB");
}

TEST(ParseDuration, RequiresAUnit) {
  using namespace std::chrono_literals;
  EXPECT_EQ(Nanos(ParseDuration("20ms")), 20ms);
  EXPECT_EQ(Nanos(ParseDuration("500us")), 500us);
  EXPECT_EQ(Nanos(ParseDuration("1.5s")), 1500ms);
  EXPECT_EQ(Nanos(ParseDuration("2min")), 120s);
  EXPECT_EQ(Nanos(ParseDuration("7ns")), 7ns);
  EXPECT_EQ(Rejection(ParseDuration("20")), "'20' needs a unit (ns, us, ms, s or min)");
}

TEST(ParseDuration, RejectsMalformedValuesWithAReason) {
  EXPECT_EQ(Rejection(ParseDuration("")), "empty value");
  EXPECT_EQ(Rejection(ParseDuration("5 fortnights")),
            "unknown duration unit 'fortnights' (use ns, us, ms, s or min)");
  EXPECT_EQ(Rejection(ParseDuration("soon")), "'soon' does not start with a non-negative number");
  EXPECT_EQ(Rejection(ParseDuration("1..5s")), "'1..5' is not a valid number");
  EXPECT_EQ(Rejection(ParseDuration("99999999999min")), "'99999999999min' is too large");
}

}  // namespace
}  // namespace gshare
