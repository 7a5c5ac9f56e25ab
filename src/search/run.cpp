// The runs of a campaign: tasks lowered onto their spaces, policies made by arm.
#include "search/run.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/rng.h"
#include "lower/lower.h"
#include "policy/arms.h"
#include "policy/learned_policy.h"

namespace kevo::search {

namespace {

// The run's policy; the llm arm's client is made on first need. A learned policy's initial
// parameters derive from the run's seed and its task's position.
std::unique_ptr<policy::Policy> policy_of(const Run& run, const CampaignConfig& config, const std::string& init,
                                          std::shared_ptr<policy::LlmClient>& llm_client) {
  policy::ArmOptions o;
  o.seed = splitmix(run.seed ^ splitmix(static_cast<uint64_t>(run.task_index) + 1));
  o.init = init;
  o.llm = config.llm;
  try {
    if (policy::arm_uses_llm(run.arm) && !llm_client) llm_client = std::make_shared<policy::LlmClient>(config.llm);
    o.llm_client = llm_client;
    return policy::make_policy(run.arm, o);
  } catch (const std::invalid_argument& e) {
    throw InputError(Location{}, "--policy", e.what());
  } catch (const std::runtime_error& e) {
    throw InputError(Location{}, "", e.what());
  }
}

}  // namespace

std::string policy_init(const CampaignConfig& config, const std::vector<store::RunRecord>& runs,
                        const std::vector<store::CheckpointRecord>& checkpoints) {
  bool any_learned = false;
  for (const store::RunRecord& rec : runs) any_learned = any_learned || policy::arm_is_learned(rec.arm, config.llm.mix);
  if (!any_learned || config.policy_init.empty()) return {};
  auto kept = std::find_if(checkpoints.begin(), checkpoints.end(),
                           [](const store::CheckpointRecord& c) { return c.kind == "policy_init"; });
  std::string init = kept != checkpoints.end() ? kept->bytes : read_input_file(config.policy_init);
  try {
    policy::check_checkpoint(init);
  } catch (const std::runtime_error& e) {
    throw InputError(Location{config.policy_init, 0, 0}, "--policy-init", e.what());
  }
  return init;
}

std::vector<Run> make_runs(const std::string& path, const CampaignConfig& config,
                           const std::vector<store::TaskRecord>& tasks, const std::vector<store::RunRecord>& records,
                           const std::string& init, const std::string& arch,
                           std::shared_ptr<policy::LlmClient>& llm_client) {
  std::vector<Run> runs;
  for (const store::RunRecord& rec : records) {
    Run r;
    r.id = rec.id;
    r.arm = rec.arm;
    r.seed = rec.seed;
    r.task_index = -1;
    for (size_t i = 0; i < tasks.size(); ++i)
      if (tasks[i].name == rec.task) r.task_index = static_cast<int>(i);
    if (r.task_index < 0 || r.id != static_cast<int>(runs.size()))
      throw InputError(Location{path, 0, 0}, "runs", "run " + std::to_string(rec.id) + " of task '" + rec.task +
                                                         "' does not match the file's tasks");
    const store::TaskRecord& t = tasks[static_cast<size_t>(r.task_index)];
    r.task = std::make_unique<Task>(parse_task(t.contract, t.name + ".json"));
    r.spaces = lower::lower(*r.task, arch);
    for (const auto& space : r.spaces) r.knobs[space->id()] = std::make_shared<const store::KnobList>(knob_list(*space));
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

store::KnobList knob_list(const mutate::DesignSpace& space) {
  store::KnobList k;
  for (const mutate::Knob& knob : space.knobs()) {
    k.names.push_back(knob.name);
    k.defaults.push_back(knob.default_value);
  }
  return k;
}

std::vector<store::SpaceRecord> space_records(const std::vector<Run>& runs) {
  std::vector<store::SpaceRecord> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const Run& run : runs)
    for (const auto& space : run.spaces)
      if (seen.insert({run.task->name, space->id()}).second)
        out.push_back(store::space_record(run.task->name, space->id(), run.knobs.at(space->id())->names));
  return out;
}

}  // namespace kevo::search
