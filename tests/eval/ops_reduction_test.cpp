// Reductions, max/min overloads, softmax and scans: interpreted references against LibTorch.
#include <cmath>

#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using TensorList = std::vector<torch::Tensor>;
using Dims = std::vector<int64_t>;

// Reductions sum many terms in float32: every returned tensor is compared at atol 1e-5.
void check(const std::string& expr, const NamedTensors& in, const TensorList& expected) {
  expect_returns(expr, in, expected, 1e-5, 1e-5);
}

TensorList pair(const std::tuple<torch::Tensor, torch::Tensor>& t) { return {std::get<0>(t), std::get<1>(t)}; }

struct ReductionOps : ::testing::Test {
  void SetUp() override {
    torch::manual_seed(11);
    x = torch::randn({2, 3, 4});
    ints = torch::randint(-4, 5, {3, 4}, torch::kInt32);
    in = {{"x", x}};
  }
  torch::Tensor x, ints;
  NamedTensors in;
};

TEST_F(ReductionOps, SumOverDimsAndKeepdim) {
  check("torch.sum(x)", in, {x.sum()});
  check("x.sum()", in, {x.sum()});
  check("torch.sum(x, 1)", in, {x.sum(1)});
  check("torch.sum(x, dim=-1, keepdim=True)", in, {x.sum(-1, true)});
  check("x.sum((0, 2))", in, {x.sum(Dims{0, 2})});
  check("x.sum(dim=[-1, 0], keepdim=True)", in, {x.sum(Dims{0, 2}, true)});
  check("torch.sum(x, None, True)", in, {x.sum(Dims{0, 1, 2}, true)});
  check("torch.sum(input=x, dtype=None)", in, {x.sum()});
  check("torch.sum(x)", {{"x", ints}}, {ints.sum()});
  check("x.sum(0)", {{"x", ints}}, {ints.sum(0)});
  check("torch.sum(x > 0, 1)", in, {(x > 0).sum(1)});
  EXPECT_EQ(ints.sum().scalar_type(), torch::kInt64);
}

TEST_F(ReductionOps, SumErrors) {
  expect_error_at("torch.sum(x, 3)", in, "3", "dim 3 is out of range for a tensor of rank 3");
  expect_error_at("x.sum((1, -2))", in, "(1", "dim -2 appears more than once");
  expect_error_at("torch.sum(x, 1.0)", in, "1.0", "must be an int or a tuple of ints, got float");
  expect_error_at("torch.sum(x, dtype='float64')", in, "dtype", "must be a dtype such as torch.float16, got str");
  expect_error_at("x.sum(0, False, True)", in, "True", "takes at most 3 positional arguments");
}

TEST_F(ReductionOps, MeanIsFloatingOnly) {
  check("torch.mean(x)", in, {x.mean()});
  check("x.mean(1)", in, {x.mean(1)});
  check("torch.mean(x, (0, 1), True)", in, {x.mean(Dims{0, 1}, true)});
  check("x.mean(dim=-1, keepdim=True)", {{"x", x.to(torch::kFloat64)}}, {x.to(torch::kFloat64).mean(-1, true)});
  expect_error_at("torch.mean(x, 0)", {{"x", ints}}, "torch", "mean needs a floating-point tensor, got int32");
}

TEST_F(ReductionOps, ProdReducesOneDimOrAll) {
  torch::Tensor small = torch::randint(-2, 3, {3, 4}, torch::kInt64);
  check("torch.prod(x)", in, {x.prod()});
  check("x.prod(1)", in, {x.prod(1)});
  check("torch.prod(x, -1, keepdim=True)", in, {x.prod(-1, true)});
  check("x.prod(dim=0)", {{"x", small.to(torch::kInt32)}}, {small.to(torch::kInt32).prod(0)});
  check("torch.prod(x)", {{"x", small}}, {small.prod()});
  check("torch.prod(x > 0, 1)", in, {(x > 0).prod(1)});
  expect_error_at("torch.prod(x, (0, 1))", in, "(0", "must be int, got tuple");
  expect_error_at("x.prod(keepdim=True)", in, "keepdim", "is only accepted together with dim");
}

