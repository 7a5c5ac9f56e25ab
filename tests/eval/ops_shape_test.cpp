// Shape ops (views, transposes, squeeze/expand, flip): interpreted references against LibTorch.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h

struct ShapeOps : ::testing::Test {
  void SetUp() override {
    torch::manual_seed(5);
    x = torch::randn({2, 3, 4});
    in = {{"x", x}};
  }
  torch::Tensor x;
  NamedTensors in;
};

TEST_F(ShapeOps, ViewAndReshapeInferOneDim) {
  expect_returns("x.view(6, 4)", in, x.view({6, 4}));
  expect_returns("x.view((4, -1))", in, x.view({4, 6}));
  expect_returns("x.view(-1)", in, x.view({24}));
  expect_returns("x.view(size=[3, 8])", in, x.view({3, 8}));
  expect_returns("x.view(x.shape[0], -1)", in, x.view({2, 12}));
  expect_returns("x.reshape(2, -1, 2)", in, x.reshape({2, 6, 2}));
  expect_returns("x.reshape(shape=(24,))", in, x.reshape({24}));
  expect_returns("torch.reshape(x, (4, 6))", in, x.reshape({4, 6}));
  expect_returns("torch.reshape(input=x, shape=[-1, 2])", in, x.reshape({12, 2}));
  torch::Tensor y = torch::randn({6, 4});
  expect_returns("x.view_as(y)", {{"x", x}, {"y", y}}, x.view({6, 4}));
  expect_returns("x.reshape_as(y)", {{"x", x}, {"y", y}}, x.view({6, 4}));
  torch::Tensor empty = torch::randn({0, 3});
  expect_returns("z.view(-1, 3)", {{"z", empty}}, empty.view({0, 3}));

  Node n = lowered("x.view(4, -1)", in);
  EXPECT_EQ(n.op, "reshape");
  EXPECT_EQ(attr_ints(n, "shape"), (std::vector<int64_t>{4, 6}));
}

TEST_F(ShapeOps, ViewKeepsIntegerAndBoolDtypes) {
  torch::Tensor i = torch::randint(0, 9, {2, 3}, torch::kInt64), b = i > 4;
  expect_returns("i.view(3, 2)", {{"i", i}}, i.view({3, 2}));
  expect_returns("b.reshape(-1)", {{"b", b}}, b.reshape({6}));
}

TEST_F(ShapeOps, ReshapeErrors) {
  expect_error_at("x.view(5, -1)", in, "5", "shape [5, -1] is invalid for input of size 24");
  expect_error_at("x.view(4, 7)", in, "4", "shape [4, 7] is invalid for input of size 24");
  expect_error_at("x.view(-1, -1)", in, "-1", "only one dimension can be inferred");
  expect_error_at("x.reshape(2, -3, 4)", in, "2", "invalid shape dimension -3");
  expect_error_at("torch.reshape(x, 24)", in, "24", "must be a tuple of ints, got int");
  expect_error_at("x.view(shape=(24,))", in, "shape", "unexpected keyword argument 'shape'");
  expect_error_at("z.view(0, -1)", {{"z", torch::randn({0, 3})}}, "0", "the size of the -1 dimension is ambiguous");
}

TEST_F(ShapeOps, FlattenAndUnflatten) {
  expect_returns("torch.flatten(x)", in, x.reshape({24}));
  expect_returns("x.flatten(1)", in, x.reshape({2, 12}));
  expect_returns("torch.flatten(x, start_dim=0, end_dim=-2)", in, x.reshape({6, 4}));
  expect_returns("x.flatten(-2, -1)", in, x.reshape({2, 12}));
  expect_returns("x.flatten(1, 1)", in, x);
  torch::Tensor s = torch::randn({});
  expect_returns("s.flatten()", {{"s", s}}, s.reshape({1}));
  expect_returns("x.unflatten(-1, (2, -1))", in, x.reshape({2, 3, 2, 2}));
  expect_returns("torch.unflatten(x, 1, [3, 1])", in, x.reshape({2, 3, 1, 4}));
  EXPECT_EQ(lowered("x.flatten(1)", in).op, "reshape");
  expect_error_at("x.flatten(2, 1)", in, "2", "start_dim 2 cannot come after end_dim 1");
  expect_error_at("x.flatten(0, 3)", in, "3", "dim 3 is out of range for a tensor of rank 3");
  expect_error_at("x.unflatten(1, (2, 2))", in, "(2, 2)", "shape [2, 2] is invalid for input of size 3");
}

