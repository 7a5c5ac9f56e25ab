// The Runner against planted candidates for task 01_relu: each fault earns its own status,
// the worker is replaced where the fault poisons its context, and a correct candidate right
// after still evaluates. A long run with faults interleaved loses no result.
#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <cstdio>
#include <map>
#include <string>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/builder.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/runner.h"

namespace kevo::eval {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

class RunnerGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_api()) GTEST_SKIP() << "no CUDA GPU: " << cuda_driver_status().error;
    if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA GPU";
    task_ = load_task(kRoot + "tasks/01_relu.json");
    // The planted faults run on the small workload for speed, timed there as the tests expect;
    // the contract checks it without timing (ACheckedOnlyWorkloadIsCheckedNotTimed).
    task_.workloads[1].timed = true;
  }

  EvalOptions options(std::vector<int> workloads) const {
    EvalOptions o;
    o.kevo_binary = KEVO_BINARY;
    o.gpus = {0};
    o.workloads = std::move(workloads);
    o.max_seconds = 1;
    o.deadline_floor_s = 3;  // a hang costs this plus half a second
    return o;
  }

  EvalJob job(const std::string& name) {
    EvalJob j;
    j.task = &task_;
    j.candidate = load_candidate(kRoot + "tests/data/planted/" + name + ".cu", task_);
    auto it = builds_.find(name);
    if (it == builds_.end()) {
      BuildRequest req;
      req.source = j.candidate.source;
      req.name_expressions = j.candidate.kernel_names();
      req.arch = device_arch(0);
      req.use_cache = false;
      it = builds_.emplace(name, build(req)).first;
    }
    j.build = it->second;
    return j;
  }

  Task task_;
  std::map<std::string, BuildResult> builds_;
};

void report(const Measurement& m) {
  std::printf("%-24s %-18s speedup %8.2f  replaced %d  %s\n", m.candidate.c_str(), to_string(m.status), m.speedup,
              m.worker_replaced, m.error.c_str());
}

TEST_F(RunnerGpu, EachPlantedFaultGetsItsStatusAndACorrectCandidateStillEvaluatesAfter) {
  Runner ev(options({1}));
  const std::vector<std::pair<std::string, EvalStatus>> planted = {
      {"relu_ok", EvalStatus::Ok},
      {"relu_wrong", EvalStatus::WrongResult},
      {"relu_nan", EvalStatus::NotFinite},
      {"relu_oob_far", EvalStatus::CudaError},
      {"relu_oob_near", EvalStatus::OutOfBounds},
      {"relu_hang", EvalStatus::Timeout},
      {"relu_writes_input", EvalStatus::InputModified},
      {"relu_stale", EvalStatus::Unwritten},
      {"relu_too_much_smem", EvalStatus::LaunchError},
  };
  for (const auto& [name, want] : planted) {
    std::vector<Measurement> ms = ev.evaluate({job(name), job("relu_ok")});
    ASSERT_EQ(ms.size(), 2u);
    report(ms[0]);
    EXPECT_EQ(ms[0].status, want) << name << ": " << ms[0].error;
    EXPECT_EQ(ms[1].status, EvalStatus::Ok) << "relu_ok after " << name << ": " << ms[1].error;
    bool poisons_context = want == EvalStatus::CudaError || want == EvalStatus::Timeout;
    EXPECT_EQ(ms[0].worker_replaced, poisons_context) << name;
    EXPECT_FALSE(ms[1].worker_replaced);
    if (want == EvalStatus::Ok) {
      EXPECT_GT(ms[0].speedup, 0.0);
      ASSERT_EQ(ms[0].workloads.size(), 1u);
      EXPECT_EQ(ms[0].workloads[0].trials, 3);
      EXPECT_GT(ms[0].workloads[0].candidate.n, 0);
      EXPECT_EQ(ms[0].workloads[0].candidate.kernels, 1);
    }
    if (want == EvalStatus::WrongResult) {
      ASSERT_FALSE(ms[0].workloads.empty());
      EXPECT_GT(ms[0].workloads.back().worst.count, 0);
      EXPECT_EQ(ms[0].workloads.back().worst.output, "y");
    }
  }
}

// On the large workload eager takes milliseconds and the skipping kernel microseconds. Its launch
// counter lives in module memory, which the worker resets before every launch: the timed runs
// compute, and the probe with nothing reset finds it skipping work (reward integrity: `stateful`,
// where it was `timed_run_wrong` before module memory was reset).
TEST_F(RunnerGpu, SkippingWorkWhenTimedIsCaughtNotRewarded) {
  Runner ev(options({0}));
  std::vector<Measurement> ms = ev.evaluate({job("relu_skip_when_timed"), job("relu_ok")});
  report(ms[0]);
  report(ms[1]);
  EXPECT_EQ(ms[0].status, EvalStatus::Stateful) << ms[0].error;
  EXPECT_EQ(ms[1].status, EvalStatus::Ok) << ms[1].error;
  // The honest kernel is near the copy floor on this workload, as eager's relu is.
  EXPECT_GT(ms[1].speedup, 0.5);
  EXPECT_LT(ms[1].speedup, 2.0);
}

