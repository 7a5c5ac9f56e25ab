// Convolutions and transposed convolutions in 1-D, 2-D and 3-D: interpreted references against
// LibTorch, with every keyword (stride, padding, output_padding, dilation, groups) and in half precision.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using torch::Tensor;

// Convolutions sum many terms in float32: compare at atol 1e-5.
void check(const std::string& expr, const NamedTensors& in, const Tensor& expected) {
  expect_returns(expr, in, expected, 1e-5, 1e-5);
}

struct ConvOps : ::testing::Test {
  void SetUp() override { torch::manual_seed(17); }
};

TEST_F(ConvOps, Conv2d) {
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

TEST_F(ConvOps, Conv1dAnd3d) {
  Tensor x1 = torch::randn({2, 4, 9}), w1 = torch::randn({6, 4, 3}), wg1 = torch::randn({6, 2, 3}), b = torch::randn({6});
  Tensor x3 = torch::randn({2, 4, 5, 6, 7}), w3 = torch::randn({6, 4, 3, 3, 3}), wg3 = torch::randn({6, 2, 3, 1, 2});
  NamedTensors in = {{"x1", x1}, {"w1", w1}, {"wg1", wg1}, {"b", b}, {"x3", x3}, {"w3", w3}, {"wg3", wg3}};
  check("F.conv1d(x1, w1, b)", in, torch::conv1d(x1, w1, b));
  check("F.conv1d(x1, w1, stride=2, padding=1, dilation=2)", in, torch::conv1d(x1, w1, {}, 2, 1, 2));
  check("F.conv1d(x1, wg1, b, groups=2, padding='same')", in, torch::conv1d(x1, wg1, b, 1, 1, 1, 2));
  check("torch.conv1d(x1, w1, b, 3, 2)", in, torch::conv1d(x1, w1, b, 3, 2));
  check("F.conv1d(x1[0], w1, b)", in, torch::conv1d(x1[0].unsqueeze(0), w1, b).squeeze(0));
  check("F.conv3d(x3, w3, b)", in, torch::conv3d(x3, w3, b));
  check("F.conv3d(x3, w3, stride=(1, 2, 1), padding=(1, 0, 2), dilation=(2, 1, 1))", in,
        torch::conv3d(x3, w3, {}, {1, 2, 1}, {1, 0, 2}, {2, 1, 1}));
  check("F.conv3d(input=x3, weight=wg3, bias=b, groups=2, padding=(1, 0, 0))", in,
        torch::conv3d(x3, wg3, b, 1, {1, 0, 0}, 1, 2));
  check("torch.conv3d(x3, w3, None, 1, 'same')", in, torch::conv3d(x3, w3, {}, 1, 1));
  check("F.conv3d(x3[1], w3, b, padding='same')", in, torch::conv3d(x3[1].unsqueeze(0), w3, b, 1, 1).squeeze(0));
  Node n = lowered("F.conv3d(x3, w3, stride=2)", in);
  EXPECT_EQ(n.op, "conv3d");
  EXPECT_EQ(attr_ints(n, "stride"), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(attr_ints(n, "padding"), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(lowered("F.conv1d(x1, w1)", in).op, "conv1d");

  expect_errors_at(in, {
      {"F.conv3d(x3, w1)", "w1", "must be 5-D [out_channels, in_channels/groups, kD, kH, kW] with a non-empty kernel"},
      {"F.conv3d(x1, w3)", "x1", "must be 5-D [N, C, D, H, W] (or 4-D unbatched [C, D, H, W]), got shape [2, 4, 9]"},
      {"F.conv1d(x3, w1)", "x3", "must be 3-D [N, C, W] (or 2-D unbatched [C, W]), got shape [2, 4, 5, 6, 7]"},
      {"F.conv3d(x3, w3, stride=(1, 2))", "stride", "must be an int or a tuple of 3 ints, got 2 values"},
      {"F.conv1d(x1, wg1)", "x1", "has 4 channels (shape [2, 4, 9]) but weight [6, 2, 3] with groups=1 expects 2"},
      {"F.conv3d(x3, w3, padding='same', stride=2)", "padding", "not supported for strided convolutions"},
      {"F.conv1d(x1, w1, dilation=5)", "F", "conv1d: input [2, 4, 9] with padding [0] is smaller than the (dilated) kernel [3]"},
  });
}

TEST_F(ConvOps, TransposedConvolutions) {
  Tensor x1 = torch::randn({2, 4, 7}), w1 = torch::randn({4, 3, 3}), b3 = torch::randn({3}), b6 = torch::randn({6});
  Tensor x2 = torch::randn({2, 4, 5, 6}), w2 = torch::randn({4, 3, 3, 2});
  Tensor x3 = torch::randn({1, 4, 3, 4, 5}), w3 = torch::randn({4, 2, 3, 3, 3}), wd = torch::randn({4, 1, 2, 2, 2});
  NamedTensors in = {{"x1", x1}, {"w1", w1}, {"b3", b3}, {"b6", b6}, {"x2", x2}, {"w2", w2}, {"x3", x3}, {"w3", w3},
                     {"wd", wd}, {"s", torch::randn({1, 4, 2, 2})}, {"w8", torch::randn({8, 3, 3, 3})}};
  check("F.conv_transpose1d(x1, w1, b3)", in, torch::conv_transpose1d(x1, w1, b3));
  check("F.conv_transpose1d(x1, w1, stride=2, padding=1, output_padding=1)", in,
        torch::conv_transpose1d(x1, w1, {}, 2, 1, 1));
  check("F.conv_transpose1d(x1, w1, b6, groups=2, dilation=2)", in, torch::conv_transpose1d(x1, w1, b6, 1, 0, 0, 2, 2));
  check("F.conv_transpose1d(x1[1], w1, b3, 3)", in, torch::conv_transpose1d(x1[1].unsqueeze(0), w1, b3, 3).squeeze(0));
  check("F.conv_transpose2d(x2, w2, b3)", in, torch::conv_transpose2d(x2, w2, b3));
  check("F.conv_transpose2d(x2, w2, stride=(2, 3), padding=(1, 0), output_padding=(1, 2), dilation=(1, 2))", in,
        torch::conv_transpose2d(x2, w2, {}, {2, 3}, {1, 0}, {1, 2}, 1, {1, 2}));
  check("torch.conv_transpose2d(x2, w2, b6, 2, 1, 1, 2, 1)", in, torch::conv_transpose2d(x2, w2, b6, 2, 1, 1, 2, 1));
  check("F.conv_transpose2d(input=x2, weight=w2, groups=2, bias=b6, stride=2)", in,
        torch::conv_transpose2d(x2, w2, b6, 2, 0, 0, 2));
  check("F.conv_transpose3d(x3, w3)", in, torch::conv_transpose3d(x3, w3));
  check("F.conv_transpose3d(x3, w3, stride=2, padding=1, output_padding=1)", in,
        torch::conv_transpose3d(x3, w3, {}, 2, 1, 1));
  check("F.conv_transpose3d(x3, wd, groups=4, stride=(2, 1, 2), dilation=(1, 2, 1))", in,
        torch::conv_transpose3d(x3, wd, {}, {2, 1, 2}, 0, 0, 4, {1, 2, 1}));
  // (H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
  Tensor y = run_reference(returning("F.conv_transpose2d(x2, w2, stride=(2, 3), padding=(1, 0), output_padding=(1, 2), "
                                     "dilation=(1, 2))", in), in)[0];
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 3, 4 * 2 - 2 + 2 + 1 + 1, 5 * 3 + 2 + 2 + 1}));
  Node n = lowered("F.conv_transpose3d(x3, w3, stride=2, output_padding=1)", in);
  EXPECT_EQ(n.op, "conv_transpose3d");
  EXPECT_EQ(attr_ints(n, "output_padding"), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(attr_ints(n, "dilation"), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(attr_int(n, "groups"), 1);

  expect_errors_at(in, {
      {"F.conv_transpose2d(x2, w2, output_padding=1)", "output_padding",
       "output padding must be smaller than either stride or dilation, got output_padding [1, 1], stride [1, 1]"},
      {"F.conv_transpose2d(x2, w8)", "x2", "has 4 channels (shape [2, 4, 5, 6]) but the transposed weight [8, 3, 3, 3] expects 8"},
      {"F.conv_transpose2d(x2, w2, groups=3)", "w2", "in_channels 4 of weight [4, 3, 3, 2] are not divisible by groups=3"},
      {"F.conv_transpose2d(x2, w2, padding='same')", "padding", "must be an int or a tuple of ints for a transposed convolution"},
      {"F.conv_transpose2d(s, w2[:, :, :, :1], padding=3)", "F",
       "conv_transpose2d: input [1, 4, 2, 2] with padding [3, 3] gives an output size of -2 in spatial dim 0: too small"},
      {"F.conv_transpose1d(x1, w1, b6)", "b6", "argument 'bias' of conv_transpose1d: must have shape [3], got [6]"},
      {"F.conv_transpose3d(x3, w3, stride=(2, 2))", "stride", "must be an int or a tuple of 3 ints, got 2 values"},
      {"F.conv_transpose1d(x1, w1, stride=0)", "stride", "must be positive, got [0]"},
  });
}

TEST_F(ConvOps, HalfPrecision) {
  NamedTensors in = {{"x1", torch::randn({2, 4, 9})},     {"w1", torch::randn({6, 4, 3})},
                     {"t1", torch::randn({4, 3, 3})},     {"x2", torch::randn({2, 4, 6, 5})},
                     {"w2", torch::randn({6, 2, 3, 3})},  {"t2", torch::randn({4, 3, 3, 2})},
                     {"x3", torch::randn({1, 4, 4, 5, 3})}, {"w3", torch::randn({6, 4, 3, 2, 2})},
                     {"t3", torch::randn({4, 2, 2, 2, 3})}, {"b", torch::randn({6})}};
  for (const char* expr : {"F.conv1d(x1, w1, b, stride=2, padding=1)", "F.conv2d(x2, w2, b, groups=2, dilation=(1, 2))",
                           "F.conv3d(x3, w3, b, padding=1)", "F.conv_transpose1d(x1, t1, stride=2, output_padding=1)",
                           "F.conv_transpose2d(x2, t2, b, stride=2, groups=2)",
                           "F.conv_transpose3d(x3, t3, padding=(0, 1, 1), dilation=2)"})
    expect_half_precision_matches(expr, in, 1e-2, 5e-2);
}

}  // namespace
}  // namespace kevo
