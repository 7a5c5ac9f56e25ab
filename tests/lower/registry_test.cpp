// The family registry as a new family meets it: lower() asks the families of a list in order, a
// family is one entry of that list, and the baseline joins only where the others leave too little
// room to search.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/task.h"
#include "lower/families.h"
#include "lower/lower.h"
#include "mutate/space.h"

namespace kevo::lower {

namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

// A toy family: one space over the elementwise family's manifest (a real family brings its own
// folder in templates/), serving every task with a single output.
class ToySpace : public DesignSpace {
 public:
  explicit ToySpace(const TaskGraphPtr& tg)
      : DesignSpace("toy/copy", "a toy family's one space", "elementwise", facts_of(*tg)), tg_(tg) {}
  std::string render(const Genome& g) const override {
    return candidate_text(tg_->task(), "toy", {{"steps", nlohmann::json::array()}}, "toy " + g.to_string(), "");
  }

 private:
  static std::vector<Facts> facts_of(const TaskGraph& tg) {
    std::vector<Facts> facts;
    for (size_t w = 0; w < tg.workloads(); ++w) {
      Facts f = device_facts();
      f["n"] = tg.product_value(w, tg.output(), 0, tg.rank(tg.output()));
      facts.push_back(f);
    }
    return facts;
  }
  TaskGraphPtr tg_;
};

std::vector<std::unique_ptr<DesignSpace>> lower_toy(const TaskGraphPtr& tg) {
  std::vector<std::unique_ptr<DesignSpace>> out;
  if (tg->one_computed_output()) out.push_back(std::make_unique<ToySpace>(tg));
  return out;
}

std::vector<std::string> ids(const std::vector<std::unique_ptr<DesignSpace>>& spaces) {
  std::vector<std::string> out;
  for (const auto& s : spaces) out.push_back(s->id());
  return out;
}

TEST(FamilyRegistry, NamesEveryFamilyOnceWithTheGenericBaselineLast) {
  const std::vector<Family>& families = default_families();
  std::set<std::string> names;
  for (const Family& f : families) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name << " is listed twice";
    EXPECT_EQ(f.baseline, f.name == "generic") << f.name;
  }
  EXPECT_EQ(families.back().name, "generic");
}

TEST(FamilyRegistry, AFamilyAddedToTheListIsLoweredInItsPlace) {
  const Task task = load_task(kRoot + "tasks/01_relu.json");
  const auto before = ids(lower(task));
  ASSERT_FALSE(before.empty());
  std::vector<Family> families = default_families();
  families.insert(families.begin() + 1, Family{"toy", lower_toy});  // right after elementwise
  const auto after = ids(lower(task, "", families));
  // The toy's space follows the elementwise family's, and the rest is as it was.
  std::vector<std::string> expected = before;
  const auto first_non_elementwise =
      std::find_if(expected.begin(), expected.end(), [](const std::string& id) { return id.rfind("elementwise", 0) != 0; });
  expected.insert(first_non_elementwise, "toy/copy");
  EXPECT_EQ(after, expected);
  // Its spaces render through the kit like any family's.
  const auto spaces = lower(task, "", families);
  const auto toy = std::find_if(spaces.begin(), spaces.end(), [](const auto& s) { return s->id() == "toy/copy"; });
  ASSERT_NE(toy, spaces.end());
  std::mt19937_64 rng(1);
  EXPECT_NE((*toy)->render((*toy)->random_genome(rng)).find("/* kevo-plan"), std::string::npos);
}

TEST(FamilyRegistry, TheBaselineJoinsOnlyWhereNoOtherFamilyServesTheTask) {
  const Task task = load_task(kRoot + "tasks/01_relu.json");
  const auto with_all = ids(lower(task));
  EXPECT_EQ(std::count(with_all.begin(), with_all.end(), "generic"), 0) << "relu has the elementwise family's room";
  // Without the specialised families, the baseline serves it alone.
  std::vector<Family> only_baseline;
  for (const Family& f : default_families())
    if (f.baseline) only_baseline.push_back(f);
  EXPECT_EQ(ids(lower(task, "", only_baseline)), std::vector<std::string>{"generic"});
}

}  // namespace

}  // namespace kevo::lower
