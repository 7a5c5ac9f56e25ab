// The multi-knob operator: two or three knobs set to other values at once (mutate::multi_knob).
#include "mutate/mutation.h"
#include "mutate/operator.h"

namespace kevo::mutate {

namespace {

class MultiKnob : public MutationOperator {
 public:
  const char* name() const override { return "multi"; }
  bool applies(const MutationSite&) const override { return true; }
  std::optional<Mutation> draw(const MutationSite& site, std::mt19937_64& rng) const override {
    std::optional<Genome> g = multi_knob(site.space, site.parent, rng);
    if (!g) return std::nullopt;
    return Mutation{std::move(*g), "multi", 0, false};
  }
};

}  // namespace

const MutationOperator& multi_knob_operator() {
  static const MultiKnob op;
  return op;
}

}  // namespace kevo::mutate
