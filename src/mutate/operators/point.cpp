// The point operator: one knob set to another value whose child is legal.
#include <cmath>

#include "mutate/mutation.h"
#include "mutate/operator.h"

namespace kevo::mutate {

namespace {

class Point : public MutationOperator {
 public:
  const char* name() const override { return "point"; }
  bool applies(const MutationSite& site) const override { return !point_mutations(site.space, site.parent).empty(); }

  // One of the legal single-knob changes, uniformly.
  std::optional<Mutation> draw(const MutationSite& site, std::mt19937_64& rng) const override {
    const std::vector<KnobChange> points = point_mutations(site.space, site.parent);
    if (points.empty()) return std::nullopt;
    const KnobChange c = points[std::uniform_int_distribution<size_t>(0, points.size() - 1)(rng)];
    Mutation m = of(site, c);
    m.log_prob = -std::log(static_cast<double>(points.size()));
    return m;
  }

  std::vector<Mutation> enumerate(const MutationSite& site) const override {
    std::vector<Mutation> out;
    for (const KnobChange& c : point_mutations(site.space, site.parent)) out.push_back(of(site, c));
    return out;
  }

 private:
  static Mutation of(const MutationSite& site, const KnobChange& c) {
    Mutation m;
    m.child = apply(site.parent, {c});
    m.action = "point " + site.space.knobs()[static_cast<size_t>(c.knob)].name + "=" + std::to_string(c.value);
    return m;
  }
};

}  // namespace

const MutationOperator& point_operator() {
  static const Point op;
  return op;
}

}  // namespace kevo::mutate
