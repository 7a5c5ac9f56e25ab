// Norms, matmul/linear/conv2d, pooling and losses: interpreted references against LibTorch.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using torch::Tensor;

// Norms, products and losses sum many terms in float32: compare at atol 1e-5.
void check(const std::string& expr, const NamedTensors& in, const Tensor& expected) {
  expect_returns(expr, in, expected, 1e-5, 1e-5);
}

// One expected error: `expr` fails at the first `marker` in it, with a message containing `needle`.
struct ErrorCase {
  std::string expr, marker, needle;
};

// expect_error_at for each case, all on the same inputs.
void expect_errors_at(const NamedTensors& in, const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.expr);
    expect_error_at(c.expr, in, c.marker, c.needle);
  }
}

// (x - mean) / sqrt(biased var + eps) over `dims`, the statistics every norm here uses.
Tensor normalize(const Tensor& x, const std::vector<int64_t>& dims, double eps = 1e-5) {
  Tensor mean = x.mean(dims, true);
  Tensor var = (x - mean).pow(2).mean(dims, true);
  return (x - mean) / torch::sqrt(var + eps);
}

// A [C] parameter shaped to broadcast over dim 1 of a tensor of rank `rank`.
Tensor per_channel(const Tensor& p, int64_t rank) {
  std::vector<int64_t> s(rank, 1);
  s[1] = p.size(0);
  return p.view(s);
}

struct NnOps : ::testing::Test {
  void SetUp() override { torch::manual_seed(7); }
};

// --- normalizations --------------------------------------------------------------------------

TEST_F(NnOps, LayerNorm) {
  Tensor x = torch::randn({2, 3, 4}), w = torch::randn({4}), b = torch::randn({4});
  Tensor w2 = torch::randn({3, 4}), b2 = torch::randn({3, 4});
  NamedTensors in = {{"x", x}, {"w", w}, {"b", b}, {"w2", w2}, {"b2", b2}, {"wd", w.to(torch::kFloat64)}};
  check("F.layer_norm(x, (4,), w, b)", in, torch::layer_norm(x, {4}, w, b));
  check("F.layer_norm(x, (4,))", in, normalize(x, {2}));
  check("F.layer_norm(x, x.shape[1:], w2, b2, eps=1e-3)", in, normalize(x, {1, 2}, 1e-3) * w2 + b2);
  check("torch.layer_norm(x, [4], weight=w)", in, torch::layer_norm(x, {4}, w));
  check("F.layer_norm(input=x, normalized_shape=[3, 4], bias=b2)", in, normalize(x, {1, 2}) + b2);

  Node n = lowered("F.layer_norm(x, [4], w)", in);
  EXPECT_EQ(n.op, "layer_norm");
  EXPECT_EQ(n.inputs[2], -1);
  EXPECT_EQ(attr_ints(n, "normalized_shape"), (std::vector<int64_t>{4}));
  EXPECT_DOUBLE_EQ(attr_float(n, "eps"), 1e-5);

  expect_errors_at(in, {
      {"F.layer_norm(x, (3,))", "(3,)", "normalized_shape [3] does not match the last dims of input [2, 3, 4]"},
      {"F.layer_norm(x, (2, 3, 4, 1))", "(2", "does not match the last dims"},
      {"F.layer_norm(x, (4,), w2)", "w2", "argument 'weight' of layer_norm: must have shape [4], got [3, 4]"},
      {"F.layer_norm(x, 4)", "4", "must be a tuple or list of ints, got int"},
      {"F.layer_norm(x, (4,), wd)", "wd", "must have the input's dtype float32, got float64"},
      {"F.layer_norm(x, ())", "()", "must have at least one dim"},
  });
}

