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
    ASSERT_TRUE(made.ok()) << name << ": " << made.error;
    EXPECT_EQ(made.policy->name(), name);
  }
}

TEST(Make, AcceptsAblations) {
  EXPECT_TRUE(Make("aggressive-no-prefetch", OneGpu()).ok());
  EXPECT_TRUE(Make("aggressive-no-deep-evict-no-scale-no-edf", OneGpu()).ok());
}

TEST(Make, RejectsUnknownNamesAndIdeas) {
  auto bad = Make("round-robin", OneGpu());
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("unknown policy"), std::string::npos);
  auto idea = Make("aggressive-no-magic", OneGpu());
  EXPECT_FALSE(idea.ok());
  EXPECT_NE(idea.error.find("magic"), std::string::npos);
  EXPECT_FALSE(Make("aggressive-prefetch", OneGpu()).ok());
}

TEST(Make, NeedsAGpu) {
  auto none = Make("aggressive", PolicyConfig{});
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.error.find("GPU"), std::string::npos);
}

}  // namespace
}  // namespace gshare::policy