TEST_F(ShapeOps, TransposeAndItsSpellings) {
  expect_returns("torch.transpose(x, 0, 2)", in, x.transpose(0, 2));
  expect_returns("x.transpose(-1, -2)", in, x.transpose(1, 2));
  expect_returns("x.transpose(dim0=1, dim1=0)", in, x.transpose(0, 1));
  expect_returns("torch.swapaxes(x, 0, 1)", in, x.transpose(0, 1));
  expect_returns("x.swapdims(0, -1)", in, x.transpose(0, 2));
  Node n = lowered("x.transpose(-1, 0)", in);
  EXPECT_EQ(n.op, "transpose");
  EXPECT_EQ(attr_int(n, "dim0"), 2);
  EXPECT_EQ(attr_int(n, "dim1"), 0);
  expect_error_at("x.transpose(0, 3)", in, "3", "dim 3 is out of range for a tensor of rank 3");
  expect_error_at("torch.transpose(x, -4, 0)", in, "-4", "dim -4 is out of range for a tensor of rank 3");
}

TEST_F(ShapeOps, TAndMTAndT) {
  torch::Tensor m = torch::randn({3, 5}), v = torch::randn({4});
  expect_returns("m.T", {{"m", m}}, m.t());
  expect_returns("m.t()", {{"m", m}}, m.t());
  expect_returns("torch.t(v)", {{"v", v}}, v);
  expect_returns("v.T", {{"v", v}}, v);
  expect_returns("x.T", in, x.permute({2, 1, 0}));
  expect_returns("x.mT", in, x.transpose(1, 2));
  expect_returns("m.mT", {{"m", m}}, m.t());
  expect_error_at("x.t()", in, "x", "t() expects a tensor of rank <= 2, got shape [2, 3, 4]");
  expect_error_at("v.mT + 1.0", {{"v", v}}, "mT", "mT needs a matrix or a batch of matrices, got shape [4]");
}

TEST_F(ShapeOps, Permute) {
  expect_returns("torch.permute(x, (2, 0, 1))", in, x.permute({2, 0, 1}));
  expect_returns("x.permute(2, 0, 1)", in, x.permute({2, 0, 1}));
  expect_returns("x.permute((-1, 0, 1))", in, x.permute({2, 0, 1}));
  expect_returns("x.permute(dims=[1, 2, 0])", in, x.permute({1, 2, 0}));
  EXPECT_EQ(attr_ints(lowered("x.permute(-1, 0, -2)", in), "dims"), (std::vector<int64_t>{2, 0, 1}));
  expect_error_at("x.permute(0, 1)", in, "0", "permute needs 3 dims for a tensor of shape [2, 3, 4], got 2");
  expect_error_at("x.permute(0, 0, 1)", in, "0", "dim 0 appears more than once");
  expect_error_at("torch.permute(x, (0, 1, 3))", in, "(0", "dim 3 is out of range");
}