TEST_F(NnOps, GroupNorm) {
  Tensor x = torch::randn({2, 6, 5}), w = torch::randn({6}), b = torch::randn({6}), x4 = torch::randn({2, 4, 3, 3});
  Tensor s = torch::randn({1, 2});
  NamedTensors in = {{"x", x}, {"w", w}, {"b", b}, {"x4", x4}, {"v", torch::randn({6})}, {"s", s}};
  check("F.group_norm(x, 3, w, b)", in, torch::group_norm(x, 3, w, b));
  check("F.group_norm(x, 3)", in, normalize(x.view({2, 3, 10}), {2}).view_as(x));
  check("F.group_norm(x, 2, weight=w)", in, normalize(x.view({2, 2, 15}), {2}).view_as(x) * per_channel(w, 3));
  check("torch.group_norm(x, 6, eps=1e-3, bias=b)", in, torch::group_norm(x, 6, {}, b, 1e-3));
  check("F.group_norm(x4, 2)", in, torch::group_norm(x4, 2));
  check("torch.group_norm(s, 2)", in, torch::group_norm(s, 2));
  EXPECT_EQ(attr_int(lowered("F.group_norm(x, 3)", in), "num_groups"), 3);

  expect_errors_at(in, {
      {"F.group_norm(x, 4)", "4", "the 6 channels of input [2, 6, 5] are not divisible by num_groups=4"},
      {"F.group_norm(x, 0)", "0", "must be positive, got 0"},
      {"F.group_norm(x, 3, x4)", "x4", "must have shape [6], got [2, 4, 3, 3]"},
      {"F.group_norm(v, 1)", "v", "must have shape [N, C, *], got [6]"},
      {"F.group_norm(s, 2)", "F", "expected more than 1 value per channel when training, got input size [1, 2]"},
  });
}

TEST_F(NnOps, InstanceNorm) {
  Tensor x = torch::randn({2, 3, 4, 5}), w = torch::randn({3}), b = torch::randn({3}), x3 = torch::randn({2, 3, 6});
  Tensor one = torch::randn({2, 3, 1}), flat = torch::randn({2, 3});
  NamedTensors in = {{"x", x}, {"w", w}, {"b", b}, {"x3", x3}, {"m", torch::zeros({3})},
                     {"flat", flat}, {"one", one}};
  check("F.instance_norm(x)", in, normalize(x, {2, 3}));
  check("F.instance_norm(x, weight=w, bias=b, eps=1e-3)", in,
        normalize(x, {2, 3}, 1e-3) * per_channel(w, 4) + per_channel(b, 4));
  check("F.instance_norm(x3, None, None, w, b)", in, normalize(x3, {2}) * per_channel(w, 3) + per_channel(b, 3));
  check("torch.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False)", in,
        torch::instance_norm(x, w, b, {}, {}, true, 0.1, 1e-5, false));
  check("torch.instance_norm(one, None, b, None, None, True, 0.1, 1e-5, False)", in,
        torch::instance_norm(one, {}, b, {}, {}, true, 0.1, 1e-5, false));
  check("torch.instance_norm(flat, w, None, None, None, True, 0.1, 1e-5, False)", in,
        torch::instance_norm(flat, w, {}, {}, {}, true, 0.1, 1e-5, false));
  EXPECT_EQ(lowered("F.instance_norm(x)", in).op, "instance_norm");

  expect_errors_at(in, {
      {"F.instance_norm(x, running_mean=m)", "running_mean",
       "running statistics are not supported: the reference runs in training mode with batch statistics"},
      {"F.instance_norm(x, use_input_stats=False)", "use_input_stats", "must be True"},
      {"F.instance_norm(flat)", "F", "expected more than 1 spatial element when training, got input size [2, 3]"},
      {"F.instance_norm(w)", "w", "must have shape [N, C, *], got [3]"},
      {"F.instance_norm(one)", "F", "expected more than 1 spatial element when training, got input size [2, 3, 1]"},
  });
}

