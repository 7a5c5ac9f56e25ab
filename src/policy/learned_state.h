// The learned policy's state (internal to src/policy/; brings in LibTorch): its networks, Adam,
// the proposals waiting for their rewards, and the checkpoint format that holds all of it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "policy/learned_features.h"
#include "policy/learned_policy.h"

namespace kevo::policy::learned {

// The mutation network, and the landscape model of the same shape over genome rows.
struct NetImpl : torch::nn::Module {
  NetImpl(int in, int hidden) {
    l1 = register_module("l1", torch::nn::Linear(in, hidden));
    l2 = register_module("l2", torch::nn::Linear(hidden, hidden));
    l3 = register_module("l3", torch::nn::Linear(hidden, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) { return l3(torch::tanh(l2(torch::tanh(l1(x))))).squeeze(-1); }
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
};
TORCH_MODULE(Net);

// Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) from our own RNG (torch's initialisers differ between
// versions); the output layer starts small so the first policy is close to uniform.
void init_parameters(Net& net, uint64_t seed);

// A proposal waiting for its reward: what update() needs to score it again.
struct Pending {
  int generation = 0;
  Situation s;
  int actions = 0;             // how many there were (a check that they re-enumerate alike)
  std::vector<int> excluded;   // masked out when it was sampled
  int chosen = 0;
  std::vector<int> picks;      // a multi-knob change: the point actions it combined, in order
  double log_prob = 0;         // of `chosen` (and `picks`) under the network and the offsets
  std::vector<float> offsets;  // the landscape model's term per action (empty: none)
};

// Everything a checkpoint holds, parsed before any of it replaces the policy's state.
struct State {
  int hidden = 64;
  Net net{nullptr};
  // The landscape model: trained across tasks by fit_landscape() (model_examples genomes), then
  // fine-tuned on the run's own measurements (`observed`: genome, fitness; 0 for an invalid one).
  Net model{nullptr};
  int64_t model_examples = 0;
  std::vector<std::pair<mutate::Genome, double>> observed;
  std::unique_ptr<torch::optim::Adam> adam;
  int64_t next_token = 0, updates = 0;
  std::map<int64_t, Pending> pending;
  std::deque<uint64_t> children;  // in the order proposed, oldest first
  std::unordered_set<uint64_t> child_set;
};

std::unique_ptr<torch::optim::Adam> make_adam(Net& net, double lr);

// Fresh parameters from c.seed; throws std::runtime_error for a bad hidden width.
State fresh_state(const LearnedPolicyConfig& c);

// The checkpoint:
// "kevo-learned-policy 2 <meta bytes> <tensor bytes> <sha256 of both>\n", then the metadata (JSON:
// shapes, counters, proposals waiting for rewards, the hashes of the children proposed so far,
// Adam's step per parameter, the list of tensors with their shapes), then the tensors as raw
// little-endian float32: the network ("net.*"), the landscape model ("model.*") and Adam's moments
// ("adam.*"). A checkpoint written by one LibTorch reads with any other. Version 1 (still read)
// held a torch archive instead, which only the LibTorch version that wrote it reads safely.
std::string serialize(const State& st);
// Throws std::runtime_error (one line, "learned policy checkpoint: ...") for anything else.
State deserialize(const std::string& bytes, double lr);

}  // namespace kevo::policy::learned