TEST_F(ShapeOps, UnsqueezeAndSqueeze) {
  expect_returns("torch.unsqueeze(x, 0)", in, x.unsqueeze(0));
  expect_returns("x.unsqueeze(-1)", in, x.unsqueeze(3));
  expect_returns("x.unsqueeze(dim=3)", in, x.unsqueeze(3));
  expect_returns("x.unsqueeze(-4)", in, x.unsqueeze(0));
  EXPECT_EQ(attr_int(lowered("x.unsqueeze(-1)", in), "dim"), 3);
  expect_error_at("x.unsqueeze(4)", in, "4",
                  "dim 4 is out of range for unsqueeze of a tensor of rank 3 (expected -4..3)");
  expect_error_at("x.unsqueeze(-5)", in, "-5", "out of range for unsqueeze");

  torch::Tensor y = torch::randn({2, 1, 3, 1});
  NamedTensors iy = {{"y", y}};
  expect_returns("torch.squeeze(y)", iy, y.reshape({2, 3}));
  expect_returns("y.squeeze()", iy, y.reshape({2, 3}));
  expect_returns("y.squeeze(1)", iy, y.reshape({2, 3, 1}));
  expect_returns("y.squeeze(-1)", iy, y.reshape({2, 1, 3}));
  expect_returns("y.squeeze(0)", iy, y);
  expect_returns("torch.squeeze(y, dim=(1, 3))", iy, y.reshape({2, 3}));
  expect_returns("y.squeeze((-1, 0))", iy, y.reshape({2, 1, 3}));
  EXPECT_EQ(attr_ints(lowered("y.squeeze()", iy), "dims"), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(attr_ints(lowered("y.squeeze(dim=(-1, 1, 0))", iy), "dims"), (std::vector<int64_t>{1, 3}));
  expect_error_at("y.squeeze(4)", iy, "4", "dim 4 is out of range for a tensor of rank 4");
  expect_error_at("y.squeeze(dim=1.0)", iy, "dim", "must be an int or a tuple of ints, got float");
}

TEST_F(ShapeOps, ExpandAndBroadcastTo) {
  torch::Tensor b = torch::randn({3, 1});
  NamedTensors ib = {{"b", b}};
  expect_returns("b.expand(2, 3, 4)", ib, b.expand({2, 3, 4}));
  expect_returns("b.expand(-1, 5)", ib, b.expand({3, 5}));
  expect_returns("b.expand((3, 1))", ib, b);
  expect_returns("b.expand(size=[3, 2])", ib, b.expand({3, 2}));
  expect_returns("torch.broadcast_to(b, (2, 3, 2))", ib, b.expand({2, 3, 2}));
  expect_returns("b.broadcast_to((-1, 4))", ib, b.expand({3, 4}));
  torch::Tensor z = torch::randn({4, 3, 6});
  expect_returns("b.expand_as(z)", {{"b", b}, {"z", z}}, b.expand({4, 3, 6}));
  EXPECT_EQ(attr_ints(lowered("b.expand(2, -1, -1)", ib), "shape"), (std::vector<int64_t>{2, 3, 1}));
  expect_error_at("b.expand(4, 4)", ib, "4",
                  "the expanded size 4 must match the existing size 3 at non-singleton dimension 0");
  expect_error_at("b.expand(-1, 3, 2)", ib, "-1", "the expanded size -1 is not allowed in a new leading dimension 0");
  expect_error_at("b.expand(3)", ib, "3", "the number of sizes provided (1) must be greater or equal");
  expect_error_at("b.expand_as(w)", {{"b", b}, {"w", torch::randn({4, 4})}}, "w)", "must match the existing size 3");
}

TEST_F(ShapeOps, Contiguous) {
  std::vector<torch::Tensor> got = run_reference(returning("x.transpose(0, 1).contiguous()", in), in);
  expect_same(got[0], x.transpose(0, 1).contiguous());
  EXPECT_TRUE(got[0].is_contiguous());
  EXPECT_EQ(lowered("x.contiguous()", in).op, "contiguous");
  expect_error_at("x.contiguous(1)", in, "1", "takes at most 1 positional argument");
}

TEST_F(ShapeOps, Flip) {
  expect_returns("torch.flip(x, (0, 2))", in, x.flip({0, 2}));
  expect_returns("x.flip(-1)", in, x.flip({2}));
  expect_returns("x.flip(0, 1)", in, x.flip({0, 1}));
  expect_returns("x.flip(dims=[2])", in, x.flip({2}));
  expect_returns("torch.flip(x, dims=[])", in, x);
  EXPECT_EQ(attr_ints(lowered("x.flip(-1, 0)", in), "dims"), (std::vector<int64_t>{0, 2}));
  expect_error_at("x.flip(0, -3)", in, "0", "dim -3 appears more than once");
  expect_error_at("torch.flip(x, 2)", in, "2", "must be a tuple of ints, got int");
  expect_error_at("torch.flip(x, (3,))", in, "(3", "dim 3 is out of range for a tensor of rank 3");
}

}  // namespace
}  // namespace kevo
