// What an ablation campaign (several arms and seeds per task) says: mean best-so-far curves with
// 95% bootstrap bands over seeds, evaluations to reach 95% of the best any arm found, final
// fitness, and each arm paired with `random` over the seeds they share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/records.h"
#include "store/report.h"

namespace kevo::search {

// A mean over seeds with its 95% percentile bootstrap interval.
struct Interval {
  double mean = 0, lower = 0, upper = 0;
};

// One task and arm over its seeds.
struct ArmStats {
  std::string task, arm;
  std::vector<uint64_t> seeds;
  std::vector<int64_t> grid;               // common evaluation counts of the task (every arm's)
  std::vector<Interval> curve;             // mean best-so-far per grid point, with its band
  Interval final_fitness;
  double target = 0;                       // 95% of the best fitness any arm found on the task
  int64_t budget = 0;                      // evaluations per run
  Interval evals_to_target;                // a seed that never reaches the target counts as the budget
  int not_reached = 0;                     // seeds that never reached it
};

// An arm against `random` over the seeds both ran: differences arm - random.
struct PairedComparison {
  std::string task, arm;
  int seeds = 0;
  Interval evals_to_target_diff;           // negative: the arm needs fewer evaluations
  Interval final_fitness_diff;             // positive: the arm ends fitter
  int wins = 0, ties = 0, losses = 0;      // by evaluations to the target (fewer wins)
};

struct Ablation {
  std::vector<ArmStats> arms;              // tasks in file order, arms in run order
  std::vector<PairedComparison> paired;
};

// True when some task of the file has more than one run (several arms or seeds).
bool is_ablation(const store::CampaignContents& c);

// Statistics of a campaign file; `resamples` bootstrap resamples drawn from `seed` (deterministic).
Ablation ablation_stats(const store::CampaignContents& c, int resamples = 2000, uint64_t seed = 1);

// Evaluations at the first point of a best-so-far curve reaching `target`; `budget` when none does.
int64_t evaluations_to_reach(const std::vector<store::CurvePoint>& curve, double target, int64_t budget);

// Mean of `values` with a 95% percentile bootstrap interval.
Interval bootstrap_mean(const std::vector<double>& values, int resamples, uint64_t seed);

// Per grid point (columns of `per_seed`, one row per seed) the mean with a 95% percentile bootstrap
// band; the same resamples of seeds serve every point.
std::vector<Interval> bootstrap_curve(const std::vector<std::vector<double>>& per_seed, int resamples, uint64_t seed);

}  // namespace kevo::search
