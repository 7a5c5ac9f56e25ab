// `kevo train-policy`: one learned policy trained over many tasks, task after task, each a learned
// campaign that starts from the policy the previous one ended with.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "search/campaign.h"
#include "evaluators/evaluator.h"

namespace kevo::search {

struct TrainStep {
  int round = 0;
  std::string task;
  int64_t evaluations = 0;
  double best = 0;  // the campaign's best fitness
  int64_t landscape = 0;  // measured genomes of the tasks known so far (replays and campaigns): what
                          // the landscape model is fitted to at the end
};

// Runs `rounds` passes over the tasks; each step is a campaign of arm "learned" with `config`'s
// budgets (seed: config.seed + step), written to "<out>.campaign.h5" and removed after. The policy's
// last checkpoint is written to `out` (atomically) after every step, so an interrupted training
// leaves a usable file. `config.policy_init` may name a checkpoint to start from. The policy's
// landscape model is fitted to the tasks' recordings in the replay files before the first campaign
// and to those and every campaign's measurements after the last.
std::vector<TrainStep> train_policy(const std::string& out, const CampaignConfig& config, int rounds,
                                    const std::vector<std::string>& task_files, evaluators::VariantEvaluator& evaluator,
                                    const std::function<void(const TrainStep&)>& progress = {});

}  // namespace kevo::search
