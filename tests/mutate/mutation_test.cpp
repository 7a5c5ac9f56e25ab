// Mutation operators keep to the manifest's legal set and change what they say they change.
#include <gtest/gtest.h>

#include <random>

#include "core/task.h"
#include "mutate/mutation.h"
#include "mutate/space.h"

namespace kevo::mutate {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

TEST(Mutation, EveryOperatorGivesLegalChildrenThatDifferAsPromised) {
  std::mt19937_64 rng(5);
  for (const char* file : {"tasks/03_softmax.json", "tasks/06_sum_dim1.json", "tasks/13_linear_leaky_relu.json"}) {
    Task task = load_task(kRoot + file);
    auto spaces = lower(task);
    ASSERT_FALSE(spaces.empty()) << file;
    for (const auto& s : spaces) {
      for (int i = 0; i < 10; ++i) {
        Genome g = s->random_genome(rng);
        for (const KnobChange& c : point_mutations(*s, g)) {
          Genome child = apply(g, {c});
          EXPECT_TRUE(s->legal(child)) << child.to_string();
          int differ = 0;
          for (size_t k = 0; k < g.values.size(); ++k) differ += g.values[k] != child.values[k];
          EXPECT_EQ(differ, 1) << g.to_string() << " -> " << child.to_string();
        }
        if (auto m = multi_knob(*s, g, rng)) {
          EXPECT_TRUE(s->legal(*m)) << m->to_string();
          int differ = 0;
          for (size_t k = 0; k < g.values.size(); ++k) differ += g.values[k] != m->values[k];
          EXPECT_GE(differ, 2);
          EXPECT_LE(differ, 3);
        }
        Genome h = s->random_genome(rng);
        if (auto x = crossover(*s, g, h, rng)) {
          EXPECT_TRUE(s->legal(*x)) << x->to_string();
          EXPECT_FALSE(*x == g);
          EXPECT_FALSE(*x == h);
          for (size_t k = 0; k < g.values.size(); ++k)
            EXPECT_TRUE(x->values[k] == g.values[k] || x->values[k] == h.values[k]) << "knob " << k << " from neither parent";
        }
      }
    }
  }
}

TEST(Mutation, PointMutationsAreAllTheLegalSingleKnobChanges) {
  Task task = load_task(kRoot + "tasks/01_relu.json");
  auto spaces = lower(task);
  std::mt19937_64 rng(9);
  const DesignSpace& s = *spaces.front();
  Genome g = s.random_genome(rng);
  size_t expected = 0;
  for (size_t k = 0; k < s.knobs().size(); ++k)
    for (int64_t v : s.knobs()[k].values)
      if (v != g.values[k] && s.legal(apply(g, {{static_cast<int>(k), v}}))) ++expected;
  EXPECT_EQ(point_mutations(s, g).size(), expected);
  EXPECT_GT(expected, 0u);
}

TEST(Mutation, CrossoverOfAGenomeWithItselfIsRefused) {
  Task task = load_task(kRoot + "tasks/01_relu.json");
  auto spaces = lower(task);
  std::mt19937_64 rng(3);
  Genome g = spaces.front()->random_genome(rng);
  EXPECT_FALSE(crossover(*spaces.front(), g, g, rng).has_value());
}

}  // namespace
}  // namespace kevo::mutate
