// Training one policy across tasks by chaining learned campaigns.
#include "search/train.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "core/error.h"
#include "core/task.h"
#include "lower/lower.h"
#include "mutate/space.h"
#include "policy/learned_policy.h"
#include "search/run.h"
#include "store/campaign_file.h"

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

// What the landscape model learns from: per task, every measured genome (fitness 0 when
// invalid), the first measurement of a genome kept.
struct Landscape {
  std::vector<std::unique_ptr<Task>> tasks;
  std::vector<std::vector<std::unique_ptr<mutate::DesignSpace>>> spaces;
  std::vector<std::vector<policy::Parent>> measured;
  std::vector<std::set<std::pair<std::string, std::vector<int64_t>>>> seen;
  std::map<std::string, size_t> index;  // task name -> position

  void add_task(const std::string& file) {
    auto t = std::make_unique<Task>(load_task(file));
    if (index.count(t->name)) return;
    index[t->name] = tasks.size();
    spaces.push_back(lower::lower(*t));
    tasks.push_back(std::move(t));
    measured.emplace_back();
    seen.emplace_back();
  }

  // The file's measured genomes, read by knob name as genomes of today's spaces (one a space no
  // longer reads is left out).
  void add(const store::CampaignContents& c) {
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> names;
    for (const store::SpaceRecord& s : c.spaces) names[{s.task, s.space}] = store::knob_names(s);
    store::for_each_measured(c, [&](const std::string& task, const store::VariantRecord& v,
                                     const store::MeasurementRecord& m) {
      auto t = index.find(task);
      if (v.space.empty() || t == index.end()) return;
      const mutate::DesignSpace* space = mutate::find_space(spaces[t->second], v.space);
      if (!space) return;
      const auto recorded = names.find({task, v.space});
      const std::optional<std::vector<int64_t>> genome = store::read_genome(
          v.genome, recorded == names.end() ? std::vector<std::string>() : recorded->second, knob_list(*space));
      if (!genome || !seen[t->second].insert({v.space, *genome}).second) return;
      policy::Parent p;
      p.variant = m.variant;
      p.genome = {v.space, *genome};
      p.fitness = m.status == "ok" && m.fitness > 0 ? m.fitness : 0;
      measured[t->second].push_back(std::move(p));
    });
  }

  size_t size() const {
    size_t n = 0;
    for (const auto& m : measured) n += m.size();
    return n;
  }

  // The checkpoint `policy` (fresh when empty) with its landscape model fitted to all of it.
  std::string fit(const std::string& policy) const {
    std::vector<policy::LandscapeTask> data;
    for (size_t i = 0; i < tasks.size(); ++i) data.push_back({tasks[i].get(), &spaces[i], measured[i]});
    policy::LearnedPolicyConfig lc;
    lc.init = policy;
    return policy::fit_landscape(lc, data);
  }
};

}  // namespace

std::vector<TrainStep> train_policy(const std::string& out, const CampaignConfig& config, int rounds,
                                    const std::vector<std::string>& task_files, evaluators::VariantEvaluator& evaluator,
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
  // The landscape model first learns what the replay files recorded of these tasks, so the
  // campaigns below train the mutation network beside the model it will run with; at the end it
  // is fitted again to everything measured.
  Landscape landscape;
  for (const std::string& task : task_files) landscape.add_task(task);
  store::ReadOptions measured_only;
  measured_only.sources = store::ReadOptions::Sources::none;
  measured_only.checkpoint_bytes = store::ReadOptions::Checkpoints::none;
  for (const std::string& f : config.replay) landscape.add(store::read_campaign(f, measured_only));
  if (landscape.size() >= 2) {
    if (!config.policy_init.empty()) policy = read_input_file(config.policy_init);
    try {
      policy = landscape.fit(policy);
    } catch (const std::runtime_error& e) {  // a checkpoint that is not a learned policy's
      throw InputError(Location{config.policy_init, 0, 0}, config.policy_init.empty() ? "" : "--policy-init", e.what());
    }
  }
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
      store::ReadOptions no_sources;
      no_sources.sources = store::ReadOptions::Sources::none;
      const store::CampaignContents k = store::read_campaign(campaign_path, no_sources);
      const store::CheckpointRecord* last = nullptr;
      for (const auto& cp : k.checkpoints)
        if (cp.kind == "policy" && (!last || cp.generation >= last->generation)) last = &cp;
      if (!last) throw std::runtime_error(task + ": the learned campaign left no policy checkpoint");
      policy = last->bytes;
      landscape.add(k);
      write_atomically(out, policy);
      TrainStep s;
      s.round = round;
      s.task = k.tasks.front().name;
      if (!k.generations.empty()) {
        s.evaluations = k.generations.back().evaluations;
        s.best = k.generations.back().best_fitness;
      }
      s.landscape = static_cast<int64_t>(landscape.size());
      steps.push_back(s);
      if (progress) progress(s);
    }
  if (landscape.size() >= 2) {
    policy = landscape.fit(policy);
    write_atomically(out, policy);
  }
  ::unlink(campaign_path.c_str());
  ::unlink(init_path.c_str());
  return steps;
}

}  // namespace kevo::search