TEST_F(ReductionOps, AmaxAminKeepTheDtype) {
  check("torch.amax(x)", in, {x.amax(Dims{0, 1, 2})});
  check("x.amax(1)", in, {x.amax(1)});
  check("torch.amax(x, (0, 2), True)", in, {x.amax(Dims{0, 2}, true)});
  check("torch.amin(x, dim=-1)", in, {x.amin(-1)});
  check("x.amin()", in, {x.amin(Dims{0, 1, 2})});
  check("torch.amax(x, 0)", {{"x", ints}}, {ints.amax(0)});
  expect_error_at("torch.amin(x, 4)", in, "4", "dim 4 is out of range for a tensor of rank 3");
  expect_error_at("torch.amax(x, 1)", {{"x", torch::zeros({2, 0})}}, "torch", "amax: cannot reduce dim 1 of size 0");
}

TEST_F(ReductionOps, Logsumexp) {
  check("torch.logsumexp(x, 1)", in, {torch::logsumexp(x, Dims{1})});
  check("x.logsumexp((0, 2), keepdim=True)", in, {torch::logsumexp(x, Dims{0, 2}, true)});
  check("torch.logsumexp(x, dim=-1)", in, {x.exp().sum(-1).log()});
  expect_error_at("torch.logsumexp(x, ())", in, "()", "must name at least one dim");
  expect_error_at("torch.logsumexp(x)", in, "torch", "missing required argument 'dim'");
  expect_error_at("torch.logsumexp(x, 0)", {{"x", ints}}, "torch",
                  "logsumexp needs a floating-point tensor, got int32");
}

TEST_F(ReductionOps, NormAsVectorNorm) {
  check("torch.norm(x)", in, {x.pow(2).sum().sqrt()});
  check("x.norm()", in, {torch::norm(x)});
  check("torch.norm(x, 1, 1)", in, {x.abs().sum(1)});
  check("x.norm(p=3, dim=-1, keepdim=True)", in, {torch::norm(x, 3, Dims{-1}, true)});
  check("torch.norm(x, p='fro', dim=(1, 2))", in, {x.pow(2).sum(Dims{1, 2}).sqrt()});
  check("x.norm('fro', 0)", in, {x.pow(2).sum(0).sqrt()});
  check("torch.norm(x, math.inf, 2)", in, {x.abs().amax(2)});
  check("x.norm(-math.inf)", in, {x.abs().min()});
  check("torch.norm(x, p=None, dim=0)", in, {x.pow(2).sum(0).sqrt()});
  check("torch.norm(x, 0, -1)", in, {(x != 0).sum(-1).to(torch::kFloat32)});
  expect_error_at("torch.norm(x, 'nuc')", in, "'nuc'", "the nuclear norm is not supported");
  expect_error_at("torch.norm(x, 'max')", in, "'max'", "must be a number, 'fro' or 'nuc', got 'max'");
  expect_error_at("torch.norm(x, 'fro', (0, 1, 2))", in, "(0", "p='fro' needs at most 2 dims");
  expect_error_at("torch.norm(x)", {{"x", ints}}, "torch", "norm needs a floating-point tensor, got int32");
}

TEST_F(ReductionOps, ArgmaxArgmin) {
  check("torch.argmax(x)", in, {torch::argmax(x)});
  check("x.argmax(1)", in, {x.argmax(1)});
  check("torch.argmax(x, dim=-1, keepdim=True)", in, {x.argmax(-1, true)});
  check("torch.argmax(x, keepdim=True)", in, {torch::argmax(x, {}, true)});
  check("torch.argmin(x, 0)", in, {x.argmin(0)});
  check("x.argmin()", in, {x.argmin()});
  check("x.argmin(dim=None, keepdim=True)", in, {torch::argmin(x, {}, true)});
  check("torch.argmax(x, 1)", {{"x", ints}}, {ints.argmax(1)});
  EXPECT_EQ(torch::argmax(x, {}, true).sizes(), torch::IntArrayRef({1, 1, 1}));
  expect_error_at("torch.argmax(x, -4)", in, "-4", "dim -4 is out of range for a tensor of rank 3");
  expect_error_at("torch.argmin(x, (0, 1))", in, "(0", "must be int, got tuple");
  expect_error_at("torch.argmax(x > 0)", in, "torch", "argmax does not support bool tensors");
}

