// Shape ops (views, transposes, squeeze/expand, flip): interpreted references against LibTorch.
#include "op_test_util.h"

namespace kevo {
namespace {

using kevo::testing::expect_reference_error;
using kevo::testing::expect_same;
using kevo::testing::lower_for;
using kevo::testing::NamedTensors;
using kevo::testing::run_reference;

std::string returning(const std::string& expr, const NamedTensors& in) {
  std::string params;
  for (const auto& [name, t] : in) params += (params.empty() ? "" : ", ") + name;
  return "def run(" + params + "):\n    return " + expr + "\n";
}

void check(const std::string& expr, const NamedTensors& in, const torch::Tensor& expected) {
  SCOPED_TRACE(expr);
  std::vector<torch::Tensor> got = run_reference(returning(expr, in), in);
  ASSERT_EQ(got.size(), 1u);
  expect_same(got[0], expected);
}

// The error must point at line 2, at the first occurrence of `marker` in `expr`.
void check_error(const std::string& expr, const NamedTensors& in, const std::string& marker, const std::string& needle) {
  size_t at = expr.find(marker);
  ASSERT_NE(at, std::string::npos) << marker;
  expect_reference_error(returning(expr, in), in, 2, static_cast<int>(at) + 12, needle);
}

// The canonical node `expr` lowers to (its last node).
Node lowered(const std::string& expr, const NamedTensors& in) { return lower_for(returning(expr, in), in).nodes.back(); }

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
  check("x.view(6, 4)", in, x.view({6, 4}));
  check("x.view((4, -1))", in, x.view({4, 6}));
  check("x.view(-1)", in, x.view({24}));
  check("x.view(size=[3, 8])", in, x.view({3, 8}));
  check("x.view(x.shape[0], -1)", in, x.view({2, 12}));
  check("x.reshape(2, -1, 2)", in, x.reshape({2, 6, 2}));
  check("x.reshape(shape=(24,))", in, x.reshape({24}));
  check("torch.reshape(x, (4, 6))", in, x.reshape({4, 6}));
  check("torch.reshape(input=x, shape=[-1, 2])", in, x.reshape({12, 2}));
  torch::Tensor y = torch::randn({6, 4});
  check("x.view_as(y)", {{"x", x}, {"y", y}}, x.view({6, 4}));
  check("x.reshape_as(y)", {{"x", x}, {"y", y}}, x.view({6, 4}));
  torch::Tensor empty = torch::randn({0, 3});
  check("z.view(-1, 3)", {{"z", empty}}, empty.view({0, 3}));

