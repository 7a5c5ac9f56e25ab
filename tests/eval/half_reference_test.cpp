// The CPU reference of a float16 or bfloat16 graph is the same on every CPU: each node computes in
// float32 and rounds its outputs once, as the GPU's kernels do, whichever half-precision kernels
// LibTorch has on this CPU and whichever path (oneDNN's, by the instruction set) they would take;
// shown with oneDNN on and off, the second forcing the path that keeps bfloat16 sums.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using torch::Tensor;

// oneDNN on (LibTorch's default) or off. With it off, LibTorch's own bfloat16 CPU convolution
// takes its fallback path, which keeps its running sums in bfloat16: the path a CPU without
// oneDNN's bfloat16 support (no AVX-512 BF16) takes, forced here on any CPU.
class HalfReference : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    was_ = at::globalContext().userEnabledMkldnn();
    at::globalContext().setUserEnabledMkldnn(GetParam());
    if (!GetParam() && !accumulates_in_bfloat16())
      GTEST_SKIP() << "with oneDNN off, this LibTorch's bfloat16 convolution keeps float32 sums: nothing to force";
  }
  void TearDown() override { at::globalContext().setUserEnabledMkldnn(was_); }

  // Whether LibTorch's bfloat16 convolution, called directly, loses 4,096 products of ones.
  static bool accumulates_in_bfloat16() {
    const Tensor ones = torch::ones({1, 64, 64}, torch::kBFloat16);
    return torch::conv1d(ones, ones).item<double>() != 4096.0;
  }

 private:
  bool was_ = true;
};

INSTANTIATE_TEST_SUITE_P(OneDnn, HalfReference, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "on" : "off"; });

// Sums of 4,096 ones. Every partial sum is an integer below 2^24, so float32 accumulation gives
// 4,096 exactly, and so does the rounding to either half type (a power of two). A kernel keeping
// its running sum in bfloat16 stops at 256 (256 + 1 rounds back to 256), one in float16 at 2,048:
// whatever path LibTorch's half CPU kernels take, the reference must not be such a kernel.
TEST_P(HalfReference, SumsAreKeptInFloat32) {
  const NamedTensors ones = {{"v", torch::ones({1, 4096})},     {"c", torch::ones({1, 4096, 1})},
                             {"x", torch::ones({1, 64, 64})},    {"w", torch::ones({1, 64, 64})},
                             {"x3", torch::ones({1, 16, 4, 8, 8})}, {"w3", torch::ones({1, 16, 4, 8, 8})},
                             {"m", torch::ones({4096, 1})}};
  for (torch::ScalarType dtype : {torch::kBFloat16, torch::kFloat16}) {
    const NamedTensors in = rounded_to(ones, dtype);
    for (const char* expr : {"v.sum(-1)", "torch.cumsum(v, -1)[:, -1]", "F.conv1d(x, w).flatten()",
                             "F.conv3d(x3, w3).flatten()", "(v @ m).flatten()", "F.linear(v, m.t()).flatten()",
                             "torch.bmm(c.transpose(1, 2), c).flatten()", "v.mean(-1) * 4096"}) {
      SCOPED_TRACE(std::string(expr) + " in " + c10::toString(dtype));
      std::vector<Tensor> got = run_reference(returning(expr, in), in);
      ASSERT_EQ(got.size(), 1u);
      ASSERT_EQ(got[0].scalar_type(), dtype);
      EXPECT_EQ(got[0].to(torch::kFloat64).item<double>(), 4096.0);
    }
  }
}

// Bit for bit: a half graph of one op is the float32 op on the widened operands, rounded once. The
// operations whose half CPU kernels accumulate (convolutions plain, grouped and transposed in 1-D
// to 3-D, products, reductions, scans, norms, softmax, pooling) with random inputs of mixed signs,
// where an accumulator kept in 16 bits is many units in the last place away.
TEST_P(HalfReference, AnOpIsItsFloat32RunRoundedOnce) {
  torch::manual_seed(11);
  const NamedTensors in = {{"x1", torch::randn({2, 8, 33})},        {"w1", torch::randn({6, 8, 5})},
                           {"x3", torch::randn({1, 4, 4, 5, 3}) * 3}, {"w3", torch::randn({6, 4, 3, 2, 2})},
                           {"t2", torch::randn({8, 3, 3, 2})},      {"x2", torch::randn({2, 8, 9, 7})},
                           {"a", torch::randn({16, 300})},          {"bm", torch::randn({300, 24})},
                           {"wg", torch::randn({6, 4, 3, 3})},      {"b", torch::randn({6})}};
  const char* exprs[] = {"F.conv1d(x1, w1, padding=2)",
                         "F.conv3d(x3, w3, b, padding=1)",
                         "F.conv2d(x2, wg, groups=2)",
                         "F.conv_transpose2d(x2, t2, stride=2)",
                         "F.conv_transpose1d(x1, w1.transpose(0, 1).contiguous(), stride=2, output_padding=1)",
                         "a @ bm",
                         "a.sum(-1)",
                         "torch.cumsum(a, -1)",
                         "F.layer_norm(a, (300,))",
                         "torch.softmax(a, -1)",
                         "F.avg_pool2d(x2, 3)",
                         "torch.logsumexp(a, -1)"};
  for (torch::ScalarType dtype : {torch::kBFloat16, torch::kFloat16}) {
    const NamedTensors half = rounded_to(in, dtype), wide = rounded_to(half, torch::kFloat32);
    for (const char* expr : exprs) {
      SCOPED_TRACE(std::string(expr) + " in " + c10::toString(dtype));
      const Tensor got = run_reference(returning(expr, half), half).at(0);
      const Tensor want = run_reference(returning(expr, wide), wide).at(0).to(dtype);
      ASSERT_EQ(got.scalar_type(), dtype);
      EXPECT_TRUE(torch::equal(got, want)) << "max abs diff "
                                           << (got.to(torch::kFloat32) - want.to(torch::kFloat32)).abs().max().item<double>();
    }
  }
}

}  // namespace
}  // namespace kevo
