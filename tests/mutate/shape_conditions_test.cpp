// A genome's constraints over the axes, as a shape-general export checks them: every fact a
// manifest constraint reads has an axis expression that equals the fact on every workload, so the
// conditions hold on every workload and no kernel of a development task is pinned to its
// workloads; knob values are put in and constant parts folded; a condition refuses the shapes the
// kernel would be wrong on.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <string>

#include "core/task.h"
#include "lower/lower.h"
#include "mutate/space.h"
#include "tests/support/contract_files.h"

namespace kevo::mutate {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

std::vector<std::string> all_contracts() {
  std::vector<std::string> out;
  for (const char* folder : {"tasks", "tasks/half", "tests/data/tasks"}) {
    std::vector<std::string> more = testing::contract_files(kRoot, folder);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

int64_t eval_on(const std::string& expr, const Task& t, const Workload& w) {
  return AxisExpr::parse(expr).eval(t.axis_values(w));
}

TEST(ShapeConditions, EveryFactExpressionEqualsTheFactOnEveryWorkload) {
  int spaces = 0, checked = 0;
  for (const std::string& file : all_contracts()) {
    Task t = load_task(kRoot + file);
    for (const auto& s : lower::lower(t)) {
      ++spaces;
      for (size_t w = 0; w < t.workloads.size(); ++w) {
        const Facts& f = s->facts()[w];
        for (const auto& [name, expr] : s->fact_exprs()) {
          if (!f.count(name)) continue;
          EXPECT_EQ(eval_on(expr, t, t.workloads[w]), f.at(name)) << file << " " << s->id() << " fact " << name << " = " << expr;
          ++checked;
        }
        for (const auto& [name, exprs] : s->fact_maxima()) {
          int64_t most = INT64_MIN;
          for (const std::string& e : exprs) most = std::max(most, eval_on(e, t, t.workloads[w]));
          EXPECT_EQ(most, f.at(name)) << file << " " << s->id() << " fact " << name << " (the largest)";
          ++checked;
        }
        for (const auto& [name, exprs] : s->fact_gcds()) {
          int64_t g = 0;
          for (const std::string& e : exprs) g = std::gcd(g, eval_on(e, t, t.workloads[w]));
          EXPECT_EQ(g, f.at(name)) << file << " " << s->id() << " fact " << name << " (the gcd)";
          ++checked;
        }
        for (const ShapeCondition& a : s->assumptions())
          EXPECT_TRUE(a.holds(t.axis_values(t.workloads[w]))) << file << " " << s->id() << ": " << a.text();
      }
    }
  }
  EXPECT_GT(spaces, 30);
  EXPECT_GT(checked, 300);
}

TEST(ShapeConditions, LegalGenomesOfEverySpaceHaveConditionsThatHoldOnEveryWorkloadAndPinNothing) {
  std::mt19937_64 rng(20261203);
  int genomes = 0;
  for (const std::string& file : all_contracts()) {
    Task t = load_task(kRoot + file);
    for (const auto& s : lower::lower(t)) {
      for (int i = 0; i < 8; ++i) {
        Genome g = s->random_genome(rng);
        ShapeConditions c = shape_conditions(*s, g);
        EXPECT_TRUE(c.pinned.empty()) << file << " " << g.to_string() << " pins " << c.pinned.front();
        for (const ShapeCondition& cond : c.conditions) {
          EXPECT_FALSE(cond.lhs.empty()) << g.to_string();
          for (const std::string* side : {&cond.lhs, &cond.rhs}) {
            const AxisExpr e = AxisExpr::parse(*side);
            for (const std::string& n : e.names())
              EXPECT_TRUE(std::any_of(t.axes.begin(), t.axes.end(), [&](const Axis& a) { return a.name == n; }))
                  << file << " " << g.to_string() << ": " << cond.text() << " reads " << n << ", no axis";
          }
          for (const Workload& w : t.workloads)
            EXPECT_TRUE(cond.holds(t.axis_values(w))) << file << " " << g.to_string() << ": " << cond.text();
        }
        ++genomes;
      }
    }
  }
  EXPECT_GT(genomes, 240);
}

// relu over [B, D]: elementwise with kVec = 4 needs B * D % 4 == 0; the knob-only constraints are gone.
TEST(ShapeConditions, KnobsArePutInAndTheConditionsRefuseShapesTheKernelWouldBeWrongOn) {
  Task t = load_task(kRoot + "tasks/01_relu.json");
  auto spaces = lower::lower(t);
  const DesignSpace* ew = nullptr;
  for (const auto& s : spaces)
    if (s->manifest().family == "elementwise") ew = s.get();
  ASSERT_NE(ew, nullptr);
  Genome g{ew->id(), {}};
  for (const Knob& k : ew->knobs()) g.values.push_back(k.name == "kVec" ? 4 : k.values.front());
  ASSERT_TRUE(ew->legal(g));
  ShapeConditions c = shape_conditions(*ew, g);
  ASSERT_TRUE(c.pinned.empty());
  bool vec = false;
  for (const ShapeCondition& cond : c.conditions) {
    EXPECT_EQ(cond.text().find("kVec"), std::string::npos) << cond.text();
    EXPECT_EQ(cond.text().find("max_threads"), std::string::npos) << cond.text();
    vec |= cond.why.find("vector") != std::string::npos;
  }
  ASSERT_TRUE(vec) << "the vector-width constraint";
  auto all_hold = [&](int64_t b, int64_t d) {
    for (const ShapeCondition& cond : c.conditions)
      if (!cond.holds({{"B", b}, {"D", d}})) return false;
    return true;
  };
  EXPECT_TRUE(all_hold(16, 16384));
  EXPECT_TRUE(all_hold(3, 4));
  EXPECT_FALSE(all_hold(3, 5));  // 15 elements: the last vector would run past the end
  EXPECT_FALSE(all_hold(1, 1));
}

}  // namespace
}  // namespace kevo::mutate
