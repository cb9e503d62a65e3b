// Tests of policy::Make: every name, ablation suffixes, and clear errors.
#include <gtest/gtest.h>

#include "gshare/policy/policy.h"

namespace gshare::policy {
namespace {

PolicyConfig OneGpu() {
  PolicyConfig c;
  c.gpus.resize(1);
  return c;
}

TEST(Make, KnowsEveryPolicy) {
  for (const std::string& name : PolicyNames()) {
    auto made = Make(name, OneGpu());
    ASSERT_TRUE(made.ok()) << name << ": " << made.status().ToString();
    EXPECT_EQ((*made)->name(), name);
  }
}

TEST(Make, AcceptsAblations) {
  EXPECT_TRUE(Make("aggressive-no-prefetch", OneGpu()).ok());
  EXPECT_TRUE(Make("aggressive-no-deep-evict-no-scale-no-edf", OneGpu()).ok());
}

TEST(Make, RejectsUnknownNamesAndIdeas) {
  auto bad = Make("round-robin", OneGpu());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("unknown policy 'round-robin'"), std::string::npos)
      << bad.status().message();
  auto idea = Make("aggressive-no-magic", OneGpu());
  ASSERT_FALSE(idea.ok());
  EXPECT_EQ(idea.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(idea.status().message().find("unknown idea 'magic'"), std::string::npos)
      << idea.status().message();
  auto suffix = Make("aggressive-prefetch", OneGpu());
  ASSERT_FALSE(suffix.ok());
  EXPECT_EQ(suffix.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(suffix.status().message().find("expected -no-<idea> in '-prefetch'"), std::string::npos)
      << suffix.status().message();
}

TEST(Make, NeedsAGpu) {
  auto none = Make("aggressive", PolicyConfig{});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(none.status().message(), "the policy needs at least one GPU");
}

}  // namespace
}  // namespace gshare::policy