TEST_F(ReductionOps, MaxMinOverloads) {
  torch::Tensor y = torch::randn({4});
  NamedTensors xy = {{"x", x}, {"y", y}};
  check("torch.max(x)", in, {torch::max(x)});
  check("x.min()", in, {torch::min(x)});
  check("torch.max(x, 1)", in, pair(torch::max(x, 1)));
  check("x.max(dim=-1, keepdim=True)", in, pair(torch::max(x, -1, true)));
  check("torch.min(x, 0, True)", in, pair(torch::min(x, 0, true)));
  check("torch.max(x, y)", xy, {torch::maximum(x, y)});
  check("x.min(y)", xy, {torch::minimum(x, y)});
  check("torch.max(x, other=y)", xy, {torch::maximum(x, y)});
  check("torch.min(x)", {{"x", ints}}, {torch::min(ints)});
  check("torch.max(x, 1)", {{"x", ints}}, pair(torch::max(ints, 1)));
  // Tuple results unpack like Python's (values, indices).
  TensorList got = run_reference(program("v, i = torch.min(x, 2)\n    return i, v", in), in);
  ASSERT_EQ(got.size(), 2u);
  expect_same(got[0], std::get<1>(torch::min(x, 2)));
  expect_same(got[1], std::get<0>(torch::min(x, 2)));
}

TEST_F(ReductionOps, MaxMinErrors) {
  NamedTensors xy = {{"x", x}, {"y", torch::randn({4})}};
  expect_error_at("torch.max(x, keepdim=True)", in, "keepdim", "is only accepted together with dim");
  expect_error_at("torch.max(x, 1, other=y)", xy, "other", "cannot be given with dim");
  expect_error_at("torch.min(x, y, True)", xy, "True", "is not accepted when comparing two tensors");
  expect_error_at("torch.max(x, other=2.0)", in, "other", "must be a Tensor, got float");
  expect_error_at("x.max(5)", in, "5", "dim 5 is out of range for a tensor of rank 3");
  expect_error_at("torch.max(x, 0)", {{"x", torch::zeros({0, 3})}}, "torch", "max: cannot reduce dim 0 of size 0");
  expect_error_at("torch.min(x)", {{"x", torch::zeros({0, 3})}}, "torch", "min: cannot reduce dim 0 of size 0");
  expect_error_at("torch.max(x, 1.5)", in, "1.5", "must be int, got float");
}

TEST_F(ReductionOps, SoftmaxAndLogSoftmax) {
  check("torch.softmax(x, 1)", in, {torch::softmax(x, 1)});
  check("F.softmax(x, dim=-1)", in, {x.exp() / x.exp().sum(-1, true)});
  check("x.softmax(0)", in, {torch::softmax(x, 0)});
  check("F.softmax(x, 1, 3, None)", in, {torch::softmax(x, 1)});
  check("torch.softmax(x, dim=2, dtype=None)", in, {torch::softmax(x, 2)});
  check("torch.log_softmax(x, 1)", in, {torch::log_softmax(x, 1)});
  check("F.log_softmax(x, dim=-1)", in, {x - x.exp().sum(-1, true).log()});
  check("x.log_softmax(dim=0)", in, {torch::log_softmax(x, 0)});
  expect_error_at("F.softmax(x)", in, "F", "softmax needs dim");
  expect_error_at("F.log_softmax(x, dim=None)", in, "dim", "log_softmax needs dim");
  expect_error_at("torch.softmax(x)", in, "torch", "missing required argument 'dim'");
  expect_error_at("x.log_softmax(3)", in, "3", "dim 3 is out of range for a tensor of rank 3");
  expect_error_at("torch.softmax(x, 1, 'float64')", in, "'float64'", "must be a dtype such as torch.float16, got str");
  expect_error_at("torch.softmax(x, 1)", {{"x", ints}}, "torch", "softmax needs a floating-point tensor, got int32");
}

TEST_F(ReductionOps, CumsumCumprod) {
  check("torch.cumsum(x, 1)", in, {torch::cumsum(x, 1)});
  check("x.cumsum(dim=-1)", in, {torch::cumsum(x, -1)});
  check("torch.cumprod(x, 0)", in, {torch::cumprod(x, 0)});
  torch::Tensor first = x.select(1, 0), second = first * x.select(1, 1);
  check("x.cumprod(-2)", in, {torch::stack({first, second, second * x.select(1, 2)}, 1)});
  // Integers and bools accumulate in int64.
  check("torch.cumsum(x, 0)", {{"x", ints}}, {torch::cumsum(ints, 0)});
  check("x.cumprod(dim=1)", {{"x", ints}}, {torch::cumprod(ints, 1)});
  check("torch.cumsum(x > 0, -1)", in, {torch::cumsum(x > 0, -1)});
  EXPECT_EQ(torch::cumsum(ints, 0).scalar_type(), torch::kInt64);
  expect_error_at("torch.cumsum(x)", in, "torch", "missing required argument 'dim'");
  expect_error_at("x.cumsum(dim=(0, 1))", in, "dim", "must be int, got tuple");
  expect_error_at("torch.cumprod(x, -4)", in, "-4", "dim -4 is out of range for a tensor of rank 3");
  expect_error_at("torch.cumsum(x, 0, dtype='int64')", in, "dtype", "must be a dtype such as torch.float16, got str");
}

