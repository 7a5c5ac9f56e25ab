// The campaign loop of DESIGN.md: per task a run; per run islands of MAP-Elites archives whose
// elites are the population; each generation reads as five verbs: propose (policy) -> build
// (overlapping the previous batch's measurement) -> measure -> insert (archive, migration,
// stagnation) -> update (policy) and commit (campaign file, atomically).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "search/evaluator.h"
#include "store/records.h"

namespace kevo::search {

// The llm arm: the endpoint, the sampling, the mix with template mutations and the hook between
// generations. The API key is read from the environment variable named here and never stored.
struct LlmSettings {
  std::string url = "http://127.0.0.1:8000/v1";
  std::string model;
  std::string api_key_env = "OPENAI_API_KEY";
  double temperature = 0.8;
  int max_tokens = 4096;
  int samples = 4;                     // completions per request (one parent's children; one RL group)
  int concurrency = 8;
  double timeout_seconds = 300;
  int retries = 4;
  int64_t token_budget = 0;            // prompt + completion tokens for the campaign; 0: none
  double weight = 0.5;                 // share of template parents sent to the model; < 0: a bandit decides
  std::string mix = "random";          // the template policy beside it: random or learned
  int inspirations = 2;
  std::string between_generations;     // a shell command run after each committed generation
  std::string adapter_name, adapter_path;  // then: (re)load this LoRA adapter into vLLM and use it as the model
};

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
  std::vector<std::string> replay;     // replay files; empty: the GPU
  // The GPU evaluator's settings, kept so that `kevo resume` measures the same way.
  int trials = 2;                      // correctness trials per workload
  double max_seconds = 2;              // timing repetitions per workload, at most
  std::string torch_baseline;          // tools/torch_baseline.py report; empty: none
  LlmSettings llm;                     // the llm arm's
};

// Checks the values; throws InputError ("--population: ...") naming the first bad one.
void validate(const CampaignConfig& c);
std::string config_to_json(const CampaignConfig& c);
CampaignConfig config_from_json(const std::string& text);  // throws InputError

struct Progress {
  int generation = 0;
  int64_t evaluations = 0, budget = 0, unmeasured = 0, duplicates = 0;
  std::vector<std::pair<std::string, double>> best;  // per task: best fitness so far
  double elapsed_seconds = 0;      // this process
  double gpu_busy_fraction = 0;    // this process: worker busy time / (elapsed x GPUs); 0 on replay
  double seconds_left = 0;         // estimated
  bool replaying_file = false;     // re-deriving generations already in the file (resume)
  // The llm arm: requests, failures by kind, tokens (this process).
  int64_t llm_requests = 0, llm_failed = 0, llm_rate_limited = 0, llm_timeouts = 0, llm_tokens = 0;
  int64_t llm_bad_replies = 0;     // completions that gave no child (unreadable, not applicable, rejected)
};

class Campaign {
 public:
  // A new campaign over these task contracts, written to `path` (which must not exist yet).
  // Throws InputError for a bad task file or configuration.
  static std::unique_ptr<Campaign> create(const std::string& path, const CampaignConfig& config,
                                          const std::vector<std::string>& task_files, VariantEvaluator& evaluator,
                                          const std::string& command);
  // An ablation: one run per (task, arm, seed), in that order (task-major), each run with its own
  // arm and seed (config.arm and config.seed are ignored). A run's random streams and initial policy
  // depend only on its seed and its task's position, so a run of (arm A, seed S) proposes what
  // `kevo run --policy A --seed S` over the same tasks does. Tasks are stored once.
  static std::unique_ptr<Campaign> create_ablation(const std::string& path, const CampaignConfig& config,
                                                   const std::vector<std::string>& task_files,
                                                   const std::vector<std::string>& arms,
                                                   const std::vector<uint64_t>& seeds, VariantEvaluator& evaluator,
                                                   const std::string& command);
  // Re-opens a campaign file: the configuration, tasks and runs (arm, seed) are the file's; the generations it holds
  // are re-derived from its recordings (no evaluation) and the search continues after them.
  static std::unique_ptr<Campaign> resume(const std::string& path, VariantEvaluator& evaluator);
  // The configuration stored in a campaign file (to build the matching evaluator before resume()).
  static CampaignConfig stored_config(const std::string& path);

  ~Campaign();
  // Runs until every run's budget is spent, a limit is reached or the search space is exhausted.
  void run(const std::function<void(const Progress&)>& progress = {});
  const store::CampaignContents& contents() const;

 private:
  Campaign();
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace kevo::search
