// The weighted-mix fitness and the geometric mean kept beside it.
#include "core/fitness.h"

#include <cmath>

namespace kevo {

namespace {

bool counts(const Task& task, const WorkloadTime& t) {
  return task.is_timed(t.workload) && t.eager_ms > 0 && t.candidate_ms > 0;
}

}  // namespace

double weighted_speedup(const Task& task, const std::vector<WorkloadTime>& times) {
  double eager = 0, candidate = 0;
  for (const WorkloadTime& t : times) {
    if (!counts(task, t)) continue;
    const double w = task.workloads[static_cast<size_t>(t.workload)].weight;
    eager += w * t.eager_ms;
    candidate += w * t.candidate_ms;
  }
  return candidate > 0 ? eager / candidate : 0;
}

double geometric_mean_speedup(const Task& task, const std::vector<WorkloadTime>& times) {
  double logs = 0;
  int n = 0;
  for (const WorkloadTime& t : times)
    if (counts(task, t)) logs += std::log(t.eager_ms / t.candidate_ms), ++n;
  return n > 0 ? std::exp(logs / n) : 0;
}

std::string fitness_name(const std::string& recorded) {
  return recorded.empty() ? kFitnessGeometricMean : recorded;
}

std::string fitness_description(const std::string& recorded) {
  const std::string name = fitness_name(recorded);
  if (name == kFitnessWeightedTime)
    return name + ": the time saved over the weighted mix of timed workloads (sum of w x eager time over sum of w x "
                  "candidate time)";
  if (name == kFitnessGeometricMean)
    return name + ": the geometric mean of the per-workload speedups over eager (a file of kevo before the "
                  "fitness was recorded, read as it was measured)";
  return name + ": a fitness this kevo does not know";
}

}  // namespace kevo
