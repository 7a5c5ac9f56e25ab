// The oracle on the GPU: every bundled task's reference gives on CUDA what it gives on the CPU.
#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <string>

#include "core/task.h"
#include "eval/inputs.h"
#include "eval/torch_graph.h"

namespace kevo::eval {
namespace {

class OracleGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible to LibTorch: GPU tests skipped";
  }
};

TEST_P(OracleGpu, SmallestWorkloadMatchesTheCpu) {
  Task task = load_task(std::string(KEVO_SOURCE_ROOT) + "/tasks/" + GetParam() + ".json");
  const Workload* smallest = &task.workloads[0];
  for (const Workload& w : task.workloads)
    if (task.bytes_moved(w) < task.bytes_moved(*smallest)) smallest = &w;
  Graph g = task.graph(*smallest);
  std::vector<torch::Tensor> cpu_in = make_inputs(task, *smallest, 7);
  std::vector<torch::Tensor> gpu_in;
  for (const torch::Tensor& t : cpu_in) gpu_in.push_back(t.to(torch::kCUDA));
  // Drawn on the GPU itself: reproducible from the seed, and within the contract's distribution.
  std::vector<torch::Tensor> drawn = make_inputs(task, *smallest, 7, torch::Device(torch::kCUDA));
  std::vector<torch::Tensor> again = make_inputs(task, *smallest, 7, torch::Device(torch::kCUDA));
  for (size_t i = 0; i < drawn.size(); ++i) {
    ASSERT_TRUE(drawn[i].is_cuda());
    ASSERT_TRUE(torch::equal(drawn[i], again[i])) << "input " << i;
    ASSERT_EQ(drawn[i].sizes(), cpu_in[i].sizes());
    if (drawn[i].is_floating_point() && drawn[i].numel() > 1000) {
      EXPECT_NEAR(drawn[i].mean().item<double>(), cpu_in[i].mean().item<double>(),
                  0.1 * (cpu_in[i].std().item<double>() + 1e-3))
          << "input " << i;
    }
  }
  std::vector<torch::Tensor> want = run_graph(g, cpu_in);
  std::vector<torch::Tensor> got = run_graph(g, gpu_in);
  // cuDNN and cuBLAS may pick TF32; the oracle must not, or it would fail honest fp32 kernels.
  EXPECT_FALSE(at::globalContext().allowTF32CuBLAS());
  EXPECT_FALSE(at::globalContext().allowTF32CuDNN());
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(got[i].is_cuda());
    torch::Tensor a = got[i].cpu();
    if (a.is_floating_point()) {
      EXPECT_TRUE(torch::allclose(a.to(torch::kFloat64), want[i].to(torch::kFloat64), task.tolerance.rtol,
                                  task.tolerance.atol))
          << GetParam() << " output " << i << ": max abs diff "
          << (a.to(torch::kFloat64) - want[i].to(torch::kFloat64)).abs().max().item<double>();
    } else {
      EXPECT_TRUE(torch::equal(a, want[i])) << GetParam() << " output " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tasks, OracleGpu,
                         ::testing::Values("01_relu", "02_gelu", "03_softmax", "04_rms_norm", "05_layer_norm",
                                           "06_sum_dim1", "07_argmax_dim1", "08_gelu_tanh_explicit", "09_cumsum",
                                           "10_mse_loss", "11_hinge_loss", "12_max_pool2d", "13_linear_leaky_relu",
                                           "14_conv2d_relu_bias"));

}  // namespace
}  // namespace kevo::eval
