// The campaign of DESIGN.md: per (task, arm, seed) a run; per run islands of MAP-Elites archives
// whose elites are the population. Each generation reads as five verbs: generate candidates (the
// policy's proposals, search/proposals.h) -> build (compile, overlapping the previous generation's
// measurement) -> run (measure) -> notify results (archives, rewards: search/feedback.h) ->
// update (policies, islands: search/islands.h), then commit (the campaign file, search/commit.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "search/config.h"
#include "evaluators/evaluator.h"
#include "store/records.h"

namespace kevo::search {

// Where the loop's own thread spent this process's time, in seconds.
struct LoopSeconds {
  double generate = 0;       // proposals: parents, policies, rendering, duplicates
  double waiting = 0;        // for a generation's last records (the GPUs busy with it)
  double notify_update = 0;  // outcomes, archives, rewards, policy updates, islands
  double commit = 0;         // the campaign file
};

struct Progress {
  int generation = 0;
  int64_t evaluations = 0, budget = 0, unmeasured = 0, duplicates = 0;
  int64_t screened = 0;  // of the evaluations, screened out (the rest was verified fully)
  std::vector<std::pair<std::string, double>> best;  // per task: best fitness so far
  double elapsed_seconds = 0;      // this process
  double gpu_busy_fraction = 0;    // this process: worker busy time / (elapsed x GPUs); 0 on replay
  double seconds_left = 0;         // estimated
  LoopSeconds loop;                // this process
  bool replaying_file = false;     // re-deriving generations already in the file (resume)
  double commit_seconds = 0;       // the generation's commit to the campaign file (0 when re-derived)
  // A run's part of the generation, measured and committed (part_run >= 0), reported before the
  // generation's own report (part_run -1): the run, its label (its task; with its arm and seed where
  // the task has several runs), its evaluations and best fitness so far, the part's included. In a
  // part's report `evaluations` counts the generation's parts up to it.
  int part_run = -1;
  std::string part_task;
  int64_t part_evaluations = 0;
  double part_best = 0;
  // The llm arm: requests, failures by kind, tokens (this process).
  int64_t llm_requests = 0, llm_failed = 0, llm_rate_limited = 0, llm_timeouts = 0, llm_tokens = 0;
  int64_t llm_bad_replies = 0;     // completions that gave no child (unreadable, not applicable, rejected)
};

class Campaign {
 public:
  // A new campaign over these task contracts, written to `path` (which must not exist yet).
  // Throws InputError for a bad task file or configuration.
  static std::unique_ptr<Campaign> create(const std::string& path, const CampaignConfig& config,
                                          const std::vector<std::string>& task_files, evaluators::VariantEvaluator& evaluator,
                                          const std::string& command);
  // An ablation: one run per (task, arm, seed), in that order (task-major), each run with its own
  // arm and seed (config.arm and config.seed are ignored). A run's random streams and initial policy
  // depend only on its seed and its task's position, so a run of (arm A, seed S) proposes what
  // `kevo run --policy A --seed S` over the same tasks does. Tasks are stored once.
  static std::unique_ptr<Campaign> create_ablation(const std::string& path, const CampaignConfig& config,
                                                   const std::vector<std::string>& task_files,
                                                   const std::vector<std::string>& arms,
                                                   const std::vector<uint64_t>& seeds, evaluators::VariantEvaluator& evaluator,
                                                   const std::string& command);
  // Re-opens a campaign file: the configuration, tasks and runs (arm, seed) are the file's; the search continues
  // after the generations it holds, as if it had never stopped: from the state it kept after its last two, or
  // (files without them) by re-deriving every generation from its recordings (no evaluation).
  static std::unique_ptr<Campaign> resume(const std::string& path, evaluators::VariantEvaluator& evaluator);
  // The configuration stored in a campaign file (to build the matching evaluator before resume()).
  static CampaignConfig stored_config(const std::string& path);

  ~Campaign();
  // Runs until every run's budget is spent, a limit is reached or the search space is exhausted,
  // then closes the file (read it with store::read_campaign); true. `progress` hears of each run's
  // part of a generation as it is committed and of each generation. `stop` is asked while the loop
  // waits for measurements (every 0.1 s) and between generations: once it says yes, nothing more is
  // handed to the evaluator, the generation being measured commits what is measured of it (each
  // run's part measured whole, in order; the whole generation if every part is), the file is closed
  // and run() returns false. `kevo resume` goes on from there; the evaluations still with the
  // evaluator are collected when the campaign is destroyed (kevo's commands exit without waiting).
  bool run(const std::function<void(const Progress&)>& progress = {}, const std::function<bool()>& stop = {});
  const std::string& path() const;
  const std::string& campaign_id() const;  // the file's

 private:
  Campaign();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kevo::search
