// Training one policy across tasks by chaining learned campaigns.
#include "search/train.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "core/error.h"

namespace kevo::search {

namespace {

void write_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << bytes;
    if (!f.flush()) throw std::runtime_error(path + ": cannot write the policy");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error(path + ": cannot write the policy");
}

}  // namespace

std::vector<TrainStep> train_policy(const std::string& out, const CampaignConfig& config, int rounds,
                                    const std::vector<std::string>& task_files, VariantEvaluator& evaluator,
                                    const std::function<void(const TrainStep&)>& progress) {
  if (rounds < 1) throw InputError(Location{}, "--rounds", "must be at least 1");
  if (task_files.empty()) throw InputError(Location{}, "", "give at least one task contract");
  const std::string campaign_path = out + ".campaign.h5";
  const std::string init_path = out + ".init";
  std::vector<TrainStep> steps;
  std::string policy;  // the latest checkpoint
  CampaignConfig c = config;
  c.arm = "learned";
  int step = 0;
  for (int round = 0; round < rounds; ++round)
    for (const std::string& task : task_files) {
      c.seed = config.seed + static_cast<uint64_t>(step++);
      if (!policy.empty()) {
        write_atomically(init_path, policy);
        c.policy_init = init_path;
      }
      ::unlink(campaign_path.c_str());
      auto campaign = Campaign::create(campaign_path, c, {task}, evaluator, "kevo train-policy");
      campaign->run();
      const store::CampaignContents& k = campaign->contents();
      const store::CheckpointRecord* last = nullptr;
      for (const auto& cp : k.checkpoints)
        if (cp.kind == "policy" && (!last || cp.generation >= last->generation)) last = &cp;
      if (!last) throw std::runtime_error(task + ": the learned campaign left no policy checkpoint");
      policy = last->bytes;
      write_atomically(out, policy);
      TrainStep s;
      s.round = round;
      s.task = k.tasks.front().name;
      if (!k.generations.empty()) {
        s.evaluations = k.generations.back().evaluations;
        s.best = k.generations.back().best_fitness;
      }
      steps.push_back(s);
      if (progress) progress(s);
    }
  ::unlink(campaign_path.c_str());
  ::unlink(init_path.c_str());
  return steps;
}

}  // namespace kevo::search
