// A campaign's configuration (what `kevo run` and `kevo ablate` set and the campaign file keeps
// with each run), its checks, and its JSON form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/llm_client.h"
#include "policy/llm_settings.h"

namespace kevo::search {

// The llm arm's settings (one type, the policy room's).
using policy::LlmSettings;

struct CampaignConfig {
  std::string arm = "random";          // the policy: random, learned, learned-frozen, llm
  std::string policy_init;             // learned arms: a policy checkpoint file to start from (learned-frozen needs one)
  uint64_t seed = 1;
  int population = 16;                 // offspring per island per generation (and seeds per island)
  int islands = 2;
  int64_t budget_evals = 500;          // per task: variants sent to the evaluator (duplicates are free)
  int max_generations = 0;             // 0: no limit
  double wall_seconds = 0;             // 0: no limit (measured from the start of this process)
  std::string selection = "tournament";  // or "proportional"
  int tournament = 3;
  int migration_interval = 4;          // generations between ring migrations
  int migrants = 1;                    // elites each island sends to the next
  int stagnation = 8;                  // generations without a better island best before it is re-seeded
  int occupancy_bands = 4;             // MAP-Elites: cells are (space, occupancy band)
  int dedupe_retries = 8;              // re-proposals before a duplicate is accepted as such
  std::string reward = "bucketed";     // "bucketed" (-1 invalid, 0, 1 for >=5% over the parent, 2 for a new best) or "log_speedup"
  // /checkpoints keeps the policies after every checkpoint_every-th generation (and the last);
  // 0: the last only. Kept in the JSON only when not the default (files stay as they were).
  int checkpoint_every = 10;
  std::vector<std::string> replay;     // replay files; empty: the GPU
  // The GPU evaluator's settings, kept so that `kevo resume` measures the same way.
  // Screening (docs/evaluation.md#screening): each candidate measured cheaply first and verified
  // fully only where it could enter its island's archive. `kevo run` turns it on where it measures
  // on GPUs (--screen auto); replay answers as recorded unless it is on.
  bool screen = false;
  int trials = 2;                      // correctness trials per workload
  double max_seconds = 2;              // timing repetitions per workload, at most
  std::string torch_baseline;          // tools/torch_baseline.py report; empty: none
  LlmSettings llm;                     // the llm arm's
};

// Checks the values; throws InputError ("--population: ...") naming the first bad one.
void validate(const CampaignConfig& c);
std::string config_to_json(const CampaignConfig& c);
CampaignConfig config_from_json(const std::string& text);  // throws InputError

// The llm arm's settings as its client and its policy take them.

}  // namespace kevo::search