TEST_F(NnOps, BatchNormUsesBatchStatistics) {
  Tensor x = torch::randn({4, 3, 5}), w = torch::randn({3}), b = torch::randn({3}), x4 = torch::randn({2, 3, 2, 2});
  Tensor x2 = torch::randn({4, 3});
  NamedTensors in = {{"x", x}, {"w", w}, {"b", b}, {"x4", x4}, {"x2", x2}, {"m", torch::zeros({3})},
                     {"v", torch::ones({3})}, {"one", torch::randn({1, 3})}};
  check("F.batch_norm(x, None, None, w, b, training=True)", in,
        normalize(x, {0, 2}) * per_channel(w, 3) + per_channel(b, 3));
  check("F.batch_norm(x4, None, None, training=True, eps=1e-3)", in, normalize(x4, {0, 2, 3}, 1e-3));
  check("F.batch_norm(x2, None, None, bias=b, training=True, momentum=0.3)", in, normalize(x2, {0}) + b);
  check("torch.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, True)", in,
        torch::batch_norm(x, w, b, {}, {}, true, 0.1, 1e-5, false));
  EXPECT_EQ(lowered("F.batch_norm(x, None, None, training=True)", in).op, "batch_norm");

  expect_errors_at(in, {
      {"F.batch_norm(x, None, None, w, b)", "F",
       "argument 'training' of batch_norm: must be True when running_mean and running_var are None"},
      {"F.batch_norm(x, m, v, training=True)", "m,",
       "running statistics are not supported: the reference runs in training mode with batch statistics"},
      {"F.batch_norm(one, None, None, training=True)", "F",
       "expected more than 1 value per channel when training, got input size [1, 3]"},
      {"F.batch_norm(x, None, None, x2, training=True)", "x2", "must have shape [3], got [4, 3]"},
      {"F.batch_norm(x, None, None, training=True, momentum=None)", "momentum", "must be a number, got None"},
  });
}

// --- matrix products and convolution ---------------------------------------------------------

TEST_F(NnOps, MatmulFollowsTorchRankRules) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{3}, {3}},       {{2, 3}, {3}},    {{3}, {3, 4}},       {{2, 3}, {3, 4}},
      {{5, 2, 3}, {3, 4}}, {{3}, {5, 3, 4}}, {{5, 2, 3}, {3}}, {{2, 1, 2, 3}, {5, 3, 4}}};
  for (const auto& [sa, sb] : cases) {
    Tensor a = torch::randn(sa), b = torch::randn(sb);
    NamedTensors in = {{"a", a}, {"b", b}};
    Tensor expected = torch::matmul(a, b);
    check("a @ b", in, expected);
    check("torch.matmul(a, b)", in, expected);
    check("a.matmul(other=b)", in, expected);
  }
  Tensor a = torch::randn({2, 3}), b = torch::randn({3, 4});
  NamedTensors in = {{"a", a}, {"b", b}, {"c", torch::randn({4, 5})}, {"s", torch::randn({})},
                     {"d", b.to(torch::kFloat64)}, {"i", torch::ones({3, 3}, torch::kInt64)},
                     {"a3", torch::randn({2, 2, 3})}, {"b3", torch::randn({3, 3, 4})}};
  check("torch.matmul(input=a, other=b)", in, a.mm(b));
  EXPECT_EQ(lowered("a @ b", in).op, "matmul");
  expect_errors_at(in, {
      {"a @ c", "@", "shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)"},
      {"s @ b", "@", "both arguments to matmul need to be at least 1-D"},
      {"torch.matmul(a, d)", "d)", "must have the input's dtype float32, got float64"},
      {"torch.matmul(i, i)", "i,", "must be a floating-point tensor, got int64"},
      {"a3 @ b3", "@", "shapes [2] and [3] cannot be broadcast"},
  });
}

