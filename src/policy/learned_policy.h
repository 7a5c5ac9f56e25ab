// The learned policy: a small network scores every legal mutation of a parent from features of
// the task, the parent and the search's progress; a mutation is sampled from the softmax over the
// legal set, and between generations PPO-style updates with group-relative advantages raise the
// probability of what earned reward. LibTorch stays inside learned_policy.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "policy/policy.h"

namespace kevo::policy {

struct LearnedPolicyConfig {
  uint64_t seed = 1;     // initial parameters (when `init` is empty)
  double lr = 3e-3;      // Adam
  double clip = 0.2;     // PPO ratio clipping
  double entropy = 0.01; // entropy bonus
  int epochs = 4;        // gradient steps per generation
  int hidden = 64;       // width of the two hidden layers (a checkpoint brings its own)
  bool frozen = false;   // sample only, never update ("learned-frozen")
  std::string init;      // checkpoint bytes to start from (parameters and optimizer state); empty: fresh
  // The landscape model's weight in the action logits (a mutation whose child it rates one standard
  // deviation better is e^weight times likelier), once the model is trained across tasks.
  double model_weight = 3.0;
};

// One task's measured genomes (fitness 0: invalid), with the task and its design spaces.
struct LandscapeTask {
  const Task* task = nullptr;
  const std::vector<std::unique_ptr<mutate::DesignSpace>>* spaces = nullptr;
  std::vector<Parent> measured;
};

// Fits the landscape model of the checkpoint `c.init` (a fresh policy when empty) to these tasks'
// measurements (log fitness standardised per task; genomes of unknown spaces left out; `steps`
// minibatches of 64) and returns
// the checkpoint with it. Throws std::runtime_error (one line) for a bad checkpoint or no data.
std::string fit_landscape(const LearnedPolicyConfig& c, const std::vector<LandscapeTask>& tasks, int steps = 3000);

// Throws std::runtime_error (one line, "learned policy checkpoint: ...") when `bytes` are not a
// learned policy's checkpoint.
void check_checkpoint(const std::string& bytes);

// Throws std::runtime_error (one line) when `init` is not a learned policy checkpoint.
// Trained across tasks (fit_landscape), its landscape model chooses the seeds of empty islands
// and weighs every mutation by the child it predicts; the run's measurements refine it.
// checkpoint() holds the parameters, the optimizer state and what update() needs of the proposals
// still waiting for their rewards; restore() brings all of it back, or throws std::runtime_error
// (one line) and keeps the policy as it was.
std::unique_ptr<Policy> make_learned_policy(const LearnedPolicyConfig& c);

}  // namespace kevo::policy
