// Max, average and adaptive pooling in 1-D, 2-D and 3-D: interpreted references against LibTorch.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using torch::Tensor;

void check(const std::string& expr, const NamedTensors& in, const Tensor& expected) {
  expect_returns(expr, in, expected, 1e-5, 1e-5);
}

struct PoolOps : ::testing::Test {
  void SetUp() override { torch::manual_seed(7); }
};

TEST_F(PoolOps, MaxPool2d) {
  Tensor x = torch::randn({2, 3, 7, 5}), x3 = torch::randn({3, 4, 4});
  NamedTensors in = {{"x", x}, {"x3", x3}, {"m", torch::randn({4, 4})}};
  check("F.max_pool2d(x, 2)", in, torch::max_pool2d(x, 2));
  check("F.max_pool2d(x, 3, stride=2, padding=1)", in, torch::max_pool2d(x, 3, 2, 1));
  check("F.max_pool2d(x, (3, 2), (2, 1), ceil_mode=True)", in, torch::max_pool2d(x, {3, 2}, {2, 1}, 0, 1, true));
  check("F.max_pool2d(x, 2, dilation=2)", in, torch::max_pool2d(x, 2, 2, 0, 2));
  check("torch.max_pool2d(x, 2)", in, torch::max_pool2d(x, 2));
  check("F.max_pool2d(x3, kernel_size=2, stride=1)", in, torch::max_pool2d(x3, 2, 1));
  // ceil_mode: the last window of width 5 would start in the right padding, so it is dropped.
  Tensor ceil = torch::max_pool2d(x, 3, 3, 1, 1, true);
  EXPECT_EQ(ceil.sizes(), (std::vector<int64_t>{2, 3, 3, 2}));
  check("F.max_pool2d(x, 3, 3, 1, ceil_mode=True)", in, ceil);
  check("F.max_pool2d(x, 2)", {{"x", torch::arange(16.0).view({1, 1, 4, 4})}},
        torch::tensor({5.0f, 7.0f, 13.0f, 15.0f}).view({1, 1, 2, 2}));
  Node n = lowered("F.max_pool2d(x, 3, padding=1)", in);
  EXPECT_EQ(attr_ints(n, "stride"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(attr_ints(n, "dilation"), (std::vector<int64_t>{1, 1}));

  expect_errors_at(in, {
      {"F.max_pool2d(x, 3, padding=2)", "padding", "must be at most half the kernel size [3, 3], got [2, 2]"},
      {"F.max_pool2d(x, 8)", "F", "max_pool2d: input [2, 3, 7, 5] is too small for kernel [8, 8]"},
      {"F.max_pool2d(m, 2)", "m,", "must be 3-D or 4-D (batched), got shape [4, 4]"},
      {"F.max_pool2d(x, 0)", "0", "must be positive"},
  });
}

TEST_F(PoolOps, AvgPool2d) {
  Tensor x = torch::randn({2, 3, 7, 5});
  NamedTensors in = {{"x", x}};
  check("F.avg_pool2d(x, 2)", in, torch::avg_pool2d(x, 2));
  check("F.avg_pool2d(x, 3, 2, 1)", in, torch::avg_pool2d(x, 3, 2, 1));
  check("F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)", in, torch::avg_pool2d(x, 3, 2, 1, false, false));
  check("F.avg_pool2d(x, (2, 3), ceil_mode=True, divisor_override=4)", in,
        torch::avg_pool2d(x, {2, 3}, {2, 3}, 0, true, true, 4));
  Tensor y = torch::randn({1, 1, 2, 2});
  check("F.avg_pool2d(y, 2)", {{"y", y}}, y.mean().view({1, 1, 1, 1}));
  Node n = lowered("F.avg_pool2d(x, 2)", in);
  EXPECT_TRUE(attr_is_none(n, "divisor_override"));
  EXPECT_TRUE(attr_bool(n, "count_include_pad"));
  EXPECT_EQ(attr_int(lowered("F.avg_pool2d(x, 2, divisor_override=3)", in), "divisor_override"), 3);

  expect_errors_at(in, {
      {"F.avg_pool2d(x, 2, divisor_override=0)", "divisor_override", "must not be zero"},
      {"F.avg_pool2d(x, 2, padding=(0, 2))", "padding", "must be at most half the kernel size"},
      {"F.avg_pool2d(x, 2, ceil_mode=1)", "ceil_mode", "must be bool, got int"},
  });
}

TEST_F(PoolOps, AvgPool1d) {
  Tensor s = torch::randn({2, 3, 9}), s2 = torch::randn({3, 9});
  NamedTensors in = {{"s", s}, {"s2", s2}, {"x", torch::randn({1, 2, 3, 4})}};
  check("F.avg_pool1d(s, 3)", in, s.view({2, 3, 3, 3}).mean(-1));
  check("torch.avg_pool1d(s, 3, 2, 1, True, False)", in, torch::avg_pool1d(s, 3, 2, 1, true, false));
  check("F.avg_pool1d(s, kernel_size=(2,), stride=(3,))", in, torch::avg_pool1d(s, 2, 3));
  check("F.avg_pool1d(s2, 3)", in, torch::avg_pool1d(s2.unsqueeze(0), 3).squeeze(0));
  Node n = lowered("F.avg_pool1d(s, 3)", in);
  EXPECT_EQ(n.op, "avg_pool1d");
  EXPECT_EQ(attr_ints(n, "kernel_size"), (std::vector<int64_t>{3}));

  expect_errors_at(in, {
      {"F.avg_pool1d(s, (2, 2))", "(2", "must be an int or a tuple of 1 ints, got 2 values"},
      {"F.avg_pool1d(x, 2)", "x", "must be 2-D or 3-D (batched), got shape [1, 2, 3, 4]"},
  });
}

TEST_F(PoolOps, MaxPool1dAnd3d) {
  Tensor s = torch::randn({2, 3, 11}), v = torch::randn({2, 3, 6, 7, 5});
  NamedTensors in = {{"s", s}, {"v", v}};
  check("F.max_pool1d(s, 3)", in, torch::max_pool1d(s, 3));
  check("F.max_pool1d(s, kernel_size=4, stride=2, padding=1, dilation=2, ceil_mode=True)", in,
        torch::max_pool1d(s, 4, 2, 1, 2, true));
  check("torch.max_pool1d(s[0], 2)", in, torch::max_pool1d(s[0], 2));
  check("F.max_pool3d(v, 2)", in, torch::max_pool3d(v, 2));
  // KernelBench level 1, 43: kernel 3, stride 2, padding 1, dilation 3.
  check("F.max_pool3d(v, kernel_size=3, stride=2, padding=1, dilation=3, ceil_mode=False, return_indices=False)", in,
        torch::max_pool3d(v, 3, 2, 1, 3));
  check("F.max_pool3d(v, (2, 3, 2), stride=(1, 2, 2), ceil_mode=True)", in,
        torch::max_pool3d(v, {2, 3, 2}, {1, 2, 2}, 0, 1, true));
  check("torch.max_pool3d(v[1], 3, 1, 1)", in, torch::max_pool3d(v[1], 3, 1, 1));
  EXPECT_EQ(lowered("F.max_pool3d(v, 2)", in).op, "max_pool3d");
  expect_half_precision_matches("F.max_pool3d(v, 3, 2, 1)", in, 0.0, 0.0);
  expect_half_precision_matches("F.max_pool1d(s, 2, 1, 1)", in, 0.0, 0.0);
  expect_errors_at(in, {
      {"F.max_pool3d(v, 3, padding=2)", "padding", "must be at most half the kernel size [3, 3, 3], got [2, 2, 2]"},
      {"F.max_pool3d(s, 2)", "s,", "must be 4-D or 5-D (batched), got shape [2, 3, 11]"},
      {"F.max_pool1d(s, (2, 2))", "(2", "must be an int or a tuple of 1 ints, got 2 values"},
      {"F.max_pool3d(v, 6)", "F", "max_pool3d: input [2, 3, 6, 7, 5] is too small for kernel [6, 6, 6]"},
  });
}

TEST_F(PoolOps, MaxPoolReturnsIndicesWhenAsked) {
  Tensor x = torch::randn({2, 3, 6, 5}), s = torch::randn({2, 3, 9}), v = torch::randn({1, 2, 4, 4, 4});
  NamedTensors in = {{"x", x}, {"s", s}, {"v", v}};
  auto pair = [](const std::tuple<Tensor, Tensor>& r) { return std::vector<Tensor>{std::get<0>(r), std::get<1>(r)}; };
  expect_returns("F.max_pool2d(x, 2, return_indices=True)", in, pair(torch::max_pool2d_with_indices(x, 2, 2)));
  expect_returns("F.max_pool1d(s, 3, 2, return_indices=True)", in, pair(torch::max_pool1d_with_indices(s, 3, 2)));
  expect_returns("F.max_pool3d(v, 2, return_indices=True)", in, pair(torch::max_pool3d_with_indices(v, 2, 2)));
  Graph g = lower_for(returning("F.max_pool2d(x, 2, return_indices=True)", in), in);
  EXPECT_EQ(g.nodes.back().op, "max_pool2d_with_indices");
  EXPECT_EQ(g.values[g.outputs[1]].dtype, DType::Int64);
}

TEST_F(PoolOps, AvgPool3d) {
  Tensor v = torch::randn({2, 3, 6, 7, 5});
  NamedTensors in = {{"v", v}};
  check("F.avg_pool3d(v, 2)", in, torch::avg_pool3d(v, 2));
  check("F.avg_pool3d(v, kernel_size=3, stride=2, padding=1)", in, torch::avg_pool3d(v, 3, 2, 1));
  check("F.avg_pool3d(v, 3, 2, 1, count_include_pad=False, ceil_mode=True)", in,
        torch::avg_pool3d(v, 3, 2, 1, true, false));
  check("F.avg_pool3d(v, (2, 3, 1), divisor_override=5)", in, torch::avg_pool3d(v, {2, 3, 1}, {2, 3, 1}, 0, false, true, 5));
  check("F.avg_pool3d(v[0], 2)", in, torch::avg_pool3d(v[0], 2));
  Node n = lowered("F.avg_pool3d(v, 2)", in);
  EXPECT_EQ(n.op, "avg_pool3d");
  EXPECT_TRUE(attr_is_none(n, "divisor_override"));
  expect_half_precision_matches("F.avg_pool3d(v, 3, 2, 1)", in);
  expect_errors_at(in, {
      {"F.avg_pool3d(v, 2, divisor_override=0)", "divisor_override", "must not be zero"},
      {"F.avg_pool3d(v, 2, padding=(0, 0, 2))", "padding", "must be at most half the kernel size"},
  });
}

TEST_F(PoolOps, AdaptivePooling) {
  Tensor s = torch::randn({2, 3, 10}), x = torch::randn({2, 3, 7, 9}), v = torch::randn({2, 3, 5, 6, 7});
  NamedTensors in = {{"s", s}, {"x", x}, {"v", v}};
  check("F.adaptive_avg_pool1d(s, 4)", in, torch::adaptive_avg_pool1d(s, 4));
  check("torch.adaptive_avg_pool1d(s, 3)", in, torch::adaptive_avg_pool1d(s, 3));
  check("F.adaptive_avg_pool2d(x, 1)", in, x.mean({2, 3}, true));  // KernelBench level 2, 67
  check("F.adaptive_avg_pool2d(x, (3, None))", in, torch::adaptive_avg_pool2d(x, {3, 9}));
  check("F.adaptive_avg_pool2d(x[0], output_size=(4, 5))", in, torch::adaptive_avg_pool2d(x[0], {4, 5}));
  check("F.adaptive_avg_pool3d(v, (1, 1, 1))", in, v.mean({2, 3, 4}, true));  // nn.AdaptiveAvgPool3d((1, 1, 1))
  check("F.adaptive_avg_pool3d(v, (2, 4, 3))", in, torch::adaptive_avg_pool3d(v, {2, 4, 3}));
  check("F.adaptive_max_pool1d(s, 3)", in, std::get<0>(torch::adaptive_max_pool1d(s, 3)));
  check("F.adaptive_max_pool2d(x, (2, 4))", in, std::get<0>(torch::adaptive_max_pool2d(x, {2, 4})));
  check("F.adaptive_max_pool3d(v, 2)", in, std::get<0>(torch::adaptive_max_pool3d(v, {2, 2, 2})));
  auto r = torch::adaptive_max_pool2d(x, {3, 3});
  expect_returns("F.adaptive_max_pool2d(x, 3, return_indices=True)", in, {std::get<0>(r), std::get<1>(r)});
  Node n = lowered("F.adaptive_avg_pool3d(v, (1, None, 2))", in);
  EXPECT_EQ(n.op, "adaptive_avg_pool3d");
  EXPECT_EQ(attr_ints(n, "output_size"), (std::vector<int64_t>{1, 6, 2}));
  expect_half_precision_matches("F.adaptive_avg_pool3d(v, (2, 4, 3))", in);
  expect_errors_at(in, {
      {"F.adaptive_avg_pool2d(x, (2, 2, 2))", "(2", "must be an int or a tuple of 2 ints (or None), got 3 values"},
      {"F.adaptive_avg_pool3d(v, 0)", "0", "must hold positive ints or None, got 0"},
      {"F.adaptive_avg_pool1d(x, 2)", "x", "must be 2-D or 3-D (batched), got shape [2, 3, 7, 9]"},
  });
}

}  // namespace
}  // namespace kevo
