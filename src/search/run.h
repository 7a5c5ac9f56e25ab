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
#include "search/hash_index.h"
#include "search/islands.h"
#include "search/outcome.h"
#include "store/genome_names.h"
#include "store/records.h"

namespace kevo::search {

struct Run {
  int id = 0;
  int task_index = 0;  // in the file's tasks: with the seed, what the run's random streams derive from
  std::string arm;
  uint64_t seed = 1;
  std::unique_ptr<Task> task;
  std::vector<std::unique_ptr<mutate::DesignSpace>> spaces;
  std::map<std::string, std::shared_ptr<const store::KnobList>> knobs;  // per space id: its knobs by name
  std::unique_ptr<policy::Policy> policy;
  policy::SourceEditor* editor = nullptr;  // the policy's source-editing side; null when it has none
  std::vector<Island> islands;
  HashIndex by_hash;  // source hash -> the run's first variant with it (measured or in flight)
  // Measured variants as later generations see them: a run with a source editor keeps all (its
  // prompts and credits look any up); any other run only its elites' (all its proposals look up).
  std::map<int64_t, Outcome> outcomes;
  int64_t proposed = 0, evaluations = 0, unmeasured = 0, duplicates = 0;
  int64_t screened = 0;  // evaluations that screening left unverified
  double best = 0;
  int64_t best_variant = -1;
  std::optional<Elite> best_elite;
  bool done = false;
  int idle_generations = 0;  // generations in a row without a new variant
};

// The checkpoint learned arms start from: the one the campaign file keeps (`checkpoints`' row of
// kind "policy_init", generation -1), else config.policy_init's bytes (the caller keeps them in
// the file, so that a resume does not depend on that file); empty when no arm of `runs` is
// learned or none is given. Throws InputError for a checkpoint that is not a learned policy's.
std::string policy_init(const CampaignConfig& config, const std::vector<store::RunRecord>& runs,
                        const std::vector<store::CheckpointRecord>& checkpoints);

// The runs of a campaign's tasks and run records, each with its arm's policy (learned ones from
// `init`); the llm arm's client is made on first need into `llm_client` (one for every run: one
// concurrency limit, one budget). Spaces are lowered for `arch` (the evaluator's target; empty:
// every architecture's knob values). Throws InputError for runs that do not match the tasks or a
// task no space serves.
// A space's knobs by name, with the defaults its manifest gives (store/genome_names.h).
store::KnobList knob_list(const mutate::DesignSpace& space);
// The records of the spaces `runs` search, a task's spaces once: what a campaign or sweep file keeps.
std::vector<store::SpaceRecord> space_records(const std::vector<Run>& runs);

std::vector<Run> make_runs(const std::string& path, const CampaignConfig& config,
                           const std::vector<store::TaskRecord>& tasks, const std::vector<store::RunRecord>& records,
                           const std::string& init, const std::string& arch,
                           std::shared_ptr<policy::LlmClient>& llm_client);

// The search's state the run's policy may condition on, at generation `g`.
policy::Context context_of(const Run& run, int g, const CampaignConfig& config, const std::string& target);

}  // namespace kevo::search
