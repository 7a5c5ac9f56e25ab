// The fitness of a measured candidate: the time it saves over the task's weighted mix of timed
// workloads, and the names campaign files record it under.
#pragma once

#include <string>
#include <vector>

#include "core/task.h"

namespace kevo {

// The fitness every campaign written by this kevo records: Σ w·t_eager / Σ w·t_candidate over
// the timed workloads (docs/search.md#fitness).
inline constexpr const char* kFitnessWeightedTime = "weighted_time_v1";
// What files written before the fitness was recorded measured: the geometric mean of the
// per-workload speedups over every measured workload. Such files name no fitness.
inline constexpr const char* kFitnessGeometricMean = "geometric_mean_v0";

// A candidate's and eager's medians on one workload (index into the task's workloads).
struct WorkloadTime {
  int workload = 0;
  double eager_ms = 0, candidate_ms = 0;
};

// Σ w·t_eager / Σ w·t_candidate over the entries of timed workloads with both times positive;
// 0 when there is none.
double weighted_speedup(const Task& task, const std::vector<WorkloadTime>& times);
// The geometric mean of eager / candidate over the same entries (a report column); 0 when none.
double geometric_mean_speedup(const Task& task, const std::vector<WorkloadTime>& times);

// The fitness a campaign file records ("" in files that predate the record: the geometric mean).
std::string fitness_name(const std::string& recorded);
// One line for reports: what the named fitness measures.
std::string fitness_description(const std::string& recorded);

}  // namespace kevo
