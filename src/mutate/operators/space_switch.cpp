// The space switch: a random legal genome of another design space of the task, the space drawn
// uniformly.
#include <cmath>

#include "mutate/operator.h"

namespace kevo::mutate {

namespace {

class SpaceSwitch : public MutationOperator {
 public:
  const char* name() const override { return "space_switch"; }
  bool applies(const MutationSite& site) const override { return site.spaces.size() > 1; }
  std::optional<Mutation> draw(const MutationSite& site, std::mt19937_64& rng) const override {
    std::vector<const DesignSpace*> others;
    for (const auto& s : site.spaces)
      if (s.get() != &site.space) others.push_back(s.get());
    if (others.empty()) return std::nullopt;
    const DesignSpace* to = others[std::uniform_int_distribution<size_t>(0, others.size() - 1)(rng)];
    Mutation m;
    m.child = to->random_genome(rng);
    m.action = "space_switch " + to->id();
    m.log_prob = -std::log(static_cast<double>(others.size()));
    return m;
  }
};

}  // namespace

const MutationOperator& space_switch_operator() {
  static const SpaceSwitch op;
  return op;
}

}  // namespace kevo::mutate