// dtype= casts the input first, as torch does: a float16 softmax with float32 math returns float32.
TEST_F(ReductionOps, DtypeArgumentCastsTheInputFirst) {
  torch::Tensor h = x.to(torch::kFloat16), b = x > 0;
  NamedTensors mixed = {{"h", h}, {"b", b}, {"i", ints}};
  check("torch.softmax(h, -1, dtype=torch.float32)", mixed, {torch::softmax(h.to(torch::kFloat32), -1)});
  check("F.softmax(h, dim=1, dtype=torch.float)", mixed, {torch::softmax(h.to(torch::kFloat32), 1)});
  check("h.log_softmax(0, torch.float64)", mixed, {torch::log_softmax(h.to(torch::kFloat64), 0)});
  check("torch.sum(h, dim=1, dtype=torch.float32)", mixed, {h.to(torch::kFloat32).sum(1)});
  check("h.mean(-1, dtype=torch.float32)", mixed, {h.to(torch::kFloat32).mean(-1)});
  check("torch.mean(i, dtype=torch.float32)", mixed, {ints.to(torch::kFloat32).mean()});
  check("torch.sum(b, dtype=torch.int32)", mixed, {b.sum(torch::kInt32)});
  check("torch.cumsum(h, 1, dtype=torch.float32)", mixed, {h.to(torch::kFloat32).cumsum(1)});
  check("torch.prod(i, 0, dtype=torch.int64)", mixed, {ints.prod(0, false, torch::kInt64)});
  check("torch.norm(h, dim=1, dtype=torch.float32)", mixed, {h.to(torch::kFloat32).norm(2, 1)});
  Graph g = lower_for(returning("torch.softmax(h, -1, dtype=torch.float32)", mixed), mixed);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "cast");
  EXPECT_EQ(attr_str(g.nodes[0], "dtype"), "float32");
  EXPECT_EQ(g.values[g.outputs[0]].dtype, DType::Float32);
  // The dtype the input already has adds no node.
  EXPECT_EQ(lower_for(returning("x.sum(dtype=torch.float32)", in), in).nodes.size(), 1u);
}

TEST_F(ReductionOps, MaxAndMinWithDimAreNamedTuples) {
  check("torch.max(x, dim=1).values", in, {std::get<0>(torch::max(x, 1))});
  check("torch.max(x, dim=1, keepdim=True).indices", in, {std::get<1>(torch::max(x, 1, true))});
  check("x.min(-1).values, x.min(-1)[1]", in, pair(torch::min(x, -1)));
  expect_error_at("torch.max(x, 1).value", in, "value", "the result has no field 'value' (it has values, indices)");
}

TEST_F(ReductionOps, LowersToCanonicalNodes) {
  Graph g = lower_for(returning("x.sum(-1), torch.max(x), torch.argmax(x), torch.norm(x, dim=(-1, 0))", in), in);
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.nodes[0].op, "sum");
  EXPECT_EQ(attr_ints(g.nodes[0], "dim"), std::vector<int64_t>({2}));
  EXPECT_FALSE(attr_bool(g.nodes[0], "keepdim"));
  EXPECT_EQ(g.nodes[1].op, "amax");
  EXPECT_EQ(attr_ints(g.nodes[1], "dim"), std::vector<int64_t>({0, 1, 2}));
  EXPECT_EQ(g.nodes[2].op, "argmax");
  EXPECT_TRUE(attr_is_none(g.nodes[2], "dim"));
  EXPECT_EQ(g.nodes[3].op, "norm");
  EXPECT_EQ(attr_ints(g.nodes[3], "dim"), std::vector<int64_t>({0, 2}));
  EXPECT_DOUBLE_EQ(attr_float(g.nodes[3], "p"), 2.0);
  Graph m = lower_for(returning("torch.min(x, -2)", in), in);
  ASSERT_EQ(m.nodes.size(), 1u);
  EXPECT_EQ(m.nodes[0].op, "min_dim");
  EXPECT_EQ(attr_int(m.nodes[0], "dim"), 1);
  EXPECT_EQ(m.nodes[0].outputs.size(), 2u);
}

}  // namespace
}  // namespace kevo
