// Indexing (ints, slices, None, ...), select, narrow, chunk, split, unbind, cat and stack:
// interpreted references against LibTorch's own indexing.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using torch::Tensor;
using torch::indexing::Ellipsis;
using torch::indexing::None;
using torch::indexing::Slice;

struct SliceOps : ::testing::Test {
  void SetUp() override {
    torch::manual_seed(3);
    x = torch::randn({4, 6, 5});
    in = {{"x", x}, {"y", torch::randn({4, 2, 5})}, {"i", torch::randint(0, 9, {4, 6}, torch::kInt64)},
          {"h", x.to(torch::kFloat16)}};
  }
  Tensor x;
  NamedTensors in;
};

TEST_F(SliceOps, IndexingFollowsTorch) {
  expect_returns("x[0]", in, x.index({0}));
  expect_returns("x[-1]", in, x.index({-1}));
  expect_returns("x[:, 0]", in, x.index({Slice(), 0}));
  expect_returns("x[1:3]", in, x.index({Slice(1, 3)}));
  expect_returns("x[:, 1:-1, ::2]", in, x.index({Slice(), Slice(1, -1), Slice(None, None, 2)}));
  expect_returns("x[..., 1:3]", in, x.index({Ellipsis, Slice(1, 3)}));
  expect_returns("x[..., 0]", in, x.index({Ellipsis, 0}));
  expect_returns("x[None]", in, x.unsqueeze(0));
  expect_returns("x[:, None, 2]", in, x.index({Slice(), None, 2}));
  expect_returns("x[1, ..., None]", in, x.index({1, Ellipsis, None}));
  expect_returns("x[2:100, -100:3]", in, x.index({Slice(2, 100), Slice(-100, 3)}));
  expect_returns("x[:, x.shape[1] // 2:]", in, x.index({Slice(), Slice(3, None)}));
  expect_returns("x[3:1]", in, x.index({Slice(3, 1)}));  // empty, as in torch
  expect_returns("i[:, 1::3]", in, in[2].second.index({Slice(), Slice(1, None, 3)}));
  expect_returns("h[0, :2]", in, in[3].second.index({0, Slice(None, 2)}));
  expect_returns("x[1][2][3]", in, x.index({1, 2, 3}));
  // A full slice is the tensor itself; every other entry lowers to select, slice or unsqueeze.
  Graph g = lower_for(returning("x[:, 1:3, 2]", in), in);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "slice");
  EXPECT_EQ(attr_int(g.nodes[0], "dim"), 1);
  EXPECT_EQ(attr_int(g.nodes[0], "start"), 1);
  EXPECT_EQ(attr_int(g.nodes[0], "end"), 3);
  EXPECT_EQ(attr_int(g.nodes[0], "step"), 1);
  EXPECT_EQ(g.nodes[1].op, "select");
  EXPECT_EQ(attr_int(g.nodes[1], "dim"), 2);
  EXPECT_EQ(attr_int(g.nodes[1], "index"), 2);
  EXPECT_TRUE(lower_for(returning("x[:]", in), in).nodes.empty());
  EXPECT_EQ(attr_int(lowered("x[-1]", in), "index"), 3);

  expect_errors_at(in, {
      {"x[4]", "4", "index 4 is out of bounds for dimension 0 with size 4"},
      {"x[:, -7]", "-7", "index -7 is out of bounds for dimension 1 with size 6"},
      {"x[0, 0, 0, 0]", "x[", "too many indices for tensor of dimension 3 (got 4)"},
      {"x[..., ...]", "...]", "an index can only have a single ellipsis"},
      {"x[::-1]", "::", "step must be greater than zero, got -1 (torch has no negative steps: use flip)"},
      {"x[::0]", "::", "step must be greater than zero, got 0"},
      {"x[i]", "i]", "indexing with a Tensor (advanced indexing) is not supported"},
      {"x[[0, 1]]", "[0", "indexing with a tuple (advanced indexing) is not supported"},
      {"x[x[0, 0, 0]:]", "x[0", "slice bounds must be Python ints; a Tensor bound would make the shape depend on data"},
      {"x['a']", "'a'", "a tensor index must be an int, a slice, None or ..., got str"},
  });
}

TEST_F(SliceOps, TupleSlicesTakeAnyStep) {
  expect_returns("x.view(x.shape[::-1])", in, x.view({5, 6, 4}));
  expect_returns("x.view(x.shape[::2] + (6,))", in, x.view({4, 5, 6}));
  expect_returns("x.view(x.shape[-1:0:-1] + (4,))", in, x.view({5, 6, 4}));
  expect_error_at("x.view(x.shape[::0])", in, "::", "slice step cannot be zero");
}

