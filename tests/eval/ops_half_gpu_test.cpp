// The new ops and half precision on the GPU: tasks/half/ references on CUDA (LibTorch's own half
// kernels) match the CPU (float32 where LibTorch has no CPU half kernel) within each contract's
// tolerance; a Python number meets a half tensor on CUDA exactly as in PyTorch; the new ops give
// on CUDA what they give on the CPU.
#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <string>

#include "core/task.h"
#include "eval/inputs.h"
#include "eval/torch_graph.h"
#include "op_test_util.h"

namespace kevo::eval {
namespace {

using kevo::testing::NamedTensors;

class HalfTasksOnGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible to LibTorch: GPU tests skipped";
  }
};

struct HalfOnGpu : ::testing::Test {
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible to LibTorch: GPU tests skipped";
  }
};

TEST_P(HalfTasksOnGpu, SmallestWorkloadMatchesTheCpu) {
  Task task = load_task(std::string(KEVO_SOURCE_ROOT) + "/tasks/half/" + GetParam() + ".json");
  const Workload* smallest = &task.workloads[0];
  for (const Workload& w : task.workloads)
    if (task.bytes_moved(w) < task.bytes_moved(*smallest)) smallest = &w;
  Graph g = task.graph(*smallest);
  std::vector<torch::Tensor> cpu_in = make_inputs(task, *smallest, 7), gpu_in;
  for (const torch::Tensor& t : cpu_in) gpu_in.push_back(t.to(torch::kCUDA));
  std::vector<torch::Tensor> want = run_graph(g, cpu_in), got = run_graph(g, gpu_in);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].scalar_type(), want[i].scalar_type());
    torch::Tensor a = got[i].cpu().to(torch::kFloat64), b = want[i].to(torch::kFloat64);
    EXPECT_TRUE(torch::allclose(a, b, task.tolerance.rtol, task.tolerance.atol))
        << GetParam() << " output " << i << ": max abs diff " << (a - b).abs().max().item<double>();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tasks, HalfTasksOnGpu,
    ::testing::Values("relu_fp16", "relu_bf16", "gelu_fp16", "gelu_bf16", "softmax_fp16", "softmax_bf16", "rms_norm_fp16",
                      "rms_norm_bf16", "layer_norm_fp16", "layer_norm_bf16", "linear_leaky_relu_fp16",
                      "linear_leaky_relu_bf16", "conv2d_relu_bias_fp16", "conv2d_relu_bias_bf16",
                      "fused_add_rms_norm_fp16", "fused_add_rms_norm_bf16", "silu_and_mul_fp16", "silu_and_mul_bf16",
                      "softmax_fp32_math_fp16", "softmax_fp32_math_bf16"));

NamedTensors on(const NamedTensors& in, torch::Device d) {
  NamedTensors out;
  for (const auto& [name, t] : in) out.push_back({name, t.to(d)});
  return out;
}

// PyTorch multiplies a CUDA float16 tensor by the float 0.1, not by 0.1 rounded to float16.
TEST_F(HalfOnGpu, PythonNumbersAreWrappedScalars) {
  torch::manual_seed(3);
  torch::Tensor h = torch::randn({4096}).to(torch::kFloat16).to(torch::kCUDA);
  NamedTensors in = {{"h", h}};
  for (const auto& [expr, expected] : std::vector<std::pair<std::string, torch::Tensor>>{
           {"h * 0.1", h * 0.1}, {"h / 3.0", h / 3.0}, {"h + 0.3", h + 0.3}, {"h * 1.7 - 0.9", h * 1.7 - 0.9}}) {
    std::vector<torch::Tensor> got = kevo::testing::run_reference(kevo::testing::returning(expr, in), in);
    EXPECT_TRUE(torch::equal(got[0], expected)) << expr;
  }
}

TEST_F(HalfOnGpu, NewOpsMatchTheCpu) {
  torch::manual_seed(5);
  NamedTensors in = {{"x", torch::randn({2, 4, 5, 6, 7})}, {"w", torch::randn({4, 3, 3, 3, 3})},
                     {"q", torch::randn({2, 3, 16, 8})}, {"k", torch::randn({2, 3, 12, 8})},
                     {"v", torch::randn({2, 3, 12, 8})}, {"m", torch::randn({6, 5})}};
  for (const char* expr :
       {"F.conv_transpose3d(x, w, stride=2, padding=1, output_padding=1)", "F.conv3d(x, w.transpose(0, 1), padding=1)",
        "F.max_pool3d(x, 3, 2, 1)", "F.avg_pool3d(x, 2)", "F.adaptive_avg_pool3d(x, (1, 2, 3))",
        "F.scaled_dot_product_attention(q, k, v)", "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
        "torch.einsum('bhld,bhsd->bhls', q, k)", "torch.cat((x[:, :2], x[:, 2:].flip(1)), 1)",
        "F.triplet_margin_loss(m, m * 2, m + 1)", "x.half().float() + x.bfloat16().float()"}) {
    SCOPED_TRACE(expr);
    std::vector<torch::Tensor> want = kevo::testing::run_reference(kevo::testing::returning(expr, in), in);
    NamedTensors gpu = on(in, torch::kCUDA);
    std::vector<torch::Tensor> got = kevo::testing::run_reference(kevo::testing::returning(expr, gpu), gpu);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) kevo::testing::expect_same(got[i].cpu(), want[i], 1e-4, 1e-4);
  }
}

}  // namespace
}  // namespace kevo::eval