// Re-verification on the held-back workload: forced here by a low threshold; an honest
// candidate passes it.
TEST_F(RunnerGpu, AnHonestCandidatePassesTheHeldBackCheck) {
  EvalOptions o = options({});
  o.held_back = 1;
  o.reverify_above = 0.01;
  Runner ev(o);
  Measurement m = ev.evaluate({job("relu_ok")}).front();
  report(m);
  EXPECT_EQ(m.status, EvalStatus::Ok) << m.error;
  EXPECT_TRUE(m.held_back_checked);
  ASSERT_EQ(m.workloads.size(), 1u);
  EXPECT_EQ(m.workloads[0].workload, 0);
}

// The contract's small workload is checked, not timed: every trial runs there (a kernel wrong
// there has no fitness), nothing is timed there, and the fitness is the timed workload's alone.
TEST_F(RunnerGpu, ACheckedOnlyWorkloadIsCheckedNotTimed) {
  task_.workloads[1].timed = false;  // as tasks/01_relu.json says
  Runner all(options({}));
  Measurement m = all.evaluate({job("relu_ok")}).front();
  report(m);
  ASSERT_EQ(m.status, EvalStatus::Ok) << m.error;
  ASSERT_EQ(m.workloads.size(), 2u);
  const WorkloadMeasurement& big = m.workloads[0];
  const WorkloadMeasurement& small = m.workloads[1];
  EXPECT_TRUE(big.timed);
  EXPECT_GT(big.candidate.n, 0);
  EXPECT_FALSE(small.timed);
  EXPECT_EQ(small.trials, 3);
  EXPECT_EQ(small.candidate.n, 0);
  EXPECT_EQ(small.eager.n, 0);
  EXPECT_EQ(small.speedup, 0.0);
  EXPECT_NEAR(m.fitness, big.eager.median_ms / big.candidate.median_ms, 1e-9 * m.fitness);
  Runner checked(options({1}));
  Measurement wrong = checked.evaluate({job("relu_wrong")}).front();
  EXPECT_EQ(wrong.status, EvalStatus::WrongResult) << wrong.error;
  EXPECT_EQ(wrong.fitness, 0.0);
}

TEST_F(RunnerGpu, FiftyEvaluationsWithFaultsInterleavedLoseNothing) {
  Runner ev(options({1}));
  const std::vector<std::pair<std::string, EvalStatus>> cycle = {
      {"relu_ok", EvalStatus::Ok},           {"relu_wrong", EvalStatus::WrongResult},
      {"relu_ok", EvalStatus::Ok},           {"relu_oob_far", EvalStatus::CudaError},
      {"relu_ok", EvalStatus::Ok},           {"relu_writes_input", EvalStatus::InputModified},
      {"relu_stale", EvalStatus::Unwritten}, {"relu_ok", EvalStatus::Ok},
      {"relu_nan", EvalStatus::NotFinite},   {"relu_too_much_smem", EvalStatus::LaunchError}};
  std::vector<EvalJob> jobs;
  std::vector<EvalStatus> want;
  for (int i = 0; i < 50; ++i) {
    jobs.push_back(job(cycle[static_cast<size_t>(i) % cycle.size()].first));
    want.push_back(cycle[static_cast<size_t>(i) % cycle.size()].second);
  }
  // Two hangs among them.
  jobs[17] = job("relu_hang"), want[17] = EvalStatus::Timeout;
  jobs[41] = job("relu_hang"), want[41] = EvalStatus::Timeout;
  std::vector<Measurement> ms = ev.evaluate(jobs);
  ASSERT_EQ(ms.size(), jobs.size());
  int mismatches = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    if (ms[i].status != want[i]) {
      ++mismatches;
      std::printf("evaluation %zu: ", i);
      report(ms[i]);
    }
    EXPECT_EQ(ms[i].candidate, jobs[i].candidate.name) << "results out of order at " << i;
  }
  EXPECT_EQ(mismatches, 0);
  const EvalStats& s = ev.stats();
  std::printf("50 evaluations in %.1f s: %.1f per minute, %d workers replaced\n", s.wall_seconds,
              60.0 * s.evaluations / s.wall_seconds, s.workers_replaced);
  EXPECT_EQ(s.evaluations, 50);
  EXPECT_EQ(s.workers_replaced, 7);  // five sticky errors, two hangs
}

}  // namespace
}  // namespace kevo::eval
