// Normalizations and dropout: interpreted references against LibTorch, on every rank KernelBench uses.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using torch::Tensor;

// Norms sum many terms in float32: compare at atol 1e-5.
void check(const std::string& expr, const NamedTensors& in, const Tensor& expected) {
  expect_returns(expr, in, expected, 1e-5, 1e-5);
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

// The functional forms the importer writes for nn.BatchNorm1d/3d, nn.GroupNorm after a Linear,
// nn.InstanceNorm3d and nn.LayerNorm over a 5-D tensor's last dim.
TEST_F(NnOps, NormsOnEveryRankKernelBenchUses) {
  Tensor x5 = torch::randn({2, 3, 4, 5, 6}), x2 = torch::randn({8, 6}), w3 = torch::randn({3}), b3 = torch::randn({3});
  Tensor w6 = torch::randn({6}), b6 = torch::randn({6});
  NamedTensors in = {{"x5", x5}, {"x2", x2}, {"w3", w3}, {"b3", b3}, {"w6", w6}, {"b6", b6}};
  check("F.batch_norm(x5, None, None, w3, b3, training=True, momentum=0.1, eps=1e-5)", in,
        normalize(x5, {0, 2, 3, 4}) * per_channel(w3, 5) + per_channel(b3, 5));
  check("F.batch_norm(x2, None, None, w6, b6, True, 0.1, 1e-3)", in, normalize(x2, {0}, 1e-3) * w6 + b6);
  check("F.group_norm(x2, 3, w6, b6)", in, normalize(x2.view({8, 3, 2}), {2}).view_as(x2) * w6 + b6);
  check("F.group_norm(x5, 3, w3, b3, eps=1e-6)", in, torch::group_norm(x5, 3, w3, b3, 1e-6));
  check("F.instance_norm(x5, None, None, None, None, True, 0.1, 1e-5)", in, normalize(x5, {2, 3, 4}));
  check("F.layer_norm(x5, (6,), w6, b6, 1e-5)", in, normalize(x5, {4}) * w6 + b6);
}

TEST_F(NnOps, NormsInHalfPrecision) {
  NamedTensors in = {{"x", torch::randn({4, 6, 5}) * 3 + 1}, {"w", torch::rand({6}) + 0.5}, {"b", torch::randn({6})},
                     {"wl", torch::rand({5}) + 0.5}};
  for (const char* expr : {"F.layer_norm(x, (5,), wl)", "F.group_norm(x, 3, w, b)",
                           "F.batch_norm(x, None, None, w, b, training=True)", "F.instance_norm(x, weight=w, bias=b)"})
    expect_half_precision_matches(expr, in, 1e-2, 5e-2);
}

// --- dropout ---------------------------------------------------------------------------------

TEST_F(NnOps, DropoutIsTheInputOutOfTrainingAndRefusedWhereItIsRandom) {
  Tensor x = torch::randn({4, 5});
  x[0][0] = NAN;
  NamedTensors in = {{"x", x}};
  for (const char* expr : {"F.dropout(x, 0.3, training=False)", "F.dropout(x, p=0.0)", "F.dropout2d(x, 0.5, False)",
                           "F.alpha_dropout(x, 0.2)", "torch.dropout(x, 0.5, False)", "F.dropout(x, training=False, inplace=False)"}) {
    SCOPED_TRACE(expr);
    Graph g = lower_for(returning(expr, in), in);
    EXPECT_TRUE(g.nodes.empty()) << g.to_string();
    EXPECT_EQ(g.outputs, g.inputs);
  }
  // p=1 zeroes the input as ATen does, x * 0: NaN stays NaN.
  check("F.dropout(x, p=1.0)", in, x * 0.0);

  expect_errors_at(in, {
      {"F.dropout(x, 0.2)", "F",
       "dropout with p=0.2 in training mode makes the reference's output random, so it cannot be checked: pass "
       "training=False (the module in eval mode) or p=0"},
      {"F.dropout(x)", "F", "dropout with p=0.5 in training mode"},
      {"torch.dropout(x, 0.1, True)", "torch", "pass train=False"},
      {"F.dropout3d(x, p=0.25, training=True)", "F", "dropout3d with p=0.25"},
      {"F.alpha_dropout(x, 0.5, True)", "F", "alpha_dropout with p=0.5 in training mode"},
      {"F.dropout(x, 1.5, False)", "1.5", "dropout probability has to be between 0 and 1, but got 1.5"},
      {"F.dropout(x, 0.0, inplace=True)", "inplace", "inplace=True is not supported"},
  });
}

}  // namespace
}  // namespace kevo
