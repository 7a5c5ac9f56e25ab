// The campaign's configuration: checks and the JSON kept with every run.
#include "search/config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "policy/arms.h"
#include "search/parents.h"
#include "search/reward.h"

namespace kevo::policy {

// The llm arm's settings in a campaign's JSON (beside its type's namespace, where nlohmann finds it).
// A field a campaign file written before it was added takes its default; fields that never were
// options (the connect timeout, the backoff, the inspiration's characters) are not kept.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LlmSettings, url, model, api_key_env, temperature, max_tokens, samples,
                                                concurrency, timeout_seconds, retries, token_budget, weight, mix,
                                                inspirations, max_prompt_tokens, between_generations, adapter_name,
                                                adapter_path)

}  // namespace kevo::policy

namespace kevo::search {

using nlohmann::json;

void validate(const CampaignConfig& c) {
  auto bad = [](const std::string& flag, const std::string& why) { throw InputError(Location{}, flag, why); };
  if (c.population < 1 || c.population > 100000) bad("--population", "must be between 1 and 100000");
  if (c.islands < 1 || c.islands > 1000) bad("--islands", "must be between 1 and 1000");
  if (c.budget_evals < 1) bad("--budget-evals", "must be at least 1");
  if (c.max_generations < 0) bad("--max-generations", "must not be negative");
  if (!(c.wall_seconds >= 0)) bad("--budget-seconds", "must not be negative");
  if (!make_parent_selection(c.selection, c.tournament))
    bad("--selection", "'" + c.selection + "': use tournament or proportional");
  if (c.tournament < 1) bad("--tournament", "must be at least 1");
  if (c.migration_interval < 0 || c.migrants < 0) bad("--migration-interval", "must not be negative");
  if (c.stagnation < 1) bad("--stagnation", "must be at least 1");
  if (c.occupancy_bands < 1 || c.occupancy_bands > 64) bad("--occupancy-bands", "must be between 1 and 64");
  if (c.dedupe_retries < 0) bad("--dedupe-retries", "must not be negative");
  if (c.checkpoint_every < 0) bad("--checkpoint-every", "must not be negative");
  if (!make_reward(c.reward)) bad("--reward", "'" + c.reward + "': use bucketed or log_speedup");
  if (c.trials < 1 || c.trials > 1000) bad("--trials", "must be between 1 and 1000");
  if (!(c.max_seconds > 0)) bad("--max-seconds", "must be positive");
  const policy::Arm* arm = policy::find_arm(c.arm);
  if (!arm) bad("--policy", policy::unknown_arm(c.arm));
  if (arm->llm) {
    const LlmSettings& l = c.llm;
    try {
      policy::validate(l);
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      const size_t colon = m.find(": ");
      if (m.rfind("--", 0) == 0 && colon != std::string::npos) bad(m.substr(0, colon), m.substr(colon + 2));
      bad("--policy", m);
    }
  }
  if (arm->frozen && c.policy_init.empty())
    bad("--policy-init", c.arm + " samples from a checkpoint: give the file a learned policy wrote");
}

std::string config_to_json(const CampaignConfig& c) {
  json j;
  j["arm"] = c.arm;
  j["policy_init"] = c.policy_init;
  j["seed"] = c.seed;
  j["population"] = c.population;
  j["islands"] = c.islands;
  j["budget_evals"] = c.budget_evals;
  j["max_generations"] = c.max_generations;
  j["wall_seconds"] = c.wall_seconds;
  j["selection"] = c.selection;
  j["tournament"] = c.tournament;
  j["migration_interval"] = c.migration_interval;
  j["migrants"] = c.migrants;
  j["stagnation"] = c.stagnation;
  j["occupancy_bands"] = c.occupancy_bands;
  j["dedupe_retries"] = c.dedupe_retries;
  j["reward"] = c.reward;
  j["replay"] = c.replay;
  j["trials"] = c.trials;
  j["max_seconds"] = c.max_seconds;
  j["torch_baseline"] = c.torch_baseline;
  j["llm"] = c.llm;  // the API key is not there: only the name of its variable
  // A prompt budget is kept only where it is not the default: files of other campaigns stay as they were.
  if (c.llm.max_prompt_tokens == LlmSettings{}.max_prompt_tokens) j["llm"].erase("max_prompt_tokens");
  if (c.checkpoint_every != CampaignConfig{}.checkpoint_every) j["checkpoint_every"] = c.checkpoint_every;
  if (c.screen) j["screen"] = true;  // files of campaigns without screening stay as they were
  return j.dump();
}

CampaignConfig config_from_json(const std::string& text) {
  CampaignConfig c;
  try {
    json j = json::parse(text);
    c.arm = j.at("arm").get<std::string>();
    c.policy_init = j.value("policy_init", std::string());  // absent in files of kevo before the learned arms
    c.seed = j.at("seed").get<uint64_t>();
    c.population = j.at("population").get<int>();
    c.islands = j.at("islands").get<int>();
    c.budget_evals = j.at("budget_evals").get<int64_t>();
    c.max_generations = j.at("max_generations").get<int>();
    c.wall_seconds = j.at("wall_seconds").get<double>();
    c.selection = j.at("selection").get<std::string>();
    c.tournament = j.at("tournament").get<int>();
    c.migration_interval = j.at("migration_interval").get<int>();
    c.migrants = j.at("migrants").get<int>();
    c.stagnation = j.at("stagnation").get<int>();
    c.occupancy_bands = j.at("occupancy_bands").get<int>();
    c.dedupe_retries = j.at("dedupe_retries").get<int>();
    c.reward = j.at("reward").get<std::string>();
    c.replay = j.at("replay").get<std::vector<std::string>>();
    c.trials = j.at("trials").get<int>();
    c.max_seconds = j.at("max_seconds").get<double>();
    c.torch_baseline = j.at("torch_baseline").get<std::string>();
    if (j.contains("llm")) c.llm = j.at("llm").get<LlmSettings>();  // absent in files of kevo before the llm policy
    c.checkpoint_every = j.value("checkpoint_every", c.checkpoint_every);
    c.screen = j.value("screen", false);  // absent in files of kevo before screening, and where it was off
  } catch (const json::exception& e) {
    throw InputError(Location{}, "runs/config", std::string("not a campaign configuration: ") + e.what());
  }
  validate(c);
  return c;
}

}  // namespace kevo::search
