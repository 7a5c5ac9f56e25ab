// One search run (a task searched by one arm with one seed): its task and spaces, its policy, its
// islands, and what it has measured; and the runs of a campaign made from the file's records.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/task.h"
#include "mutate/space.h"
#include "policy/llm_client.h"
#include "policy/policy.h"
#include "policy/source_editor.h"
#include "search/config.h"
#include "search/islands.h"
#include "search/outcome.h"
#include "store/records.h"

namespace kevo::search {

struct Run {
  int id = 0;
  int task_index = 0;  // in the file's tasks: with the seed, what the run's random streams derive from
  std::string arm;
  uint64_t seed = 1;
  std::unique_ptr<Task> task;
  std::vector<std::unique_ptr<mutate::DesignSpace>> spaces;
  std::unique_ptr<policy::Policy> policy;
  policy::SourceEditor* editor = nullptr;  // the policy's source-editing side; null when it has none
  std::vector<Island> islands;
  std::map<std::string, int64_t> by_hash;  // measured or in flight
  std::map<int64_t, Outcome> outcomes;
  int64_t proposed = 0, evaluations = 0, unmeasured = 0, duplicates = 0;
  double best = 0;
  int64_t best_variant = -1;
  std::optional<Elite> best_elite;
  bool done = false;
  int idle_generations = 0;  // generations in a row without a new variant
};

// The runs of `contents` (its tasks and run records), each with its arm's policy; the llm arm's
// client is made on first need into `llm_client` (one for every run: one concurrency limit, one
// budget). The checkpoint learned arms start from (config.policy_init) is kept in `contents`
// (generation -1, kind "policy_init") and read from there when present, so that a resume does not
// depend on the file it was read from. Throws InputError for runs that do not match the tasks, a
// task no space serves or a bad checkpoint.
std::vector<Run> make_runs(const std::string& path, const CampaignConfig& config, store::CampaignContents& contents,
                           std::shared_ptr<policy::LlmClient>& llm_client);

// The search's state the run's policy may condition on, at generation `g`.
policy::Context context_of(const Run& run, int g, const CampaignConfig& config, const std::string& target);

}  // namespace kevo::search
