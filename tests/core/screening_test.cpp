// The screening rule a campaign relies on: a candidate is verified fully where its short timing,
// given a margin that grows with the timing's spread, could reach what its island's archive admits
// (its cell's elite, or the island's best for a cell still empty); never where it cannot.
#include <gtest/gtest.h>

#include "core/screening.h"

namespace kevo {
namespace {

AdmissionBar bar_with(double island_best, std::vector<double> band_elite) {
  AdmissionBar bar;
  bar.screen = true;
  bar.island_best = island_best;
  bar.band_elite = std::move(band_elite);
  return bar;
}

TEST(Screening, TheBarIsTheCellsEliteOrTheIslandsBestForAnEmptyCell) {
  const AdmissionBar bar = bar_with(4.0, {2.0, 0, 3.0, 1.0});
  EXPECT_DOUBLE_EQ(bar.admit(0.10), 2.0);  // band 0
  EXPECT_DOUBLE_EQ(bar.admit(0.30), 4.0);  // band 1 has no elite
  EXPECT_DOUBLE_EQ(bar.admit(0.50), 3.0);  // band 2: the band's lower edge belongs to it
  EXPECT_DOUBLE_EQ(bar.admit(1.00), 1.0);  // full occupancy is the last band
  EXPECT_DOUBLE_EQ(bar.admit(-0.2), 2.0);
}

TEST(Screening, NoBarWithoutScreeningOrBeforeTheIslandHoldsAnything) {
  AdmissionBar off = bar_with(4.0, {2.0, 2.0});
  off.screen = false;
  EXPECT_EQ(off.admit(0.5), 0);
  EXPECT_EQ(bar_with(0, {0, 0}).admit(0.5), 0);  // an empty island: everything is verified fully
  EXPECT_TRUE(screen_verdict(0.01, 0, 0).verify);
}

TEST(Screening, ACandidateWithinTheMarginIsVerifiedFullyAndOneOutsideIsNot) {
  const double bar = 2.0;
  EXPECT_TRUE(screen_verdict(2.5, 0, bar).verify);                            // above the bar
  EXPECT_TRUE(screen_verdict(bar / (1 + kScreenMarginFloor), 0, bar).verify);  // at the margin's edge
  const ScreenVerdict below = screen_verdict(bar / (1 + kScreenMarginFloor) * 0.999, 0, bar);
  EXPECT_FALSE(below.verify);
  EXPECT_DOUBLE_EQ(below.margin, kScreenMarginFloor);
  EXPECT_NE(below.reason.find("screened out"), std::string::npos) << below.reason;
  EXPECT_EQ(below.reason.find('\n'), std::string::npos);
}

TEST(Screening, ANoisyShortTimingIsGivenAWiderMargin) {
  // A spread of 20% between the 20th and 80th percentiles widens the margin to 40%: a candidate
  // 30% under the bar is verified fully, which a steady timing would have screened out.
  const double bar = 1.0, fitness = 1.0 / 1.3;
  EXPECT_FALSE(screen_verdict(fitness, 0.01, bar).verify);
  const ScreenVerdict noisy = screen_verdict(fitness, 0.20, bar);
  EXPECT_TRUE(noisy.verify);
  EXPECT_DOUBLE_EQ(noisy.margin, kScreenSpreadFactor * 0.20);
  EXPECT_FALSE(screen_verdict(fitness * 0.5, 0.20, bar).verify);
}

}  // namespace
}  // namespace kevo
