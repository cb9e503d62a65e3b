// Tests of size and duration parsing (gshare/common/units.h).
#include "gshare/common/units.h"

#include <gtest/gtest.h>

namespace gshare {
namespace {

TEST(ParseByteSize, AcceptsBinaryAndDecimalUnits) {
  EXPECT_EQ(ParseByteSize("1536MiB"), 1536ull << 20);
  EXPECT_EQ(ParseByteSize("2GiB"), 2ull << 30);
  EXPECT_EQ(ParseByteSize("1.5 GiB"), 3ull << 29);
  EXPECT_EQ(ParseByteSize("4096"), 4096u);
  EXPECT_EQ(ParseByteSize("10B"), 10u);
  EXPECT_EQ(ParseByteSize("3KB"), 3000u);
  EXPECT_EQ(ParseByteSize(" 1TiB "), 1ull << 40);
}

TEST(ParseByteSize, RejectsMalformedValuesWithAReason) {
  std::string error;
  EXPECT_FALSE(ParseByteSize("", &error));
  EXPECT_EQ(error, "empty value");
  EXPECT_FALSE(ParseByteSize("-1GiB", &error));
  EXPECT_NE(error.find("non-negative"), std::string::npos);
  EXPECT_FALSE(ParseByteSize("12 parsecs", &error));
  EXPECT_NE(error.find("unknown size unit 'parsecs'"), std::string::npos);
  EXPECT_FALSE(ParseByteSize("1.2.3MiB", &error));
  EXPECT_FALSE(ParseByteSize("0.3B", &error));
  EXPECT_NE(error.find("whole number"), std::string::npos);
  EXPECT_FALSE(ParseByteSize("99999999999TiB", &error));
  EXPECT_NE(error.find("too large"), std::string::npos);
}

TEST(FormatByteSize, PicksTheLargestUnit) {
  EXPECT_EQ(FormatByteSize(17), "17 B");
  EXPECT_EQ(FormatByteSize(512ull << 20), "512 MiB");
  EXPECT_EQ(FormatByteSize(3ull << 29), "1.50 GiB");
}

TEST(ParseDuration, RequiresAUnit) {
  using namespace std::chrono_literals;
  EXPECT_EQ(ParseDuration("20ms"), 20ms);
  EXPECT_EQ(ParseDuration("500us"), 500us);
  EXPECT_EQ(ParseDuration("1.5s"), 1500ms);
  EXPECT_EQ(ParseDuration("2min"), 120s);
  std::string error;
  EXPECT_FALSE(ParseDuration("20", &error));
  EXPECT_NE(error.find("needs a unit"), std::string::npos);
  EXPECT_FALSE(ParseDuration("5 fortnights", &error));
}

}  // namespace
}  // namespace gshare
