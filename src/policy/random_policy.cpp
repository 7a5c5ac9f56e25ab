// The random policy: pure evolutionary search, uniform over legal mutations.
#include <cmath>
#include <optional>
#include <stdexcept>

#include "policy/policy.h"

namespace kevo::policy {

namespace {

using mutate::DesignSpace;

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
  // An applicable operator drawn by weight; where it finds no child (a multi-knob change or
  // crossover without a legal one), the next is drawn from those left, so a proposal always comes back.
  Proposal one(const Context& ctx, const Request& r, std::mt19937_64& rng) const {
    const auto& spaces = *ctx.spaces;
    const DesignSpace* space = mutate::find_space(spaces, r.parent.genome.space);
    if (!space) throw std::runtime_error("parent of unknown space " + r.parent.genome.space);
    const mutate::MutationSite site{*space, spaces, r.parent.genome, r.mate ? &r.mate->genome : nullptr};
    std::vector<mutate::WeightedOperator> ops;
    for (const mutate::WeightedOperator& o : c_.operators)
      if (o.op->applies(site)) ops.push_back(o);
    while (!ops.empty()) {
      double total = 0;
      for (const auto& o : ops) total += o.weight;
      double pick = std::uniform_real_distribution<double>(0, total)(rng);
      size_t i = 0;
      while (i + 1 < ops.size() && pick >= ops[i].weight) pick -= ops[i++].weight;
      if (std::optional<mutate::Mutation> m = ops[i].op->draw(site, rng)) {
        Proposal p;
        p.op = ops[i].op->name();
        p.parents = {r.parent.variant};
        if (m->from_mate) p.parents.push_back(r.mate->variant);
        p.child = std::move(m->child);
        p.log_prob = std::log(ops[i].weight / total) + m->log_prob;
        p.action = std::move(m->action);
        return p;
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
  p.op = mutate::kReseedOp;
  p.child = space.random_genome(rng);
  p.parents = {parent.variant};
  p.action = "reseed";
  return p;
}

std::unique_ptr<Policy> make_random_policy(const RandomPolicyConfig& config) {
  return std::make_unique<RandomPolicy>(config);
}

}  // namespace kevo::policy
