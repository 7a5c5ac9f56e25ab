// A hand-written candidate, built by the Builder for this GPU and launched from its plan through
// the driver API, matches the reference on every workload; the inputs stay untouched.
#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <string>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/builder.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/inputs.h"
#include "eval/kernel_launch.h"
#include "eval/torch_graph.h"

namespace kevo::eval {
namespace {

class CandidateGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!cuda_api()) GTEST_SKIP() << "no CUDA GPU: " << cuda_driver_status().error;
    if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA GPU";
  }
};

TEST_P(CandidateGpu, SoftmaxCandidateMatchesTheReferenceOnEveryWorkload) {
  const std::string root = std::string(KEVO_SOURCE_ROOT) + "/";
  Task task = load_task(root + "tasks/03_softmax.json");
  Candidate c = load_candidate(root + "tests/data/candidates/" + GetParam(), task);
  BuildRequest req;
  req.source = c.source;
  req.name_expressions = c.kernel_names();
  req.arch = device_arch(0);
  req.use_cache = false;
  BuildResult built = build(req);
  ASSERT_EQ(built.status, BuildStatus::Ok) << built.error << "\n" << built.log;

  // LibTorch owns the primary context; the driver API needs it current on this thread.
  torch::zeros({1}, torch::kCUDA);
  use_primary_context(0);
  const CudaApi& api = *cuda_api();
  LoadedModule module(built);

  for (size_t wi = 0; wi < task.workloads.size(); ++wi) {
    const Workload& w = task.workloads[wi];
    ResolvedPlan plan = resolve_plan(c, task, w, DeviceLimits{});
    std::vector<torch::Tensor> inputs = make_inputs(task, w, 100 + wi, torch::Device(torch::kCUDA));
    std::vector<torch::Tensor> before;
    for (const torch::Tensor& t : inputs) before.push_back(t.clone());
    std::vector<torch::Tensor> outputs, scratch;
    std::vector<CUdeviceptr> ptrs;
    size_t next_input = 0;
    for (const ResolvedBuffer& b : plan.buffers) {
      torch::Tensor t;
      if (b.role == ResolvedBuffer::Input) {
        t = inputs[next_input++];
      } else if (b.role == ResolvedBuffer::Output) {
        // Poisoned, so an element the kernel never writes cannot pass.
        t = torch::full(b.shape, std::numeric_limits<float>::quiet_NaN(),
                        torch::TensorOptions().dtype(to_torch(b.dtype)).device(torch::kCUDA));
        outputs.push_back(t);
      } else {
        t = torch::full({b.bytes}, 0xff, torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA));
        scratch.push_back(t);
      }
      ptrs.push_back(reinterpret_cast<CUdeviceptr>(t.data_ptr()));
    }
    torch::cuda::synchronize();
    launch_plan(module, plan, ptrs, nullptr);
    check_cuda(api.cuCtxSynchronize(), "the candidate's kernels");

    std::vector<torch::Tensor> expected = run_graph(task.graph(w), inputs);
    for (size_t i = 0; i < inputs.size(); ++i)
      EXPECT_TRUE(torch::equal(inputs[i], before[i])) << "input " << i << " changed, workload " << wi;
    ASSERT_EQ(outputs.size(), expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      torch::Tensor err = (outputs[i] - expected[i]).abs();
      torch::Tensor bound = task.tolerance.atol + task.tolerance.rtol * expected[i].abs();
      int64_t bad = (~(err <= bound)).sum().item<int64_t>();  // NaN compares false: never passes
      EXPECT_EQ(bad, 0) << GetParam() << " workload " << wi << ": " << bad << " elements out of tolerance, max error "
                        << err.nan_to_num(INFINITY).max().item<double>();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, CandidateGpu, ::testing::Values("softmax.cu", "softmax.json"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param == "softmax.cu" ? std::string("cu") : std::string("json");
                         });

}  // namespace
}  // namespace kevo::eval
