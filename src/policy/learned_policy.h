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
};

// Throws std::runtime_error (one line) when `init` is not a learned policy checkpoint.
// checkpoint() holds the parameters, the optimizer state and what update() needs of the proposals
// still waiting for their rewards; restore() brings all of it back, or throws std::runtime_error
// (one line) and keeps the policy as it was.
std::unique_ptr<Policy> make_learned_policy(const LearnedPolicyConfig& c);

}  // namespace kevo::policy
