// Mutation operators keep to the manifest's legal set and change what they say they change.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <random>

#include "core/task.h"
#include "lower/lower.h"
#include "mutate/manifest.h"
#include "mutate/mutation.h"
#include "mutate/space.h"

namespace kevo::mutate {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

// Whether some legal genome differs from g in 2 to 3 of the knobs that have more than one value
// (what multi_knob draws from), by enumeration.
bool has_multi_knob_child(const DesignSpace& s, const Genome& g) {
  std::vector<size_t> mutable_knobs;
  for (size_t k = 0; k < s.knobs().size(); ++k)
    if (s.knobs()[k].values.size() > 1) mutable_knobs.push_back(k);
  std::function<bool(size_t, int, Genome&)> walk = [&](size_t from, int changed, Genome& child) {
    if (changed >= 2 && s.legal(child)) return true;
    if (changed == 3) return false;
    for (size_t i = from; i < mutable_knobs.size(); ++i) {
      const size_t k = mutable_knobs[i];
      for (int64_t v : s.knobs()[k].values) {
        if (v == g.values[k]) continue;
        child.values[k] = v;
        if (walk(i + 1, changed + 1, child)) return true;
      }
      child.values[k] = g.values[k];
    }
    return false;
  };
  Genome child = g;
  return walk(0, 0, child);
}

// Whether some legal genome takes every knob from a or b and is neither, by enumeration.
bool has_crossover_child(const DesignSpace& s, const Genome& a, const Genome& b) {
  std::vector<size_t> differ;
  for (size_t k = 0; k < a.values.size(); ++k)
    if (a.values[k] != b.values[k]) differ.push_back(k);
  for (uint64_t mask = 1; mask + 1 < (uint64_t{1} << differ.size()); ++mask) {
    Genome child = a;
    for (size_t i = 0; i < differ.size(); ++i)
      if (mask >> i & 1) child.values[differ[i]] = b.values[differ[i]];
    if (s.legal(child)) return true;
  }
  return false;
}

// Every operator's children are legal and differ as promised; multi-knob and crossover children
// come exactly where the space has one (nullopt where it has none) and, drawn at random, in all
// but a few of the cases that have one.
TEST(Mutation, EveryOperatorGivesLegalChildrenThatDifferAsPromised) {
  std::mt19937_64 rng(5);
  int multi_possible = 0, multi_made = 0, cross_possible = 0, cross_made = 0, multi_impossible = 0;
  for (const char* file : {"tasks/03_softmax.json", "tasks/06_sum_dim1.json", "tasks/13_linear_leaky_relu.json",
                           "tasks/12_max_pool2d.json"}) {
    Task task = load_task(kRoot + file);
    auto spaces = lower::lower(task);
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
        const bool multi_exists = has_multi_knob_child(*s, g);
        std::optional<Genome> m = multi_knob(*s, g, rng);
        multi_possible += multi_exists, multi_made += m.has_value(), multi_impossible += !multi_exists;
        if (!multi_exists) {
          EXPECT_FALSE(m.has_value()) << g.to_string() << ": a child where none is legal";
        }
        if (m) {
          EXPECT_TRUE(s->legal(*m)) << m->to_string();
          int differ = 0;
          for (size_t k = 0; k < g.values.size(); ++k) differ += g.values[k] != m->values[k];
          EXPECT_GE(differ, 2);
          EXPECT_LE(differ, 3);
        }
        Genome h = s->random_genome(rng);
        const bool cross_exists = has_crossover_child(*s, g, h);
        std::optional<Genome> x = crossover(*s, g, h, rng);
        cross_possible += cross_exists, cross_made += x.has_value();
        if (!cross_exists) {
          EXPECT_FALSE(x.has_value()) << g.to_string() << " x " << h.to_string();
        }
        if (x) {
          EXPECT_TRUE(s->legal(*x)) << x->to_string();
          EXPECT_FALSE(*x == g);
          EXPECT_FALSE(*x == h);
          for (size_t k = 0; k < g.values.size(); ++k)
            EXPECT_TRUE(x->values[k] == g.values[k] || x->values[k] == h.values[k]) << "knob " << k << " from neither parent";
        }
      }
    }
  }
  std::printf("multi-knob: %d of %d possible made (%d impossible); crossover: %d of %d possible made\n", multi_made,
              multi_possible, multi_impossible, cross_made, cross_possible);
  EXPECT_GE(multi_possible, 40);
  EXPECT_GE(cross_possible, 40);
  EXPECT_GE(multi_made * 10, multi_possible * 9) << "multi_knob misses children the space has";
  EXPECT_GE(cross_made * 10, cross_possible * 9) << "crossover misses children the space has";
}

