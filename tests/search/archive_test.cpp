// The MAP-Elites archive, parent selection and islands as the search relies on them: a cell keeps
// its fittest variant and ties keep the incumbent; rankings break ties by variant id; tournament
// and proportional selection draw with the documented odds and never return the excluded mate
// while another elite exists; stale islands start over around the run's best; migration moves
// the best elites one island along the ring, on schedule.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "search/archive.h"
#include "search/islands.h"
#include "search/parents.h"

namespace kevo::search {
namespace {

Elite elite(int64_t variant, double fitness, const std::string& cell) {
  Elite e;
  e.parent.variant = variant;
  e.parent.fitness = fitness;
  e.cell = cell;
  return e;
}

TEST(Archive, ACellKeepsItsFittestVariantAndTiesKeepTheIncumbent) {
  Archive a;
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.best(), nullptr);
  EXPECT_TRUE(a.insert(elite(1, 2.0, "x")));
  EXPECT_FALSE(a.insert(elite(2, 2.0, "x")));  // as fit: the incumbent stays
  EXPECT_FALSE(a.insert(elite(3, 1.5, "x")));
  EXPECT_EQ(a.cells().at("x").parent.variant, 1);
  EXPECT_TRUE(a.insert(elite(4, 2.5, "x")));
  EXPECT_EQ(a.cells().at("x").parent.variant, 4);
  EXPECT_TRUE(a.insert(elite(5, 0.5, "y")));  // an empty cell takes anything
  EXPECT_EQ(a.size(), 2u);
  a.clear();
  EXPECT_TRUE(a.empty());
}

TEST(Archive, RankingsBreakTiesByTheLowerVariantId) {
  Archive a;
  a.insert(elite(9, 3.0, "a"));
  a.insert(elite(4, 3.0, "b"));
  a.insert(elite(7, 1.0, "c"));
  a.insert(elite(2, 5.0, "d"));
  ASSERT_NE(a.best(), nullptr);
  EXPECT_EQ(a.best()->parent.variant, 2);
  const std::vector<const Elite*> top = a.top(3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0]->parent.variant, 2);
  EXPECT_EQ(top[1]->parent.variant, 4);  // 3.0, the lower id first
  EXPECT_EQ(top[2]->parent.variant, 9);
  EXPECT_EQ(a.top(10).size(), 4u);
  EXPECT_TRUE(fitter(elite(4, 3.0, "b"), elite(9, 3.0, "a")));
  EXPECT_FALSE(fitter(elite(9, 3.0, "a"), elite(4, 3.0, "b")));
}

TEST(Archive, CellsNameTheSpaceAndTheOccupancyBand) {
  EXPECT_EQ(cell_of("reduce_rows/softmax", 0.0), "reduce_rows/softmax|occ 0-25%");
  EXPECT_EQ(cell_of("reduce_rows/softmax", 0.6), "reduce_rows/softmax|occ 50-75%");
  EXPECT_EQ(cell_of("reduce_rows/softmax", 1.0), "reduce_rows/softmax|occ 75-100%");  // full occupancy: the top band
  EXPECT_EQ(cell_of("s", 0.3, 2), "s|occ 0-50%");
  EXPECT_EQ(cell_of("s", 0.99, 1), "s|occ 0-100%");
}

// How often each variant is drawn in `n` draws.
std::map<int64_t, int> draws(const ParentSelection& how, const Archive& a, int n, const Elite* exclude = nullptr) {
  std::mt19937_64 rng(42);
  std::map<int64_t, int> count;
  for (int i = 0; i < n; ++i) count[how.select(a, rng, exclude).parent.variant]++;
  return count;
}

Archive four_elites() {  // fitness 1, 2, 3, 4 in cells a..d
  Archive a;
  for (int i = 1; i <= 4; ++i) a.insert(elite(i, i, std::string(1, static_cast<char>('a' + i - 1))));
  return a;
}

TEST(ParentSelection, ATournamentOfOneIsUniformAndALargeOneAlmostAlwaysTheBest) {
  const Archive a = four_elites();
  const auto uniform = draws(*make_parent_selection("tournament", 1), a, 8000);
  for (int64_t v = 1; v <= 4; ++v) EXPECT_NEAR(uniform.at(v), 2000, 200) << v;
  // A tournament of 3 over 4 elites picks the best unless it is never drawn: 1 - (3/4)^3 = 0.578.
  const auto three = draws(*make_parent_selection("tournament", 3), a, 8000);
  EXPECT_NEAR(three.at(4) / 8000.0, 1 - 27.0 / 64.0, 0.03);
  const auto many = draws(*make_parent_selection("tournament", 40), a, 1000);
  EXPECT_GE(many.at(4), 990);
  // A size below one still draws one.
  EXPECT_EQ(draws(*make_parent_selection("tournament", 0), a, 400).size(), 4u);
}

