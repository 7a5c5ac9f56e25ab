// The learned policy's features (internal to src/policy/; brings in LibTorch): the layout of a
// mutation's row (task summary, parent measurement and knob positions, search progress, the
// mutation itself, knobs keyed by hashed *name* so that what is learned carries over between
// spaces and tasks) and of a genome's row for the landscape model, and sampling from a softmax
// over a masked set of actions with the campaign's RNG.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "core/task.h"
#include "mutate/mutation.h"
#include "mutate/operator.h"
#include "mutate/space.h"
#include "policy/policy.h"

namespace kevo::policy::learned {

// A knob is keyed by two hashes of its name into two blocks of buckets, so two names rarely
// share both slots.
constexpr int kBuckets = 16;
constexpr int kSlots = 2 * kBuckets;
constexpr int kOpBuckets = 8;
constexpr int kTaskFeatures = kOpBuckets + 5;
constexpr int kParentFeatures = 7;
constexpr int kKnobStateFeatures = 2 * kSlots;  // position, presence
constexpr int kProgressFeatures = 4;
constexpr int kStateFeatures = kTaskFeatures + kParentFeatures + kKnobStateFeatures + kProgressFeatures;
constexpr int kOps = 4;                         // learned_operators(), one-hot
constexpr int kPointScalars = 6;
// The value taken ("kVec=4"), keyed like a knob by two hashes: what one value of one knob does
// (fail, spill, win) is learned directly and carries over to every space with that knob.
constexpr int kValueBuckets = 32;
constexpr int kValueSlots = 2 * kValueBuckets;
constexpr int kActionFeatures = kOps + kSlots + kPointScalars + 2 * kSlots + kValueSlots + 2;
constexpr int kFeatures = kStateFeatures + kActionFeatures;
// The landscape model (the policy's value estimate of a genome): the task summary, the space's
// family, every knob's position (as in the state) and every knob=value pair in its own buckets.
constexpr int kFamilyBuckets = 8;
constexpr int kGenomeValueBuckets = 128;
constexpr int kModelFeatures = kTaskFeatures + 2 * kFamilyBuckets + kKnobStateFeatures + 2 * kGenomeValueBuckets;


// Uniform in [0, 1) from the raw engine: the same numbers with every standard library.
inline double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

inline double clamp(double x, double lo, double hi) { return std::isfinite(x) ? std::min(hi, std::max(lo, x)) : lo; }

// A hash of the genome (space and values), for remembering the children proposed.
uint64_t genome_hash(const mutate::Genome& g);

// Op kinds, sizes, FLOPs and arithmetic intensity of the task's largest workload.
std::vector<float> task_summary(const Task& t);

// What a proposal saw: the parent and the search's state when the mutation was drawn.
struct Situation {
  Parent parent;
  bool can_cross = false;
  double mate_log_ratio = 0, mate_distance = 0;
  double progress = 0, best_log_ratio = 0;
  int spaces = 1;
};

// The mutation operators the policy chooses among (mutate/operator.h), in the order of their
// one-hot features: the point operator's changes are actions one by one, each other operator one
// action. A checkpoint holds a policy trained with these; an operator added to the registry is
// offered by the random policy at once, and by this one when it joins this list (its features grow).
enum LearnedOp : int { kPointOp = 0, kMultiOp = 1, kCrossoverOp = 2, kSpaceSwitchOp = 3 };
const std::vector<const mutate::MutationOperator*>& learned_operators();  // kOps of them, by LearnedOp

// One legal mutation of a parent: a point change (knob, value) or one of the other operators.
struct Action {
  LearnedOp op = kPointOp;
  int knob = -1;
  int64_t value = 0;
};

// Every legal mutation of the situation's parent: each point change, one multi-knob change, one
// crossover (when the mate allows it), one space switch (when there are other spaces).
std::vector<Action> actions_of(const mutate::DesignSpace& space, const Situation& s);

// One row of features per action (kFeatures floats each).
torch::Tensor features(const std::vector<float>& task, const mutate::DesignSpace& space, const Situation& s,
                       const std::vector<Action>& actions);

// The landscape model's rows for these genomes of `space` (kModelFeatures floats each).
torch::Tensor genome_rows(const std::vector<float>& task, const mutate::DesignSpace& space,
                          const std::vector<mutate::Genome>& gs);

// Appends one task's measured genomes (genome, fitness; 0 when invalid) as the landscape model's
// rows and standardised targets; a genome of a space the task does not have is left out.
void add_examples(const std::vector<float>& task, const std::vector<std::unique_ptr<mutate::DesignSpace>>& spaces,
                  const std::vector<std::pair<const mutate::Genome*, double>>& measured,
                  std::vector<torch::Tensor>& rows, std::vector<float>& targets);

// The point actions a multi-knob change may pick after `so_far`: one change per knob.
std::vector<char> pickable(const std::vector<Action>& actions, const std::vector<int>& so_far);
// log-softmax of `logits[pick]` among `ok`.
double log_prob_among(const float* logits, const std::vector<char>& ok, size_t pick);
// Inverse CDF over `ok` with one uniform draw; ok must allow at least one.
size_t draw(const float* logits, const std::vector<char>& ok, std::mt19937_64& rng);

}  // namespace kevo::policy::learned
