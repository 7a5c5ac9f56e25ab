// The random policy: pure evolutionary search, uniform over legal mutations.
#include <cmath>
#include <stdexcept>

#include "policy/policy.h"

namespace kevo::policy {

namespace {

using mutate::DesignSpace;
using mutate::Genome;
using mutate::Operator;

class RandomPolicy : public Policy {
 public:
  explicit RandomPolicy(RandomPolicyConfig c) : c_(c) {}

  std::vector<Proposal> propose(const Context& ctx, const std::vector<Request>& requests,
                                std::mt19937_64& rng) override {
    std::vector<Proposal> out;
    for (const Request& r : requests) out.push_back(one(ctx, r, rng));
    return out;
  }

 private:
  Proposal one(const Context& ctx, const Request& r, std::mt19937_64& rng) const {
    const auto& spaces = *ctx.spaces;
    const DesignSpace* space = mutate::find_space(spaces, r.parent.genome.space);
    if (!space) throw std::runtime_error("parent of unknown space " + r.parent.genome.space);
    std::vector<mutate::KnobChange> points = mutate::point_mutations(*space, r.parent.genome);
    const bool can_cross = r.mate && r.mate->genome.space == space->id() && !(r.mate->genome == r.parent.genome);
    // An operator may still fail to find a child (multi-knob or crossover with no legal child):
    // then the next candidate operator is tried, so a proposal always comes back.
    struct Choice { Operator op; double w; };
    std::vector<Choice> ops;
    if (!points.empty()) ops.push_back({Operator::Point, c_.point});
    ops.push_back({Operator::Multi, c_.multi});
    if (can_cross) ops.push_back({Operator::Crossover, c_.crossover});
    if (spaces.size() > 1) ops.push_back({Operator::SpaceSwitch, c_.space_switch});
    while (!ops.empty()) {
      double total = 0;
      for (const Choice& o : ops) total += o.w;
      double pick = std::uniform_real_distribution<double>(0, total)(rng);
      size_t i = 0;
      while (i + 1 < ops.size() && pick >= ops[i].w) pick -= ops[i++].w;
      const double op_logp = std::log(ops[i].w / total);
      Proposal p;
      p.op = ops[i].op;
      p.parents = {r.parent.variant};
      switch (p.op) {
        case Operator::Point: {
          auto c = points[std::uniform_int_distribution<size_t>(0, points.size() - 1)(rng)];
          p.child = mutate::apply(r.parent.genome, {c});
          p.log_prob = op_logp - std::log(static_cast<double>(points.size()));
          p.action = "point " + space->knobs()[c.knob].name + "=" + std::to_string(c.value);
          return p;
        }
        case Operator::Multi:
          if (auto g = mutate::multi_knob(*space, r.parent.genome, rng)) {
            p.child = *g;
            p.log_prob = op_logp;
            p.action = "multi";
            return p;
          }
          break;
        case Operator::Crossover:
          if (auto g = mutate::crossover(*space, r.parent.genome, r.mate->genome, rng)) {
            p.child = *g;
            p.parents.push_back(r.mate->variant);
            p.log_prob = op_logp;
            p.action = "crossover";
            return p;
          }
          break;
        default: {
          std::vector<const DesignSpace*> others;
          for (const auto& s : spaces)
            if (s.get() != space) others.push_back(s.get());
          const DesignSpace* to = others[std::uniform_int_distribution<size_t>(0, others.size() - 1)(rng)];
          p.child = to->random_genome(rng);
          p.log_prob = op_logp - std::log(static_cast<double>(others.size()));
          p.action = "space_switch " + to->id();
          return p;
        }
      }
      ops.erase(ops.begin() + static_cast<long>(i));
    }
    // A space whose only legal genome is the parent: re-seed it (a duplicate the search will recognise).
    return reseed_proposal(*space, r.parent, rng);
  }

  RandomPolicyConfig c_;
};

}  // namespace

Proposal reseed_proposal(const mutate::DesignSpace& space, const Parent& parent, std::mt19937_64& rng) {
  Proposal p;
  p.op = mutate::Operator::Reseed;
  p.child = space.random_genome(rng);
  p.parents = {parent.variant};
  p.action = "reseed";
  return p;
}

std::unique_ptr<Policy> make_random_policy(const RandomPolicyConfig& config) {
  return std::make_unique<RandomPolicy>(config);
}

}  // namespace kevo::policy
