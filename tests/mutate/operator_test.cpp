// Mutation operators as objects: the registry names each once, in the order policies consider them
// and with the random policy's weights; each says where it applies, draws only legal children of
// the kind its name says, and the point operator lists every legal single-knob change.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/task.h"
#include "lower/lower.h"
#include "mutate/mutation.h"
#include "mutate/operator.h"
#include "mutate/space.h"

namespace kevo::mutate {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

int differing(const Genome& a, const Genome& b) {
  int n = 0;
  for (size_t k = 0; k < a.values.size(); ++k) n += a.values[k] != b.values[k];
  return n;
}

TEST(Operators, TheRegistryNamesEachOnceWithItsWeight) {
  std::vector<std::string> names;
  for (const WeightedOperator& w : default_operators()) {
    names.push_back(w.op->name());
    EXPECT_GT(w.weight, 0) << w.op->name();
    EXPECT_EQ(find_operator(w.op->name()), w.op);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"point", "multi", "crossover", "space_switch"}));
  EXPECT_EQ(find_operator("seed"), nullptr);  // seeds, reseeds and edits are not mutations
  EXPECT_EQ(find_operator("nonesuch"), nullptr);
}

TEST(Operators, EachAppliesWhereItCanAndDrawsLegalChildrenOfItsKind) {
  const Task task = load_task(kRoot + "tasks/12_max_pool2d.json");  // three spaces
  const auto spaces = lower::lower(task);
  ASSERT_GT(spaces.size(), 1u);
  std::mt19937_64 rng(11);
  const DesignSpace& space = *spaces.front();
  const Genome parent = space.random_genome(rng);
  Genome mate = space.random_genome(rng);
  while (mate == parent) mate = space.random_genome(rng);
  const MutationSite alone{space, spaces, parent};
  const MutationSite paired{space, spaces, parent, &mate};
  EXPECT_FALSE(crossover_operator().applies(alone));
  EXPECT_TRUE(crossover_operator().applies(paired));
  EXPECT_TRUE(space_switch_operator().applies(alone));
  for (int i = 0; i < 40; ++i) {
    for (const WeightedOperator& w : default_operators()) {
      std::optional<Mutation> m = w.op->draw(paired, rng);
      if (!m) continue;
      const DesignSpace* of = find_space(spaces, m->child.space);
      ASSERT_NE(of, nullptr) << w.op->name();
      EXPECT_TRUE(of->legal(m->child)) << w.op->name() << " " << m->child.to_string();
      EXPECT_EQ(m->action.rfind(w.op->name(), 0), 0u) << m->action;
      const std::string name = w.op->name();
      const int changed = differing(m->child, parent);
      if (name == "point") {
        EXPECT_EQ(changed, 1);
      } else if (name == "multi") {
        EXPECT_TRUE(changed >= 2 && changed <= 3) << changed;
      }
      if (name == "crossover") {
        EXPECT_TRUE(m->from_mate);
        EXPECT_FALSE(m->child == parent || m->child == mate);
        for (size_t k = 0; k < parent.values.size(); ++k)
          EXPECT_TRUE(m->child.values[k] == parent.values[k] || m->child.values[k] == mate.values[k]);
      }
      if (name == "space_switch") {
        EXPECT_NE(m->child.space, space.id());
      }
    }
  }
  // The point operator lists exactly the legal single-knob changes.
  const std::vector<Mutation> points = point_operator().enumerate(alone);
  EXPECT_EQ(points.size(), point_mutations(space, parent).size());
  for (const Mutation& m : points) EXPECT_EQ(differing(m.child, parent), 1);
  EXPECT_TRUE(multi_knob_operator().enumerate(alone).empty());
}

}  // namespace
}  // namespace kevo::mutate