TEST_F(SliceOps, SelectNarrowAndUnbind) {
  expect_returns("x.select(1, 2)", in, x.select(1, 2));
  expect_returns("torch.select(x, -1, -2)", in, x.select(-1, -2));
  // KernelBench level 1, 92: an exclusive cumsum.
  expect_returns("torch.cat((torch.zeros_like(x.select(1, 0).unsqueeze(1)), "
                 "torch.cumsum(x.narrow(dim=1, start=0, length=x.size(1) - 1), dim=1)), dim=1)",
                 in, torch::cat({torch::zeros_like(x.select(1, 0).unsqueeze(1)), x.narrow(1, 0, 5).cumsum(1)}, 1));
  expect_returns("x.narrow(2, 1, 3)", in, x.narrow(2, 1, 3));
  expect_returns("torch.narrow(x, 0, -2, 2)", in, x.narrow(0, 2, 2));
  std::vector<Tensor> rows = x.unbind(0);
  expect_returns("x.unbind()", in, rows);
  expect_returns("torch.unbind(x, dim=2)[4]", in, x.unbind(2)[4]);
  expect_errors_at(in, {
      {"x.select(1, 6)", "6", "select(): index 6 out of range for tensor of size [4, 6, 5] at dimension 1"},
      {"x.narrow(1, 4, 3)", "3", "start (4) + length (3) exceeds dimension size (6)"},
      {"x.narrow(1, 7, 0)", "7", "start out of range (expected to be in range of [-6, 6], but got 7)"},
      {"x.narrow(1, 0, -1)", "-1", "narrow(): length must be non-negative, got -1"},
      {"x.narrow(3, 0, 1)", "3", "dim 3 is out of range for a tensor of rank 3"},
  });
}

TEST_F(SliceOps, ChunkAndSplit) {
  expect_returns("x.chunk(2, dim=1)", in, x.chunk(2, 1));
  expect_returns("torch.chunk(x, 4, 1)", in, x.chunk(4, 1));  // 6 in chunks of 2: three pieces
  expect_returns("x.chunk(3, -1)", in, x.chunk(3, -1));
  expect_returns("x.split(2)", in, x.split(2));
  expect_returns("torch.split(x, 4, dim=1)", in, x.split(4, 1));
  expect_returns("torch.split(x, [1, 3, 2], 1)", in, x.split_with_sizes({1, 3, 2}, 1));
  expect_returns("x.split(split_size=(2, 3), dim=-1)", in, x.split_with_sizes({2, 3}, -1));
  // SiLU-and-mul on a fused gate/up tensor.
  Tensor gu = torch::randn({3, 8});
  std::vector<Tensor> halves = gu.chunk(2, -1);
  expect_returns("F.silu(x.chunk(2, -1)[0]) * x.chunk(2, -1)[1]", {{"x", gu}}, torch::silu(halves[0]) * halves[1]);
  expect_errors_at(in, {
      {"x.chunk(0)", "0", "chunk expects `chunks` to be greater than 0, got: 0"},
      {"torch.split(x, [1, 3], 1)", "[1", "split_with_sizes expects split_sizes to sum exactly to 6"},
      {"x.split(0)", "0", "split_size can only be 0 if dimension size is 0"},
      {"x.split(-1)", "-1", "split expects split_size be non-negative"},
  });
}

TEST_F(SliceOps, CatAndStackPromoteAndCheckShapes) {
  Tensor y = in[1].second, h = in[3].second;
  expect_returns("torch.cat([x, y], dim=1)", in, torch::cat({x, y}, 1));
  expect_returns("torch.cat((x, x, x))", in, torch::cat({x, x, x}));
  expect_returns("torch.concat((x, y), -2)", in, torch::cat({x, y}, -2));
  expect_returns("torch.concatenate((x, y), axis=1)", in, torch::cat({x, y}, 1));
  expect_returns("torch.cat((h, x))", in, torch::cat({h.to(torch::kFloat32), x}));  // promoted, as torch does
  expect_returns("torch.stack([x, x])", in, torch::stack({x, x}));
  expect_returns("torch.stack((x, x * 2), dim=-1)", in, torch::stack({x, x * 2}, -1));
  expect_returns("torch.stack((x[0], x[1]), 1)", in, torch::stack({x[0], x[1]}, 1));
  Node n = lowered("torch.cat([x, y], dim=-2)", in);
  EXPECT_EQ(n.op, "cat");
  EXPECT_EQ(attr_int(n, "dim"), 1);
  EXPECT_EQ(n.inputs.size(), 2u);
  expect_half_precision_matches("torch.cat((x, y), 1)", {{"x", x}, {"y", y}}, 0.0, 0.0);

  expect_errors_at(in, {
      {"torch.cat([x, y])", "[x", "Sizes of tensors must match except in dimension 0. Expected size 6 but got size 2 "
                                  "for tensor number 1 in the list."},
      {"torch.cat([x, x[0]])", "[x", "Tensors must have same number of dimensions: got 3 and 2"},
      {"torch.cat([])", "[]", "cat(): expected a non-empty list of Tensors"},
      {"torch.cat([x, 1.0])", "[x", "must be a tuple or list of Tensors, got one of type float"},
      {"torch.cat(x)", "x)", "must be a tuple or list of Tensors, got Tensor"},
      {"torch.cat((x, y), 3)", "3", "dim 3 is out of range for a tensor of rank 3"},
      {"torch.stack((x, y))", "(x", "stack expects each tensor to be equal size, but got [4, 6, 5] at entry 0 and "
                                    "[4, 2, 5] at entry 1"},
      {"torch.stack((x, x), 4)", "4", "dim 4 is out of range for stacking tensors of rank 3 (expected -4..3)"},
  });
}

}  // namespace
}  // namespace kevo
