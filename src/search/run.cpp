// The runs of a campaign: tasks lowered onto their spaces, policies made by arm.
#include "search/run.h"

#include <algorithm>

#include "core/error.h"
#include "core/rng.h"
#include "policy/arms.h"
#include "policy/learned_policy.h"

namespace kevo::search {

namespace {

// The checkpoint learned arms start from: the one kept in the file, else config.policy_init's
// bytes (then kept); empty when no arm is learned or none is given.
std::string policy_init(const CampaignConfig& config, store::CampaignContents& contents) {
  bool any_learned = false;
  for (const store::RunRecord& rec : contents.runs) any_learned = any_learned || policy::arm_is_learned(rec.arm, config.llm.mix);
  if (!any_learned || config.policy_init.empty()) return {};
  auto kept = std::find_if(contents.checkpoints.begin(), contents.checkpoints.end(),
                           [](const store::CheckpointRecord& c) { return c.kind == "policy_init"; });
  const bool stored = kept != contents.checkpoints.end();
  std::string init = stored ? kept->bytes : read_input_file(config.policy_init);
  try {
    policy::check_checkpoint(init);
  } catch (const std::runtime_error& e) {
    throw InputError(Location{config.policy_init, 0, 0}, "--policy-init", e.what());
  }
  if (!stored) contents.checkpoints.push_back({contents.runs.front().id, -1, "policy_init", init});
  return init;
}

// The run's policy; the llm arm's client is made on first need. A learned policy's initial
// parameters derive from the run's seed and its task's position.
std::unique_ptr<policy::Policy> policy_of(const Run& run, const CampaignConfig& config, const std::string& init,
                                          std::shared_ptr<policy::LlmClient>& llm_client) {
  policy::ArmOptions o;
  o.seed = splitmix(run.seed ^ splitmix(static_cast<uint64_t>(run.task_index) + 1));
  o.init = init;
  o.llm = llm_policy_config(config.llm);
  o.llm_mix = config.llm.mix;
  try {
    if (run.arm == "llm" && !llm_client) llm_client = std::make_shared<policy::LlmClient>(llm_client_config(config.llm));
    o.llm_client = llm_client;
    return policy::make_policy(run.arm, o);
  } catch (const std::invalid_argument& e) {
    throw InputError(Location{}, "--policy", e.what());
  } catch (const std::runtime_error& e) {
    throw InputError(Location{}, "", e.what());
  }
}

}  // namespace

std::vector<Run> make_runs(const std::string& path, const CampaignConfig& config, store::CampaignContents& contents,
                           std::shared_ptr<policy::LlmClient>& llm_client) {
  const std::string init = policy_init(config, contents);
  std::vector<Run> runs;
  for (const store::RunRecord& rec : contents.runs) {
    Run r;
    r.id = rec.id;
    r.arm = rec.arm;
    r.seed = rec.seed;
    r.task_index = -1;
    for (size_t i = 0; i < contents.tasks.size(); ++i)
      if (contents.tasks[i].name == rec.task) r.task_index = static_cast<int>(i);
    if (r.task_index < 0 || r.id != static_cast<int>(runs.size()))
      throw InputError(Location{path, 0, 0}, "runs", "run " + std::to_string(rec.id) + " of task '" + rec.task +
                                                         "' does not match the file's tasks");
    const store::TaskRecord& t = contents.tasks[static_cast<size_t>(r.task_index)];
    r.task = std::make_unique<Task>(parse_task(t.contract, t.name + ".json"));
    r.spaces = mutate::lower(*r.task);
    if (r.spaces.empty())
      throw InputError(Location{t.name, 0, 0}, "", "no design space serves this task (see kevo space)");
    r.policy = policy_of(r, config, init, llm_client);
    r.editor = dynamic_cast<policy::SourceEditor*>(r.policy.get());
    r.islands.resize(static_cast<size_t>(config.islands));
    runs.push_back(std::move(r));
  }
  return runs;
}

policy::Context context_of(const Run& run, int g, const CampaignConfig& config, const std::string& target) {
  policy::Context c;
  c.task = run.task.get();
  c.spaces = &run.spaces;
  c.generation = g;
  c.evaluations = run.evaluations;
  c.budget = config.budget_evals;
  c.best_fitness = run.best;
  c.target = target;
  return c;
}

}  // namespace kevo::search
