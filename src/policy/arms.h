// The policies a campaign's arms name ("random", "learned", "learned-frozen", "llm"), made by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policy/llm_client.h"
#include "policy/llm_policy.h"
#include "policy/policy.h"

namespace kevo::policy {

struct ArmOptions {
  uint64_t seed = 1;                     // learned policies' initial parameters (when `init` is empty)
  std::string init;                      // a learned policy checkpoint to start from; empty: fresh
  LlmSettings llm;                       // the llm arm's (its mix with template mutations: llm.mix)
  std::shared_ptr<LlmClient> llm_client; // the llm arm's endpoint, shared by every run of a campaign
};

// An arm: the policy a campaign's run uses, and what it needs. The arms are listed once
// (arms.cpp); the campaign's configuration, its runs and the CLI ask this list, not the name.
struct Arm {
  std::string name;
  bool learned = false;  // a learned policy (starts from a checkpoint where one is given)
  bool frozen = false;   // never updated: needs a checkpoint (--policy-init)
  bool llm = false;      // asks the model behind --llm-url; its template policy is llm.mix's
};

// The arms, in the order help texts list them.
const std::vector<Arm>& arms();
// The arm named so, or null.
const Arm* find_arm(const std::string& name);
// "unknown policy 'x' (have: random, learned, learned-frozen, llm)".
std::string unknown_arm(const std::string& name);
// Whether the arm asks the model (false for an unknown name).
bool arm_uses_llm(const std::string& name);
// Whether the arm's policy (or the llm arm's template policy, by `llm_mix`) is a learned one,
// which starts from a checkpoint when one is given.
bool arm_is_learned(const std::string& arm, const std::string& llm_mix);

// The arm's policy. Throws std::invalid_argument for an unknown arm and std::runtime_error (one
// line) for a checkpoint that is not a learned policy's or an llm arm without a client.
std::unique_ptr<Policy> make_policy(const std::string& arm, const ArmOptions& options);

}  // namespace kevo::policy
