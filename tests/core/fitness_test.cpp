// The workload-mix fitness: weights scale each timed workload's time, checked-only workloads and
// failed or missing ones never count, and the geometric mean is kept apart.
#include "core/fitness.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kevo {
namespace {

Task task_with(const std::string& workloads) {
  return parse_task(R"({"name": "t", "axes": {"N": {"type": "var"}},
    "inputs": {"x": {"shape": ["N"], "dtype": "float32"}}, "outputs": {"y": {"shape": ["N"], "dtype": "float32"}},
    "reference": "def run(x):\n    return torch.relu(x)\n", "workloads": )" + workloads + "}",
                    "t.json");
}

TEST(Fitness, IsTheTimeSavedOverTheWeightedMix) {
  Task t = task_with(R"([{"N": 1048576, "weight": 3}, {"N": 4096, "weight": 1}])");
  // 3 x (2.0 ms eager, 1.0 ms) + 1 x (0.010 ms eager, 0.020 ms): (6 + 0.01) / (3 + 0.02).
  const std::vector<WorkloadTime> times = {{0, 2.0, 1.0}, {1, 0.010, 0.020}};
  EXPECT_NEAR(weighted_speedup(t, times), 6.01 / 3.02, 1e-12);
  // The geometric mean of 2x and 0.5x: the column the report keeps.
  EXPECT_NEAR(geometric_mean_speedup(t, times), 1.0, 1e-12);
}

TEST(Fitness, WeightsDecideWhichShapeMatters) {
  const std::vector<WorkloadTime> times = {{0, 2.0, 1.0}, {1, 0.010, 0.020}};
  const double big_first = weighted_speedup(task_with(R"([{"N": 1048576, "weight": 100}, {"N": 4096}])"), times);
  const double small_first = weighted_speedup(task_with(R"([{"N": 1048576}, {"N": 4096, "weight": 1e6}])"), times);
  EXPECT_GT(big_first, 1.9);
  EXPECT_LT(small_first, 0.6);
}

TEST(Fitness, CheckedOnlyWorkloadsDoNotCount) {
  Task t = task_with(R"([{"N": 1048576}, {"N": 16, "timed": false}])");
  // A launch-bound small shape that is 8x faster than eager lifts nothing.
  const std::vector<WorkloadTime> times = {{0, 3.0, 2.0}, {1, 0.008, 0.001}};
  EXPECT_NEAR(weighted_speedup(t, times), 1.5, 1e-12);
  EXPECT_NEAR(geometric_mean_speedup(t, times), 1.5, 1e-12);
}

TEST(Fitness, NothingTimedMeansNoFitness) {
  Task t = task_with(R"([{"N": 1048576}, {"N": 16, "timed": false}])");
  EXPECT_EQ(weighted_speedup(t, {}), 0.0);
  EXPECT_EQ(weighted_speedup(t, {{1, 0.008, 0.001}}), 0.0);
  EXPECT_EQ(weighted_speedup(t, {{0, 3.0, 0.0}}), 0.0);   // no candidate time
  EXPECT_EQ(weighted_speedup(t, {{7, 3.0, 1.0}}), 0.0);   // no such workload
  EXPECT_EQ(geometric_mean_speedup(t, {}), 0.0);
}

TEST(Fitness, FilesBeforeTheRecordReadAsTheGeometricMean) {
  EXPECT_EQ(fitness_name(""), kFitnessGeometricMean);
  EXPECT_EQ(fitness_name(kFitnessWeightedTime), kFitnessWeightedTime);
  EXPECT_NE(fitness_description("").find("geometric mean"), std::string::npos);
  EXPECT_NE(fitness_description(kFitnessWeightedTime).find("weighted mix"), std::string::npos);
}

}  // namespace
}  // namespace kevo