TEST_F(NnOps, MmAndBmm) {
  Tensor a = torch::randn({2, 3}), b = torch::randn({3, 4});
  Tensor a3 = torch::randn({5, 2, 3}), b3 = torch::randn({5, 3, 4});
  NamedTensors in = {{"a", a}, {"b", b}, {"a3", a3}, {"b3", b3}, {"v", torch::randn({3})},
                     {"c3", torch::randn({4, 3, 4})}};
  check("torch.mm(a, b)", in, torch::mm(a, b));
  check("a.mm(mat2=b)", in, torch::mm(a, b));
  check("torch.bmm(a3, b3)", in, torch::bmm(a3, b3));
  check("a3.bmm(b3)", in, torch::bmm(a3, b3));
  EXPECT_EQ(lowered("torch.bmm(a3, b3)", in).op, "bmm");
  expect_errors_at(in, {
      {"torch.mm(v, b)", "v", "argument 'input' of mm: must be a matrix, got shape [3]"},
      {"torch.bmm(a, b)", "a,", "must be a 3-D batch of matrices, got shape [2, 3]"},
      {"torch.bmm(a3, c3)", "torch", "bmm batch sizes differ: [5, 2, 3] and [4, 3, 4]"},
      {"a3.bmm(a3)", "a3", "shapes [5, 2, 3] and [5, 2, 3] cannot be multiplied (3 != 2)"},
  });
}

TEST_F(NnOps, Linear) {
  Tensor x = torch::randn({2, 3, 4}), w = torch::randn({5, 4}), b = torch::randn({5});
  Tensor v = torch::randn({4}), w1 = torch::randn({4}), x2 = torch::randn({6, 4});
  NamedTensors in = {{"x", x}, {"w", w}, {"b", b}, {"v", v}, {"w1", w1}, {"x2", x2}, {"wt", w.t().contiguous()}};
  check("F.linear(x, w, b)", in, torch::linear(x, w, b));
  check("F.linear(x, w)", in, torch::matmul(x, w.t()));
  check("F.linear(input=v, weight=w, bias=b)", in, w.mv(v) + b);
  check("F.linear(x, w1)", in, torch::matmul(x, w1));
  check("F.linear(x2, w, b)", in, x2.mm(w.t()) + b);
  Node n = lowered("F.linear(x, w)", in);
  EXPECT_EQ(n.op, "linear");
  EXPECT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[2], -1);

  expect_errors_at(in, {
      {"F.linear(x, wt)", "F", "linear: input [2, 3, 4] has 4 features but weight [4, 5] expects 5"},
      {"F.linear(x, w, w1)", "w1", "shape [4] does not broadcast to the output shape [2, 3, 5]"},
      {"F.linear(x, x)", "x)", "must be [out_features, in_features]"},
  });
}

