// The random policy: it draws among the operators it is given by weight, and a new operator (one
// class and one line of mutate/operators/registry.cpp) is chosen and recorded by its name like the
// others: the toy here is one it has never seen.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/task.h"
#include "lower/lower.h"
#include "mutate/mutation.h"
#include "mutate/operator.h"
#include "mutate/space.h"
#include "policy/policy.h"

namespace kevo::policy {
namespace {

using namespace kevo::mutate;

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

int differing(const Genome& a, const Genome& b) {
  int n = 0;
  for (size_t k = 0; k < a.values.size(); ++k) n += a.values[k] != b.values[k];
  return n;
}

// A toy operator: the parent's first knob moved to the next legal value of its domain.
class NextValue : public MutationOperator {
 public:
  const char* name() const override { return "next_value"; }
  bool applies(const MutationSite& site) const override { return site.space.knobs().front().values.size() > 1; }
  std::optional<Mutation> draw(const MutationSite& site, std::mt19937_64&) const override {
    const Knob& knob = site.space.knobs().front();
    auto at = std::find(knob.values.begin(), knob.values.end(), site.parent.values.front());
    for (auto v = at + 1; v != knob.values.end(); ++v) {
      Genome child = apply(site.parent, {{0, *v}});
      if (site.space.legal(child)) return Mutation{child, "next_value " + knob.name, 0, false};
    }
    return std::nullopt;
  }
};

TEST(RandomPolicy, ANewOperatorIsChosenAndRecordedByItsName) {
  const Task task = load_task(kRoot + "tasks/01_relu.json");
  const auto spaces = lower::lower(task);
  const NextValue toy;
  RandomPolicyConfig c;
  c.operators = {{&toy, 1}};
  auto random = make_random_policy(c);
  std::mt19937_64 rng(5);
  Context ctx;
  ctx.task = &task;
  ctx.spaces = &spaces;
  int toy_children = 0;
  for (int i = 0; i < 20; ++i) {
    Request r;
    r.parent.variant = i;
    r.parent.genome = spaces.front()->random_genome(rng);
    for (const Proposal& p : random->propose(ctx, {r}, rng)) {
      if (p.op != "next_value") {
        EXPECT_EQ(p.op, kReseedOp) << "only the toy is offered; a parent it cannot move is re-seeded";
        continue;
      }
      ++toy_children;
      EXPECT_EQ(p.action.rfind("next_value", 0), 0u);
      EXPECT_EQ(differing(p.child, r.parent.genome), 1);
    }
  }
  EXPECT_GT(toy_children, 0);
}

}  // namespace
}  // namespace kevo::policy