// A space of hand-written knobs and constraints, rendering nothing.
class TinySpace : public DesignSpace {
 public:
  explicit TinySpace(const Manifest& m) : DesignSpace("tiny", "knobs only", m, {Facts{}}) {}
  std::string render(const Genome&) const override { return ""; }
};

TEST(Mutation, MultiKnobAndCrossoverGiveNothingExactlyWhereTheSpaceHasNoSuchChild) {
  std::mt19937_64 rng(2);
  // Changing two knobs of {0, 0, 0} breaks a + b + c <= 1; one knob alone does not.
  const Manifest sparse = parse_manifest(
      R"({"family": "tiny", "source": "none.cuh", "knobs": {"a": {"values": [0, 1]}, "b": {"values": [0, 1]},
          "c": {"values": [0, 1]}}, "constraints": [{"lhs": "a + b + c", "op": "<=", "rhs": "1", "why": "one"}]})",
      "sparse.json");
  TinySpace s(sparse);
  const Genome zero{"tiny", {0, 0, 0}};
  EXPECT_FALSE(has_multi_knob_child(s, zero));
  EXPECT_FALSE(multi_knob(s, zero, rng).has_value());
  EXPECT_EQ(point_mutations(s, zero).size(), 3u);
  // From {1, 0, 0} and {0, 1, 0}, {0, 0, 0} is legal and neither parent: crossover finds it.
  const Genome a{"tiny", {1, 0, 0}}, b{"tiny", {0, 1, 0}};
  ASSERT_TRUE(has_crossover_child(s, a, b));
  std::optional<Genome> x = crossover(s, a, b, rng);
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(x->values, (std::vector<int64_t>{0, 0, 0}));
  // With a == b, the only mixes of {1, 1} and {2, 2} other than the parents are illegal.
  const Manifest equal = parse_manifest(
      R"({"family": "tiny", "source": "none.cuh", "knobs": {"a": {"values": [0, 1, 2]}, "b": {"values": [0, 1, 2]}},
          "constraints": [{"lhs": "a", "op": "==", "rhs": "b", "why": "equal"}]})",
      "equal.json");
  TinySpace e(equal);
  const Genome one{"tiny", {1, 1}}, two{"tiny", {2, 2}};
  EXPECT_FALSE(has_crossover_child(e, one, two));
  EXPECT_FALSE(crossover(e, one, two, rng).has_value());
  EXPECT_TRUE(has_multi_knob_child(e, one));  // {0, 0} or {2, 2}
  ASSERT_TRUE(multi_knob(e, one, rng).has_value());
}

// A sparse space (one legal genome of 200,000, as a library space's 15 of 108,000 on some shapes):
// uniform draws alone miss it more often than not; random_genome still finds it, every time.
TEST(Mutation, RandomGenomeFindsTheOneLegalGenomeOfASparseSpace) {
  const Manifest one = parse_manifest(
      R"({"family": "tiny", "source": "none.cuh", "knobs": {"a": {"values": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]},
          "b": {"values": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}, "c": {"values": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]},
          "d": {"values": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]},
          "e": {"values": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]}},
          "constraints": [{"lhs": "a + b + c + d + e", "op": "==", "rhs": "7", "why": "one"},
                          {"lhs": "a + b + c + d", "op": "==", "rhs": "0", "why": "e alone"}]})",
      "one.json");
  TinySpace s(one);
  ASSERT_EQ(s.size(), 200000u);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 rng(seed);
    EXPECT_EQ(s.random_genome(rng).values, (std::vector<int64_t>{0, 0, 0, 0, 7})) << "seed " << seed;
  }
  const Manifest none = parse_manifest(
      R"({"family": "tiny", "source": "none.cuh", "knobs": {"a": {"values": [0, 1]}},
          "constraints": [{"lhs": "a", "op": ">", "rhs": "1", "why": "never"}]})",
      "none.json");
  TinySpace empty(none);
  std::mt19937_64 rng(1);
  try {
    empty.random_genome(rng);
    ADD_FAILURE() << "a space without legal genomes gave one";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no legal genome"), std::string::npos) << e.what();
  }
}

TEST(Mutation, PointMutationsAreAllTheLegalSingleKnobChanges) {
  Task task = load_task(kRoot + "tasks/01_relu.json");
  auto spaces = lower::lower(task);
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
  auto spaces = lower::lower(task);
  std::mt19937_64 rng(3);
  Genome g = spaces.front()->random_genome(rng);
  EXPECT_FALSE(crossover(*spaces.front(), g, g, rng).has_value());
}

}  // namespace
}  // namespace kevo::mutate