TEST(ParentSelection, ProportionalDrawsInProportionToFitness) {
  const Archive a = four_elites();
  const auto got = draws(*make_parent_selection("proportional", 3), a, 10000);
  for (int64_t v = 1; v <= 4; ++v) EXPECT_NEAR(got.at(v) / 10000.0, v / 10.0, 0.02) << v;
}

TEST(ParentSelection, TheExcludedMateIsNeverDrawnWhileAnotherEliteExists) {
  const Archive a = four_elites();
  const Elite* best = a.best();
  for (const char* name : {"tournament", "proportional"}) {
    const auto got = draws(*make_parent_selection(name, 3), a, 2000, best);
    EXPECT_EQ(got.count(4), 0u) << name;
    EXPECT_EQ(got.size(), 3u) << name;
    Archive one;
    one.insert(elite(7, 1.0, "only"));
    std::mt19937_64 rng(1);
    const Elite* only = &one.cells().at("only");
    EXPECT_EQ(&make_parent_selection(name, 3)->select(one, rng, only), only) << name;  // nothing else to draw
    EXPECT_THROW(make_parent_selection(name, 3)->select(Archive(), rng), std::logic_error) << name;
  }
  EXPECT_EQ(make_parent_selection("roulette", 3), nullptr);
}

TEST(Islands, AStaleIslandStartsOverAroundTheRunsBest) {
  std::vector<Island> islands(2);
  islands[0].archive.insert(elite(1, 1.0, "a"));
  islands[1].archive.insert(elite(2, 1.0, "a"));
  const std::optional<Elite> anchor = elite(9, 3.0, "z");
  reseed_stagnant(islands, anchor, 2);  // the first look: both islands improved from nothing
  EXPECT_EQ(islands[0].stale, 0);
  reseed_stagnant(islands, anchor, 2);
  EXPECT_EQ(islands[0].stale, 1);
  islands[1].archive.insert(elite(3, 2.0, "b"));  // island 1 improves, island 0 does not
  reseed_stagnant(islands, anchor, 2);
  EXPECT_TRUE(islands[0].reseed);
  ASSERT_EQ(islands[0].archive.size(), 1u);
  EXPECT_EQ(islands[0].archive.best()->parent.variant, 9);
  EXPECT_EQ(islands[0].best, 3.0);
  EXPECT_FALSE(islands[1].reseed);
  EXPECT_EQ(islands[1].archive.size(), 2u);
  EXPECT_EQ(islands[1].stale, 0);
  // Without an anchor a stale island is emptied; an empty island is never counted stale.
  std::vector<Island> lone(1);
  lone[0].archive.insert(elite(1, 1.0, "a"));
  for (int i = 0; i < 3; ++i) reseed_stagnant(lone, std::nullopt, 2);
  EXPECT_TRUE(lone[0].archive.empty());
  EXPECT_TRUE(lone[0].reseed);
  lone[0].reseed = false;
  for (int i = 0; i < 5; ++i) reseed_stagnant(lone, std::nullopt, 2);
  EXPECT_FALSE(lone[0].reseed);
}

TEST(Islands, MigrationSendsTheBestAlongTheRingOnSchedule) {
  std::vector<Island> islands(3);
  for (int i = 0; i < 3; ++i) {
    islands[static_cast<size_t>(i)].archive.insert(elite(10 * i + 1, 1.0 + i, "own" + std::to_string(i)));
    islands[static_cast<size_t>(i)].archive.insert(elite(10 * i + 2, 0.5 + i, "low" + std::to_string(i)));
  }
  migrate(islands, 0, 2, 1);  // generation 0 of an interval of 2: not yet
  for (const Island& isl : islands) EXPECT_EQ(isl.archive.size(), 2u);
  migrate(islands, 1, 2, 1);
  for (int i = 0; i < 3; ++i) {
    const Island& to = islands[static_cast<size_t>((i + 1) % 3)];
    EXPECT_EQ(to.archive.size(), 3u);
    EXPECT_EQ(to.archive.cells().at("own" + std::to_string(i)).parent.variant, 10 * i + 1);  // the sender's best
    EXPECT_EQ(to.archive.cells().count("low" + std::to_string(i)), 0u);
  }
  migrate(islands, 3, 0, 1);  // interval 0: never
  for (const Island& isl : islands) EXPECT_EQ(isl.archive.size(), 3u);
}

}  // namespace
}  // namespace kevo::search
