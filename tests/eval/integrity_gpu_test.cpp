// Reward integrity on the GPU: planted candidates of each class documented in public kernel
// benchmarks earn their own status, not a fitness, and a correct candidate right after still
// evaluates. Answers remembered between launches in scratch, in module memory or on the device
// heap (a loss and a GEMM) are `stateful`; zeros that pass softmax's atol are
// `input_independent`; a loss's expectation and a hinge loss computed from its labels alone are
// `distribution_fitted`; a sample of the input at a loose tolerance is `faster_than_light`. Each
// earns its status under screening too.
#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/builder.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/runner.h"

namespace kevo::eval {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

class IntegrityGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_api()) GTEST_SKIP() << "no CUDA GPU: " << cuda_driver_status().error;
    if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA GPU";
  }

  const Task& task(const std::string& file) {
    auto it = tasks_.find(file);
    if (it == tasks_.end()) it = tasks_.emplace(file, load_task(kRoot + file)).first;
    return it->second;
  }

  EvalJob job(const std::string& task_file, const std::string& candidate) {
    EvalJob j;
    j.task = &task(task_file);
    j.candidate = load_candidate(kRoot + candidate, *j.task);
    BuildRequest req;
    req.source = j.candidate.source;
    req.name_expressions = j.candidate.kernel_names();
    req.arch = device_arch(0);
    j.build = build(req);
    return j;
  }

  // Evaluates `planted` then `honest` on the task's large workload; the first must earn `want`,
  // the second `ok`. Then again with screening (docs/evaluation.md#screening), the planted one held
  // to the bar the honest one sets as its cell's elite: a hack must earn its status there too, and
  // never pass for an ordinary candidate screened out.
  void expect(const std::string& task_file, const std::string& planted, EvalStatus want, const std::string& honest) {
    EvalOptions o;
    o.kevo_binary = KEVO_BINARY;
    o.gpus = {0};
    o.workloads = {0};
    o.max_seconds = 1;
    Runner runner(o);
    std::vector<EvalJob> jobs = {job(task_file, "tests/data/planted/" + planted + ".cu"), job(task_file, honest)};
    const std::vector<Measurement> ms = runner.evaluate(jobs);
    ASSERT_EQ(ms.size(), 2u);
    for (const Measurement& m : ms)
      std::printf("%-24s %-20s speedup %8.2f  %s\n", m.candidate.c_str(), to_string(m.status), m.speedup, m.error.c_str());
    EXPECT_EQ(ms[0].status, want) << planted << ": " << ms[0].error;
    EXPECT_EQ(ms[0].error.find('\n'), std::string::npos) << "not one line: " << ms[0].error;
    ASSERT_EQ(ms[1].status, EvalStatus::Ok) << honest << " after " << planted << ": " << ms[1].error;

    jobs[0].admit_fitness = ms[1].fitness;
    const std::vector<Measurement> screened = runner.evaluate(jobs);
    std::printf("%-24s %-20s screened at %.3f against a bar of %.3f  %s\n", screened[0].candidate.c_str(),
                to_string(screened[0].status), screened[0].screen_fitness, ms[1].fitness, screened[0].error.c_str());
    EXPECT_EQ(screened[0].status, want) << planted << " under screening: " << screened[0].error;
    EXPECT_EQ(screened[1].status, EvalStatus::Ok) << honest << " after " << planted << " under screening: " << screened[1].error;
  }

  std::map<std::string, Task> tasks_;
};

const std::string kMse = "tasks/10_mse_loss.json", kHinge = "tasks/11_hinge_loss.json",
                  kSoftmax = "tasks/03_softmax.json", kLinear = "tasks/13_linear_leaky_relu.json",
                  kMseLoose = "tests/data/tasks/mse_loose.json";
const std::string kMseOk = "tests/data/planted/mse_ok.cu", kHingeOk = "tests/data/planted/hinge_ok.cu",
                  kSoftmaxOk = "tests/data/candidates/softmax.cu", kLinearOk = "tests/data/candidates/linear_leaky_relu.json";

TEST_F(IntegrityGpu, AnAnswerRememberedInScratchIsStateful) {
  expect(kMse, "mse_scratch_cache", EvalStatus::Stateful, kMseOk);
  expect(kLinear, "linear_scratch_cache", EvalStatus::Stateful, kLinearOk);
}

TEST_F(IntegrityGpu, AnAnswerRememberedInModuleMemoryIsStateful) {
  expect(kMse, "mse_module_cache", EvalStatus::Stateful, kMseOk);
  expect(kLinear, "linear_module_cache", EvalStatus::Stateful, kLinearOk);
}

TEST_F(IntegrityGpu, TheDeviceHeapIsRefused) { expect(kMse, "mse_heap_cache", EvalStatus::Stateful, kMseOk); }

TEST_F(IntegrityGpu, ZerosThatPassSoftmaxsAtolAreInputIndependent) {
  expect(kSoftmax, "softmax_zeros", EvalStatus::InputIndependent, kSoftmaxOk);
}

TEST_F(IntegrityGpu, AnswersFromTheDeclaredDistributionAreDistributionFitted) {
  expect(kMse, "mse_expectation", EvalStatus::DistributionFitted, kMseOk);
  expect(kHinge, "hinge_labels_only", EvalStatus::DistributionFitted, kHingeOk);
}

TEST_F(IntegrityGpu, ASampleOfTheInputAtALooseToleranceIsFasterThanLight) {
  expect(kMseLoose, "mse_sampled", EvalStatus::FasterThanLight, kMseOk);
}

}  // namespace
}  // namespace kevo::eval
