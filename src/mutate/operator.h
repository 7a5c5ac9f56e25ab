// Mutation operators as objects (TVM MetaSchedule's Mutator): each makes a child genome of a
// parent (and of a mate, for an operator of two parents), only ever a legal one; a policy chooses
// among them (the random policy by weight, the learned one by its network) and the campaign file
// records the operator's name with each variant. One operator, one file in mutate/operators/ and
// one line of the registry (operators/registry.cpp).
#pragma once

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "mutate/space.h"

namespace kevo::mutate {

// How a child came to be where no mutation operator made it: a fresh genome, one for an island
// started over, a language model's edit of the source (a free-form child, without a genome).
inline constexpr const char* kSeedOp = "seed";
inline constexpr const char* kReseedOp = "reseed";
inline constexpr const char* kEditOp = "edit";

// What an operator mutates: the parent's genome in its space, among the task's spaces.
struct MutationSite {
  const DesignSpace& space;
  const std::vector<std::unique_ptr<DesignSpace>>& spaces;
  const Genome& parent;
  const Genome* mate = nullptr;  // a genome of the same space and not the parent's; null when there is none
};

// A child: its genome, the mutation in words ("point kVec=4"), its log-probability among the
// operator's choices, and whether the mate is a parent of it.
struct Mutation {
  Genome child;
  std::string action;
  double log_prob = 0;
  bool from_mate = false;
};

class MutationOperator {
 public:
  virtual ~MutationOperator() = default;
  virtual const char* name() const = 0;
  // Whether it can make any child of the site at all.
  virtual bool applies(const MutationSite& site) const = 0;
  // A child drawn with `rng`; nullopt where its attempts found no legal one.
  virtual std::optional<Mutation> draw(const MutationSite& site, std::mt19937_64& rng) const = 0;
  // Every child it can make, for a policy that weighs each (the learned policy's point changes);
  // empty for an operator whose children are drawn, not listed.
  virtual std::vector<Mutation> enumerate(const MutationSite& site) const {
    (void)site;
    return {};
  }
};

// One file each (mutate/operators/).
const MutationOperator& point_operator();         // one knob to another legal value
const MutationOperator& multi_knob_operator();    // two or three knobs at once
const MutationOperator& crossover_operator();     // each knob from the parent or the mate
const MutationOperator& space_switch_operator();  // a random genome of another space of the task

struct WeightedOperator {
  const MutationOperator* op;
  double weight;  // the random policy's: how often it is tried, relative to the others
};
// Every operator a policy may choose, in the order a policy considers them, with its weight.
const std::vector<WeightedOperator>& default_operators();
// The operator of this name, or null.
const MutationOperator* find_operator(const std::string& name);

}  // namespace kevo::mutate
