// The crossover operator: each knob from the parent or the mate (mutate::crossover), a child equal
// to neither.
#include "mutate/mutation.h"
#include "mutate/operator.h"

namespace kevo::mutate {

namespace {

class Crossover : public MutationOperator {
 public:
  const char* name() const override { return "crossover"; }
  bool applies(const MutationSite& site) const override {
    return site.mate && site.mate->space == site.space.id() && !(*site.mate == site.parent);
  }
  std::optional<Mutation> draw(const MutationSite& site, std::mt19937_64& rng) const override {
    if (!applies(site)) return std::nullopt;
    std::optional<Genome> g = crossover(site.space, site.parent, *site.mate, rng);
    if (!g) return std::nullopt;
    return Mutation{std::move(*g), "crossover", 0, true};
  }
};

}  // namespace

const MutationOperator& crossover_operator() {
  static const Crossover op;
  return op;
}

}  // namespace kevo::mutate
