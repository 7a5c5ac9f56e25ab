// The Policy interface: the mutation operator of the search. A policy sees a parent (its genome and
// measurement) and proposes a legal child with the log-probability of the mutation it sampled;
// between generations it may learn from the rewards its proposals earned.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/task.h"
#include "mutate/mutation.h"
#include "mutate/operator.h"
#include "mutate/space.h"

namespace kevo::policy {

// What a policy knows of one parent.
struct Parent {
  int64_t variant = -1;
  mutate::Genome genome;
  double fitness = 0;          // speedup over eager on the weighted mix of timed workloads (core/fitness.h)
  double floor_fraction = 0;   // DRAM floor / measured time on the largest workload (0: unknown)
  int registers = 0, shared_bytes = 0, spill_bytes = 0;
  double occupancy = 0;
  // For policies that edit source (SourceEditor): the candidate text and its measurement in words
  // (status, error, per-workload times and speedups, resources). Empty otherwise.
  std::string source, report;
};

// The search's state a policy may condition on.
struct Context {
  const Task* task = nullptr;
  const std::vector<std::unique_ptr<mutate::DesignSpace>>* spaces = nullptr;
  int generation = 0;
  int64_t evaluations = 0, budget = 0;
  double best_fitness = 0;
  std::string target;  // the GPU the evaluator measures on ("NVIDIA H200 (sm_90a)"); empty on replay
};

// One child wanted: its parent, and another elite of the island a crossover may pair it with.
struct Request {
  Parent parent;
  std::optional<Parent> mate;
  std::vector<Parent> inspirations;  // the island's best elites, for source editors (best first)
};

struct Proposal {
  mutate::Genome child;
  std::string op;                // the mutation operator's name (mutate/operator.h), or seed, reseed, edit
  std::vector<int64_t> parents;  // variant ids
  double log_prob = 0;           // of the sampled mutation under the policy
  std::string action;            // the mutation in words: "point kVec=4", "space_switch reduce_rows"
  int64_t token = -1;            // the policy's key to what it sampled (comes back in Transition); -1: none
  std::string source;            // a free-form child's candidate text (op Edit; child.space is empty)
  int64_t sample = -1;           // a source editor's: index into its next take_samples() list, the completion it came from
};

// A proposal with the fitness its child earned (0: invalid or unmeasured) and the reward.
struct Transition {
  Proposal proposal;
  Parent parent;
  double child_fitness = 0;
  bool valid = false;
  double reward = 0;
  int64_t group = 0;  // children of one parent in one generation share a group
};

// What the search tells a policy after a generation was measured.
struct Feedback {
  // Every genome of the run measured in the generation, seeds included (fitness 0: invalid);
  // replays' unrecorded genomes are left out. For policies that model the landscape.
  std::vector<Parent> measured;
  // The generation's proposals with the rewards their children earned.
  std::vector<Transition> transitions;
  bool empty() const { return measured.empty() && transitions.empty(); }
};

// What every policy implements. A policy that also edits source implements SourceEditor
// (policy/source_editor.h) beside it.
class Policy {
 public:
  virtual ~Policy() = default;
  // One legal proposal per request, in order.
  virtual std::vector<Proposal> propose(const Context& context, const std::vector<Request>& requests,
                                        std::mt19937_64& rng) = 0;
  // The seeds of an empty (or re-seeded) island: a policy with a prior may choose them. Fewer than
  // `n` (the default: none) leaves the seeding to the search, uniform over the legal genomes.
  virtual std::vector<Proposal> seeds(const Context& context, int n, std::mt19937_64& rng) { return {}; }
  // Learns from a measured generation (called when the feedback is not empty); pure search ignores it.
  virtual void update(const Context& context, const Feedback& feedback) {}
  // Parameters and optimizer state, for the campaign file; empty for a stateless policy.
  virtual std::string checkpoint() const { return {}; }
  virtual void restore(const std::string& bytes) {}
};

// The fallback when no mutation of the parent is legal: a fresh genome of its space (op Reseed;
// the search recognises it as a duplicate when it is one).
Proposal reseed_proposal(const mutate::DesignSpace& space, const Parent& parent, std::mt19937_64& rng);

// Relative weights of the operators; an operator that cannot apply (a single space, no mate of
// the same space) is left out and the others renormalised.
struct RandomPolicyConfig {
  std::vector<mutate::WeightedOperator> operators = mutate::default_operators();
};

// Pure search: an operator by weight, then uniform over that operator's legal mutations.
std::unique_ptr<Policy> make_random_policy(const RandomPolicyConfig& config = {});

}  // namespace kevo::policy
