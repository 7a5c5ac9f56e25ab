// The rewards policies learn from: bucketed levels (invalid, no gain, 5% over the parent, a new
// best of the run) and the log speedup over the parent; unknown kinds are refused.
#include <gtest/gtest.h>

#include <cmath>

#include "search/reward.h"

namespace kevo::search {
namespace {

TEST(Reward, BucketedLevels) {
  const auto r = make_reward("bucketed");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->of(false, 1.0, 2.0, 1.5), -1);   // invalid, whatever it measured
  EXPECT_EQ(r->of(true, 1.0, 0.0, 1.5), -1);    // no fitness
  EXPECT_EQ(r->of(true, 1.0, 1.6, 1.5), 2);     // a new best of the run
  EXPECT_EQ(r->of(true, 1.0, 1.5, 1.5), 1);     // the run's best equalled is not a new one; 50% over the parent
  EXPECT_EQ(r->of(true, 1.0, 1.05, 3.0), 1);    // exactly 5% over the parent
  EXPECT_EQ(r->of(true, 1.0, 1.049, 3.0), 0);
  EXPECT_EQ(r->of(true, 2.0, 1.0, 3.0), 0);     // slower than the parent but valid
  EXPECT_EQ(r->of(true, 0.0, 1.0, 3.0), 0);     // a parent without fitness: no gain to measure
}

TEST(Reward, LogSpeedupOverTheParent) {
  const auto r = make_reward("log_speedup");
  ASSERT_NE(r, nullptr);
  EXPECT_DOUBLE_EQ(r->of(true, 2.0, 3.0, 0), std::log(1.5));
  EXPECT_DOUBLE_EQ(r->of(true, 2.0, 1.0, 0), std::log(0.5));
  EXPECT_EQ(r->of(true, 0.0, 3.0, 0), 0);
  EXPECT_EQ(r->of(false, 2.0, 3.0, 0), -1);
  EXPECT_EQ(r->of(true, 2.0, -1.0, 0), -1);
}

TEST(Reward, UnknownKindsAreRefused) {
  EXPECT_EQ(make_reward("speedup"), nullptr);
  EXPECT_EQ(make_reward(""), nullptr);
}

}  // namespace
}  // namespace kevo::search