  Node n = lowered("x.view(4, -1)", in);
  EXPECT_EQ(n.op, "reshape");
  EXPECT_EQ(attr_ints(n, "shape"), (std::vector<int64_t>{4, 6}));
}

TEST_F(ShapeOps, ViewKeepsIntegerAndBoolDtypes) {
  torch::Tensor i = torch::randint(0, 9, {2, 3}, torch::kInt64), b = i > 4;
  check("i.view(3, 2)", {{"i", i}}, i.view({3, 2}));
  check("b.reshape(-1)", {{"b", b}}, b.reshape({6}));
}

TEST_F(ShapeOps, ReshapeErrors) {
  check_error("x.view(5, -1)", in, "5", "shape [5, -1] is invalid for input of size 24");
  check_error("x.view(4, 7)", in, "4", "shape [4, 7] is invalid for input of size 24");
  check_error("x.view(-1, -1)", in, "-1", "only one dimension can be inferred");
  check_error("x.reshape(2, -3, 4)", in, "2", "invalid shape dimension -3");
  check_error("torch.reshape(x, 24)", in, "24", "must be a tuple of ints, got int");
  check_error("x.view(shape=(24,))", in, "shape", "unexpected keyword argument 'shape'");
  check_error("z.view(0, -1)", {{"z", torch::randn({0, 3})}}, "0", "the size of the -1 dimension is ambiguous");
}

TEST_F(ShapeOps, FlattenAndUnflatten) {
  check("torch.flatten(x)", in, x.reshape({24}));
  check("x.flatten(1)", in, x.reshape({2, 12}));
  check("torch.flatten(x, start_dim=0, end_dim=-2)", in, x.reshape({6, 4}));
  check("x.flatten(-2, -1)", in, x.reshape({2, 12}));
  check("x.flatten(1, 1)", in, x);
  torch::Tensor s = torch::randn({});
  check("s.flatten()", {{"s", s}}, s.reshape({1}));
  check("x.unflatten(-1, (2, -1))", in, x.reshape({2, 3, 2, 2}));
  check("torch.unflatten(x, 1, [3, 1])", in, x.reshape({2, 3, 1, 4}));
  EXPECT_EQ(lowered("x.flatten(1)", in).op, "reshape");
  check_error("x.flatten(2, 1)", in, "2", "start_dim 2 cannot come after end_dim 1");
  check_error("x.flatten(0, 3)", in, "3", "dim 3 is out of range for a tensor of rank 3");
  check_error("x.unflatten(1, (2, 2))", in, "(2, 2)", "shape [2, 2] is invalid for input of size 3");
}

TEST_F(ShapeOps, TransposeAndItsSpellings) {
  check("torch.transpose(x, 0, 2)", in, x.transpose(0, 2));
  check("x.transpose(-1, -2)", in, x.transpose(1, 2));
  check("x.transpose(dim0=1, dim1=0)", in, x.transpose(0, 1));
  check("torch.swapaxes(x, 0, 1)", in, x.transpose(0, 1));
  check("x.swapdims(0, -1)", in, x.transpose(0, 2));
  Node n = lowered("x.transpose(-1, 0)", in);
  EXPECT_EQ(n.op, "transpose");
  EXPECT_EQ(attr_int(n, "dim0"), 2);
  EXPECT_EQ(attr_int(n, "dim1"), 0);
  check_error("x.transpose(0, 3)", in, "3", "dim 3 is out of range for a tensor of rank 3");
  check_error("torch.transpose(x, -4, 0)", in, "-4", "dim -4 is out of range for a tensor of rank 3");
}

TEST_F(ShapeOps, TAndMTAndT) {
  torch::Tensor m = torch::randn({3, 5}), v = torch::randn({4});
  check("m.T", {{"m", m}}, m.t());
  check("m.t()", {{"m", m}}, m.t());
  check("torch.t(v)", {{"v", v}}, v);
  check("v.T", {{"v", v}}, v);
  check("x.T", in, x.permute({2, 1, 0}));
  check("x.mT", in, x.transpose(1, 2));
  check("m.mT", {{"m", m}}, m.t());
  check_error("x.t()", in, "x", "t() expects a tensor of rank <= 2, got shape [2, 3, 4]");
  check_error("v.mT + 1.0", {{"v", v}}, "mT", "mT needs a matrix or a batch of matrices, got shape [4]");
}

TEST_F(ShapeOps, Permute) {
  check("torch.permute(x, (2, 0, 1))", in, x.permute({2, 0, 1}));
  check("x.permute(2, 0, 1)", in, x.permute({2, 0, 1}));
  check("x.permute((-1, 0, 1))", in, x.permute({2, 0, 1}));
  check("x.permute(dims=[1, 2, 0])", in, x.permute({1, 2, 0}));
  EXPECT_EQ(attr_ints(lowered("x.permute(-1, 0, -2)", in), "dims"), (std::vector<int64_t>{2, 0, 1}));
  check_error("x.permute(0, 1)", in, "0", "permute needs 3 dims for a tensor of shape [2, 3, 4], got 2");
  check_error("x.permute(0, 0, 1)", in, "0", "dim 0 appears more than once");
  check_error("torch.permute(x, (0, 1, 3))", in, "(0", "dim 3 is out of range");
}

TEST_F(ShapeOps, UnsqueezeAndSqueeze) {
  check("torch.unsqueeze(x, 0)", in, x.unsqueeze(0));
  check("x.unsqueeze(-1)", in, x.unsqueeze(3));
  check("x.unsqueeze(dim=3)", in, x.unsqueeze(3));
  check("x.unsqueeze(-4)", in, x.unsqueeze(0));
  EXPECT_EQ(attr_int(lowered("x.unsqueeze(-1)", in), "dim"), 3);
  check_error("x.unsqueeze(4)", in, "4", "dim 4 is out of range for unsqueeze of a tensor of rank 3 (expected -4..3)");
  check_error("x.unsqueeze(-5)", in, "-5", "out of range for unsqueeze");

  torch::Tensor y = torch::randn({2, 1, 3, 1});
  NamedTensors iy = {{"y", y}};
  check("torch.squeeze(y)", iy, y.reshape({2, 3}));
  check("y.squeeze()", iy, y.reshape({2, 3}));
  check("y.squeeze(1)", iy, y.reshape({2, 3, 1}));
  check("y.squeeze(-1)", iy, y.reshape({2, 1, 3}));
  check("y.squeeze(0)", iy, y);
  check("torch.squeeze(y, dim=(1, 3))", iy, y.reshape({2, 3}));
  check("y.squeeze((-1, 0))", iy, y.reshape({2, 1, 3}));
  EXPECT_EQ(attr_ints(lowered("y.squeeze()", iy), "dims"), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(attr_ints(lowered("y.squeeze(dim=(-1, 1, 0))", iy), "dims"), (std::vector<int64_t>{1, 3}));
  check_error("y.squeeze(4)", iy, "4", "dim 4 is out of range for a tensor of rank 4");
  check_error("y.squeeze(dim=1.0)", iy, "dim", "must be an int or a tuple of ints, got float");
}

TEST_F(ShapeOps, ExpandAndBroadcastTo) {
  torch::Tensor b = torch::randn({3, 1});
  NamedTensors ib = {{"b", b}};
  check("b.expand(2, 3, 4)", ib, b.expand({2, 3, 4}));
  check("b.expand(-1, 5)", ib, b.expand({3, 5}));
  check("b.expand((3, 1))", ib, b);
  check("b.expand(size=[3, 2])", ib, b.expand({3, 2}));
  check("torch.broadcast_to(b, (2, 3, 2))", ib, b.expand({2, 3, 2}));
  check("b.broadcast_to((-1, 4))", ib, b.expand({3, 4}));
  torch::Tensor z = torch::randn({4, 3, 6});
  check("b.expand_as(z)", {{"b", b}, {"z", z}}, b.expand({4, 3, 6}));
  EXPECT_EQ(attr_ints(lowered("b.expand(2, -1, -1)", ib), "shape"), (std::vector<int64_t>{2, 3, 1}));
  check_error("b.expand(4, 4)", ib, "4",
              "the expanded size 4 must match the existing size 3 at non-singleton dimension 0");
  check_error("b.expand(-1, 3, 2)", ib, "-1", "the expanded size -1 is not allowed in a new leading dimension 0");
  check_error("b.expand(3)", ib, "3", "the number of sizes provided (1) must be greater or equal");
  check_error("b.expand_as(w)", {{"b", b}, {"w", torch::randn({4, 4})}}, "w)", "must match the existing size 3");
}

TEST_F(ShapeOps, Contiguous) {
  std::vector<torch::Tensor> got = run_reference(returning("x.transpose(0, 1).contiguous()", in), in);
  expect_same(got[0], x.transpose(0, 1).contiguous());
  EXPECT_TRUE(got[0].is_contiguous());
  EXPECT_EQ(lowered("x.contiguous()", in).op, "contiguous");
  check_error("x.contiguous(1)", in, "1", "takes at most 1 positional argument");
}

TEST_F(ShapeOps, Flip) {
  check("torch.flip(x, (0, 2))", in, x.flip({0, 2}));
  check("x.flip(-1)", in, x.flip({2}));
  check("x.flip(0, 1)", in, x.flip({0, 1}));
  check("x.flip(dims=[2])", in, x.flip({2}));
  check("torch.flip(x, dims=[])", in, x);
  EXPECT_EQ(attr_ints(lowered("x.flip(-1, 0)", in), "dims"), (std::vector<int64_t>{0, 2}));
  check_error("x.flip(0, -3)", in, "0", "dim -3 appears more than once");
  check_error("torch.flip(x, 2)", in, "2", "must be a tuple of ints, got int");
  check_error("torch.flip(x, (3,))", in, "(3", "dim 3 is out of range for a tensor of rank 3");
}

}  // namespace
}  // namespace kevo