TEST_F(NnOps, Conv2d) {
  Tensor x = torch::randn({2, 4, 7, 6}), w = torch::randn({6, 4, 3, 3}), b = torch::randn({6});
  Tensor wg = torch::randn({6, 2, 3, 3}), x3 = torch::randn({4, 7, 6});
  NamedTensors in = {{"x", x}, {"w", w}, {"b", b}, {"wg", wg}, {"x3", x3}, {"we", torch::randn({6, 4, 2, 2})},
                     {"t", torch::randn({1, 4, 2, 2})}, {"v", torch::randn({4})},
                     {"x4", torch::randn({6, 4, 0, 3})}};
  check("F.conv2d(x, w, b)", in, torch::conv2d(x, w, b));
  check("F.conv2d(x, w, stride=2, padding=1)", in, torch::conv2d(x, w, {}, 2, 1));
  check("F.conv2d(x, w, b, (2, 1), (1, 0), (1, 2))", in, torch::conv2d(x, w, b, {2, 1}, {1, 0}, {1, 2}));
  check("F.conv2d(x, w, padding='same', dilation=2)", in, torch::conv2d(x, w, {}, 1, 2, 2));
  check("F.conv2d(x, w, padding='valid')", in, torch::conv2d(x, w));
  check("F.conv2d(x, wg, b, groups=2)", in, torch::conv2d(x, wg, b, 1, std::vector<int64_t>{0, 0}, 1, 2));
  check("torch.conv2d(x, w, b, 1, 1)", in, torch::conv2d(x, w, b, 1, 1));
  check("F.conv2d(x3, w, b, padding=1)", in, torch::conv2d(x3.unsqueeze(0), w, b, 1, 1).squeeze(0));
  Node n = lowered("F.conv2d(x, w, stride=2)", in);
  EXPECT_EQ(n.op, "conv2d");
  EXPECT_EQ(n.inputs[2], -1);
  EXPECT_EQ(attr_ints(n, "stride"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(attr_ints(n, "padding"), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(attr_ints(n, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(attr_int(n, "groups"), 1);
  EXPECT_EQ(attr_ints(lowered("F.conv2d(x, w, padding='same')", in), "padding"), (std::vector<int64_t>{1, 1}));

  expect_errors_at(in, {
      {"F.conv2d(x, wg)", "x,", "has 4 channels (shape [2, 4, 7, 6]) but weight [6, 2, 3, 3] with groups=1 expects 2"},
      {"F.conv2d(x, w, groups=4)", "w,", "out_channels 6 of weight [6, 4, 3, 3] are not divisible by groups=4"},
      {"F.conv2d(x, w, stride=2, padding='same')", "padding", "not supported for strided convolutions"},
      {"F.conv2d(x, we, padding='same')", "padding", "needs uneven padding"},
      {"F.conv2d(x, w, padding='full')", "padding", "must be 'valid', 'same', an int or a tuple of 2 ints"},
      {"F.conv2d(x, w, stride=0)", "stride", "must be positive, got [0, 0]"},
      {"F.conv2d(x, w, stride=(1, 2, 3))", "stride", "must be an int or a tuple of 2 ints, got 3 values"},
      {"F.conv2d(t, w)", "F", "input [1, 4, 2, 2] with padding [0, 0] is smaller than the (dilated) kernel [3, 3]"},
      {"F.conv2d(x, w, w)", "w)", "argument 'bias' of conv2d: must have shape [6], got [6, 4, 3, 3]"},
      {"F.conv2d(x, x4)", "x4", "with a non-empty kernel, got shape [6, 4, 0, 3]"},
      {"F.conv2d(v, w)", "v,", "must be 4-D [N, C, H, W] (or 3-D unbatched [C, H, W]), got shape [4]"},
  });
}

// --- pooling ---------------------------------------------------------------------------------

TEST_F(NnOps, MaxPool2d) {
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
      {"F.max_pool2d(x, 2, return_indices=True)", "return_indices", "return_indices=True is not supported"},
      {"F.max_pool2d(x, 8)", "F", "max_pool2d: input [2, 3, 7, 5] is too small for kernel [8, 8]"},
      {"F.max_pool2d(m, 2)", "m,", "must be 3-D or 4-D (batched), got shape [4, 4]"},
      {"F.max_pool2d(x, 0)", "0", "must be positive"},
  });
}

TEST_F(NnOps, AvgPool2d) {
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

TEST_F(NnOps, AvgPool1d) {
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

// --- losses ----------------------------------------------------------------------------------

TEST_F(NnOps, MseLoss) {
  Tensor a = torch::randn({3, 4}), t = torch::randn({3, 4}), r = torch::randn({4});
  Tensor d = t.to(torch::kFloat64);
  NamedTensors in = {{"a", a}, {"t", t}, {"r", r}, {"q", torch::randn({3})}, {"d", d}, {"i", torch::ones({3, 4}, torch::kInt64)}};
  check("F.mse_loss(a, t)", in, torch::mse_loss(a, t));
  check("F.mse_loss(a, t, reduction='sum')", in, (a - t).pow(2).sum());
  check("F.mse_loss(input=a, target=t, reduction='none')", in, (a - t).pow(2));
  check("F.mse_loss(a, r)", in, (a - r).pow(2).mean());
  check("F.mse_loss(r, a, reduction='none')", in, (r - a).pow(2));
  check("F.mse_loss(a, d)", in, (a.to(torch::kFloat64) - d).pow(2).mean());
  check("F.mse_loss(a, i, reduction='sum')", in, (a - 1).pow(2).sum());
  EXPECT_EQ(attr_str(lowered("F.mse_loss(a, t)", in), "reduction"), "mean");

  expect_errors_at(in, {
      {"F.mse_loss(a, t, reduction='avg')", "reduction", "must be 'mean', 'sum' or 'none', got 'avg'"},
      {"F.mse_loss(a, t, size_average=True)", "size_average", "is deprecated and not supported"},
      {"F.mse_loss(a, q)", "F", "shapes [3, 4] and [3] cannot be broadcast"},
      {"F.mse_loss(i, i)", "F", "mse_loss needs a floating-point input or target, got int64 and int64"},
  });
}

TEST_F(NnOps, SmoothL1Loss) {
  Tensor a = torch::randn({3, 4}) * 2, t = torch::randn({3, 4});
  NamedTensors in = {{"a", a}, {"t", t}};
  auto expected = [&](double beta) {
    Tensor d = (a - t).abs();
    return torch::where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta);
  };
  check("F.smooth_l1_loss(a, t)", in, expected(1.0).mean());
  check("F.smooth_l1_loss(a, t)", in, torch::smooth_l1_loss(a, t));
  check("F.smooth_l1_loss(a, t, reduction='none', beta=0.5)", in, expected(0.5));
  check("F.smooth_l1_loss(a, t, beta=0.0, reduction='sum')", in, (a - t).abs().sum());
  EXPECT_DOUBLE_EQ(attr_float(lowered("F.smooth_l1_loss(a, t, beta=2)", in), "beta"), 2.0);

  expect_errors_at(in, {
      {"F.smooth_l1_loss(a, t, beta=-1.0)", "beta", "must be non-negative"},
      {"F.smooth_l1_loss(a, t, reduction='batchmean')", "reduction", "got 'batchmean'"},
  });
}

TEST_F(NnOps, KlDiv) {
  Tensor lp = torch::log_softmax(torch::randn({4, 5}), 1), p = torch::softmax(torch::randn({4, 5}), 1);
  NamedTensors in = {{"lp", lp}, {"p", p}, {"lq", p.log()}};
  Tensor pointwise = p * (p.log() - lp);
  check("F.kl_div(lp, p, reduction='batchmean')", in, pointwise.sum() / 4);
  check("F.kl_div(lp, p)", in, pointwise.mean());
  check("F.kl_div(lp, p, reduction='sum')", in, torch::kl_div(lp, p, at::Reduction::Sum));
  check("F.kl_div(lp, p, reduction='none')", in, pointwise);
  check("F.kl_div(lp, lq, reduction='batchmean', log_target=True)", in, pointwise.sum() / 4);
  EXPECT_EQ(attr_str(lowered("F.kl_div(lp, p, reduction='batchmean')", in), "reduction"), "batchmean");

  expect_errors_at(in, {
      {"F.kl_div(lp, p, reduction='max')", "reduction", "must be 'mean', 'sum', 'none' or 'batchmean', got 'max'"},
      {"F.kl_div(lp, p, log_target=1)", "log_target", "must be bool, got int"},
  });
}

TEST_F(NnOps, CrossEntropyWithClassIndices) {
  Tensor x = torch::randn({4, 5}), t = torch::tensor({1, 0, 4, 1}, torch::kInt64), w = torch::rand({5}) + 0.5;
  Tensor x3 = torch::randn({2, 5, 3}), t3 = torch::randint(0, 5, {2, 3}, torch::kInt64);
  Tensor x1 = torch::randn({5}), t0 = torch::tensor(3, torch::kInt64);
  NamedTensors in = {{"x", x}, {"t", t}, {"w", w}, {"x3", x3}, {"t3", t3}, {"x1", x1}, {"t0", t0}};
  Tensor nll = -torch::log_softmax(x, 1).gather(1, t.unsqueeze(1)).squeeze(1);
  check("F.cross_entropy(x, t)", in, nll.mean());
  check("F.cross_entropy(x, t, reduction='none')", in, nll);
  check("F.cross_entropy(x, t, reduction='sum')", in, nll.sum());
  check("F.cross_entropy(x, t, weight=w)", in, (nll * w.index_select(0, t)).sum() / w.index_select(0, t).sum());
  check("F.cross_entropy(x, t, ignore_index=1)", in, torch::cross_entropy_loss(x, t, {}, at::Reduction::Mean, 1));
  check("F.cross_entropy(x, t, ignore_index=1)", in, nll.index_select(0, torch::tensor({1, 2}, torch::kInt64)).mean());
  check("F.cross_entropy(x, t, label_smoothing=0.1)", in,
        torch::cross_entropy_loss(x, t, {}, at::Reduction::Mean, -100, 0.1));
  check("F.cross_entropy(x3, t3, reduction='none')", in, torch::cross_entropy_loss(x3, t3, {}, at::Reduction::None));
  check("F.cross_entropy(x1, t0)", in, -torch::log_softmax(x1, 0)[3]);
  Node n = lowered("F.cross_entropy(x, t)", in);
  EXPECT_EQ(n.op, "cross_entropy");
  EXPECT_EQ(n.inputs[2], -1);
  EXPECT_EQ(attr_int(n, "ignore_index"), -100);
  EXPECT_EQ(attr_str(n, "reduction"), "mean");
  EXPECT_DOUBLE_EQ(attr_float(n, "label_smoothing"), 0.0);
}

TEST_F(NnOps, CrossEntropyWithProbabilities) {
  Tensor x = torch::randn({4, 5}), p = torch::softmax(torch::randn({4, 5}), 1);
  NamedTensors in = {{"x", x}, {"p", p}, {"t", torch::tensor({1, 0, 4, 1}, torch::kInt64)},
                     {"ti", torch::zeros({4, 5}, torch::kInt64)}, {"tf", torch::zeros({4})},
                     {"t3", torch::zeros({3}, torch::kInt64)}, {"w4", torch::ones({4})}};
  check("F.cross_entropy(x, p)", in, -(p * torch::log_softmax(x, 1)).sum(1).mean());
  check("F.cross_entropy(x, p, reduction='none', label_smoothing=0.2)", in,
        torch::cross_entropy_loss(x, p, {}, at::Reduction::None, -100, 0.2));
  Tensor pd = p.to(torch::kFloat64);
  check("F.cross_entropy(x, pd)", {{"x", x}, {"pd", pd}}, -(pd * torch::log_softmax(x.to(torch::kFloat64), 1)).sum(1).mean());

  expect_errors_at(in, {
      {"F.cross_entropy(x, ti)", "ti",
       "has the input's shape, so it holds class probabilities and must be floating-point, got int64"},
      {"F.cross_entropy(x, tf)", "tf",
       "must be int64 class indices of shape [4] or class probabilities of shape [4, 5], got float32[4]"},
      {"F.cross_entropy(x, t3)", "t3", "shape [3] does not match input [4, 5]: class indices need shape [4]"},
      {"F.cross_entropy(x, p, ignore_index=0)", "ignore_index", "not supported with class-probability targets"},
      {"F.cross_entropy(x, t, label_smoothing=1.5)", "label_smoothing", "must be between 0.0 and 1.0"},
      {"F.cross_entropy(x, t, w4)", "w4", "argument 'weight' of cross_entropy: must have shape [5], got [4]"},
      {"F.cross_entropy(x, t, reduce=False)", "reduce", "is deprecated and not supported"},
  });
}

}  // namespace
}  // namespace kevo
