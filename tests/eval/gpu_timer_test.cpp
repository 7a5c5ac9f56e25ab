// The timer's statistics, without a GPU: the half-width of the median's confidence interval, by
// which the timer decides that a median is stable, shrinks with more samples and is 0 for
// identical ones.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "eval/gpu_timer.h"

namespace kevo::eval {
namespace {

TEST(GpuTimer, MedianHalfWidthShrinksWithMoreSamples) {
  std::vector<double> few, many;
  for (int i = 0; i < 10; ++i) few.push_back(1.0 + 0.01 * (i % 5));
  for (int i = 0; i < 400; ++i) many.push_back(1.0 + 0.01 * (i % 5));
  EXPECT_TRUE(std::isinf(median_half_width({1.0, 2.0})));
  EXPECT_GT(median_half_width(few), 0.0);
  EXPECT_LE(median_half_width(many), median_half_width(few));
  EXPECT_DOUBLE_EQ(median_half_width(std::vector<double>(50, 2.0)), 0.0);
}

}  // namespace
}  // namespace kevo::eval
