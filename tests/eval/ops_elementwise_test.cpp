// Activations, unary math, clamp, square and tril/triu: interpreted references against LibTorch called directly.
#include <functional>

#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using Fn = std::function<torch::Tensor(const torch::Tensor&)>;

// The references here take one input, x.
void expect_expr(const std::string& expr, const torch::Tensor& x, const torch::Tensor& expected) {
  expect_returns(expr, {{"x", x}}, expected);
}

void expect_error_at(const std::string& expr, const torch::Tensor& x, const std::string& marker,
                     const std::string& needle) {
  testing::expect_error_at(expr, {{"x", x}}, marker, needle);
}

torch::Tensor sample(torch::IntArrayRef shape = {3, 5}) {
  torch::manual_seed(7);
  return torch::randn(shape) * 3;
}

TEST(ElementwiseOps, ActivationsWithoutParametersMatchTorch) {
  torch::Tensor x = sample();
  auto hardsigmoid = [](const torch::Tensor& v) { return torch::clamp(v / 6 + 0.5, 0, 1); };
  const double selu_alpha = 1.6732632423543772, selu_scale = 1.0507009873554805;
  std::vector<std::pair<std::string, Fn>> cases = {
      {"torch.relu(x)", [](auto& v) { return torch::clamp_min(v, 0); }},
      {"x.relu()", [](auto& v) { return torch::clamp_min(v, 0); }},
      {"F.relu(x)", [](auto& v) { return torch::clamp_min(v, 0); }},
      {"F.relu(input=x, inplace=False)", [](auto& v) { return torch::clamp_min(v, 0); }},
      {"torch.sigmoid(x)", [](auto& v) { return 1 / (1 + torch::exp(-v)); }},
      {"x.sigmoid()", [](auto& v) { return torch::sigmoid(v); }},
      {"F.sigmoid(x)", [](auto& v) { return torch::sigmoid(v); }},
      {"torch.tanh(x)", [](auto& v) { return torch::tanh(v); }},
      {"x.tanh()", [](auto& v) { return torch::tanh(v); }},
      {"F.tanh(x)", [](auto& v) { return torch::tanh(v); }},
      {"F.silu(x)", [](auto& v) { return v * torch::sigmoid(v); }},
      {"F.silu(x, inplace=False)", [](auto& v) { return torch::silu(v); }},
      {"F.mish(x)", [](auto& v) { return v * torch::tanh(torch::softplus(v)); }},
      {"F.selu(x)",
       [&](auto& v) { return selu_scale * torch::where(v > 0, v, selu_alpha * (torch::exp(v) - 1)); }},
      {"torch.selu(x)", [](auto& v) { return torch::selu(v); }},
      {"F.hardsigmoid(x)", hardsigmoid},
      {"F.hardswish(x)", [&](auto& v) { return v * hardsigmoid(v); }},
      {"F.softsign(x)", [](auto& v) { return v / (1 + v.abs()); }},
      {"torch.exp(x)", [](auto& v) { return torch::exp(v); }},
      {"x.exp()", [](auto& v) { return torch::exp(v); }},
      {"torch.abs(x)", [](auto& v) { return torch::where(v < 0, -v, v); }},
      {"torch.absolute(x)", [](auto& v) { return torch::abs(v); }},
      {"x.abs()", [](auto& v) { return torch::abs(v); }},
      {"x.absolute()", [](auto& v) { return torch::abs(v); }},
      {"torch.neg(x)", [](auto& v) { return -v; }},
      {"torch.negative(x)", [](auto& v) { return -v; }},
      {"x.neg()", [](auto& v) { return -v; }},
      {"x.negative()", [](auto& v) { return -v; }},
      {"-x", [](auto& v) { return -v; }},
      {"torch.erf(x)", [](auto& v) { return torch::erf(v); }},
      {"x.erf()", [](auto& v) { return torch::erf(v); }},
      {"torch.sin(x)", [](auto& v) { return torch::sin(v); }},
      {"x.sin()", [](auto& v) { return torch::sin(v); }},
      {"torch.cos(x)", [](auto& v) { return torch::cos(v); }},
      {"x.cos()", [](auto& v) { return torch::cos(v); }},
  };
  for (const auto& [expr, fn] : cases) expect_expr(expr, x, fn(x));
}

TEST(ElementwiseOps, PositiveDomainMathMatchesTorch) {
  torch::Tensor x = sample().abs() + 0.1;
  expect_expr("torch.log(x)", x, torch::log(x));
  expect_expr("x.log()", x, torch::log(x));
  expect_expr("torch.sqrt(x)", x, torch::sqrt(x));
  expect_expr("x.sqrt()", x, torch::sqrt(x));
  expect_expr("torch.rsqrt(x)", x, 1 / torch::sqrt(x));
  expect_expr("x.rsqrt()", x, torch::rsqrt(x));
}

TEST(ElementwiseOps, ParametersAndDefaultsFollowTorch) {
  torch::Tensor x = sample();
  expect_expr("F.leaky_relu(x)", x, torch::where(x > 0, x, 0.01 * x));
  expect_expr("F.leaky_relu(x, 0.2)", x, torch::leaky_relu(x, 0.2));
  expect_expr("F.leaky_relu(x, negative_slope=0.3, inplace=False)", x, torch::leaky_relu(x, 0.3));
  expect_expr("F.gelu(x)", x, 0.5 * x * (1 + torch::erf(x / std::sqrt(2.0))));
  expect_expr("F.gelu(x, approximate='none')", x, torch::gelu(x));
  expect_expr("F.gelu(x, approximate='tanh')", x, torch::gelu(x, "tanh"));
  expect_expr("F.elu(x)", x, torch::where(x > 0, x, torch::exp(x) - 1));
  expect_expr("F.elu(x, 0.5)", x, torch::elu(x, 0.5));
  expect_expr("F.elu(x, alpha=2)", x, torch::elu(x, 2.0));
  expect_expr("F.celu(x, alpha=2.0)", x, torch::where(x > 0, x, 2.0 * (torch::exp(x / 2.0) - 1)));
  expect_expr("torch.celu(x)", x, torch::celu(x));
  expect_expr("torch.celu(x, 0.5)", x, torch::celu(x, 0.5));
  expect_expr("F.hardtanh(x)", x, torch::clamp(x, -1, 1));
  expect_expr("F.hardtanh(x, -2.0, 3)", x, torch::clamp(x, -2, 3));
  expect_expr("F.hardtanh(x, min_val=0.5, max_val=2.5, inplace=False)", x, torch::clamp(x, 0.5, 2.5));
  expect_expr("F.relu6(x * 3)", x, torch::clamp(x * 3, 0, 6));
  expect_expr("F.softplus(x)", x, torch::where(x > 20, x, torch::log1p(torch::exp(x))));
  expect_expr("F.softplus(x, 2.0, 1.0)", x, torch::softplus(x, 2.0, 1.0));
  expect_expr("F.softplus(x, beta=0.5, threshold=3)", x,
              torch::where(x * 0.5 > 3, x, torch::log1p(torch::exp(x * 0.5)) / 0.5));
}

TEST(ElementwiseOps, KeepsShapeAndFloatingDtype) {
  torch::Tensor x = sample({2, 3, 4}).to(torch::kFloat64);
  expect_expr("F.gelu(x)", x, torch::gelu(x));
  torch::Tensor s = torch::tensor(-1.5);
  expect_expr("F.silu(x)", s, torch::silu(s));
}

TEST(ElementwiseOps, IntegerInputsFollowTorchPromotion) {
  torch::manual_seed(3);
  torch::Tensor i = torch::randint(-5, 6, {4, 3}, torch::kInt64);
  torch::Tensor i32 = i.to(torch::kInt32);
  expect_expr("torch.relu(x)", i, torch::relu(i));
  expect_expr("torch.abs(x)", i32, torch::abs(i32));
  expect_expr("-x", i32, torch::neg(i32));
  expect_expr("torch.exp(x)", i, torch::exp(i));
  expect_expr("torch.sigmoid(x)", i32, torch::sigmoid(i32));
  expect_expr("x.tanh()", i, torch::tanh(i));
  torch::Tensor b = i > 0;
  expect_expr("torch.exp(x)", b, torch::exp(b));
  EXPECT_EQ(torch::exp(i32).scalar_type(), torch::kFloat32);
  EXPECT_EQ(torch::abs(i32).scalar_type(), torch::kInt32);
}

TEST(ElementwiseOps, ActivationErrorsPointAtTheArgument) {
  torch::Tensor x = sample();
  torch::Tensor i = torch::arange(6).reshape({2, 3});
  expect_error_at("F.gelu(x, approximate='erf')", x, "approximate", "must be 'none' or 'tanh', got 'erf'");
  expect_error_at("F.relu(x, inplace=True)", x, "inplace", "inplace=True is not supported");
  expect_error_at("F.leaky_relu(x, 0.1, True)", x, "True", "inplace=True is not supported");
  expect_error_at("F.elu(x, alpha='a')", x, "alpha", "must be a number, got str");
  expect_error_at("F.hardtanh(x, 2.0, 1.0)", x, "F.hardtanh", "min_val cannot be greater than max_val");
  expect_error_at("F.softplus(x, inplace=False)", x, "inplace", "unexpected keyword argument 'inplace'");
  expect_error_at("F.silu(x)", i, "F.silu", "silu needs a floating-point tensor, got int64");
  expect_error_at("F.relu6(x)", i, "F.relu6", "hardtanh needs a floating-point tensor, got int64");
  expect_error_at("torch.abs(x > 0)", x, "torch.abs", "abs does not support bool tensors");
  expect_error_at("torch.relu(x > 0)", x, "torch.relu", "relu does not support bool tensors");
  expect_error_at("torch.sigmoid(3.0)", x, "3.0", "must be a Tensor, got float");
  // Spellings torch does not have stay unknown, so references remain valid Python.
  expect_error_at("torch.gelu(x)", x, "gelu", "unknown function 'torch.gelu'");
  expect_error_at("x.silu()", x, "silu", "Tensor has no method or attribute 'silu'");
  expect_error_at("torch.nn.functional.exp(x)", x, "exp", "unknown function 'torch.nn.functional.exp'");
}

TEST(ElementwiseOps, LowersToCanonicalNodes) {
  NamedTensors in = {{"x", sample()}};
  Graph g = lower_for("def run(x):\n    return F.relu6(F.leaky_relu(F.gelu(x, approximate='tanh')))\n", in);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].op, "gelu");
  EXPECT_EQ(attr_str(g.nodes[0], "approximate"), "tanh");
  EXPECT_EQ(g.nodes[1].op, "leaky_relu");
  EXPECT_DOUBLE_EQ(attr_float(g.nodes[1], "negative_slope"), 0.01);
  EXPECT_EQ(g.nodes[2].op, "hardtanh");
  EXPECT_DOUBLE_EQ(attr_float(g.nodes[2], "min_val"), 0.0);
  EXPECT_DOUBLE_EQ(attr_float(g.nodes[2], "max_val"), 6.0);
  EXPECT_EQ(g.nodes[2].attrs.count("inplace"), 0u);
}

TEST(ElementwiseOps, ClampSpellingsMatchTorch) {
  torch::Tensor x = sample();
  expect_expr("torch.clamp(x, -1.0, 2.0)", x, torch::clamp(x, -1.0, 2.0));
  expect_expr("torch.clamp(x, min=-0.5)", x, torch::clamp(x, -0.5));
  expect_expr("torch.clamp(x, max=0.5)", x, torch::clamp(x, {}, 0.5));
  expect_expr("torch.clip(x, -1, 1)", x, torch::clamp(x, -1, 1));
  expect_expr("x.clamp(0.0)", x, torch::clamp_min(x, 0.0));
  expect_expr("x.clamp(max=1)", x, torch::clamp_max(x, 1));
  expect_expr("x.clip(min=-2, max=None)", x, torch::clamp_min(x, -2));
  expect_expr("torch.clamp_min(x, 0.25)", x, torch::where(x < 0.25, torch::full_like(x, 0.25), x));
  expect_expr("x.clamp_min(min=0)", x, torch::clamp_min(x, 0));
  expect_expr("torch.clamp_max(x, -0.25)", x, torch::clamp_max(x, -0.25));
  expect_expr("x.clamp_max(max=3)", x, torch::clamp_max(x, 3));
}

TEST(ElementwiseOps, ClampOnIntegersFollowsTorchPromotion) {
  torch::manual_seed(5);
  torch::Tensor i = torch::randint(-10, 10, {4, 4}, torch::kInt64);
  torch::Tensor i32 = i.to(torch::kInt32);
  expect_expr("torch.clamp(x, -3, 4)", i, torch::clamp(i, -3, 4));
  expect_expr("x.clamp(min=0)", i32, torch::clamp(i32, 0));
  expect_expr("torch.clamp(x, -2.5, 2.5)", i, torch::clamp(i, -2.5, 2.5));
  expect_expr("torch.clamp_max(x, 1.5)", i32, torch::clamp_max(i32, 1.5));
  torch::Tensor b = i > 0;
  expect_expr("torch.clamp(x, 0, 1)", b, torch::clamp(b, 0, 1));
  expect_expr("x.clamp(max=0.5)", b, torch::clamp(b, {}, 0.5));
  EXPECT_EQ(torch::clamp(b, 0, 1).scalar_type(), torch::kInt64);
  EXPECT_EQ(torch::clamp(i32, 0).scalar_type(), torch::kInt32);
  EXPECT_EQ(torch::clamp(i, -2.5, 2.5).scalar_type(), torch::kFloat32);
}

TEST(ElementwiseOps, ClampErrors) {
  torch::Tensor x = sample();
  expect_error_at("torch.clamp(x)", x, "torch.clamp", "clamp needs min or max");
  expect_error_at("x.clamp(min=None, max=None)", x, "x.clamp", "clamp needs min or max");
  expect_error_at("torch.clamp(x, min=x)", x, "min=", "a Tensor bound is not supported");
  expect_error_at("torch.clamp(x, 0, 'a')", x, "'a'", "must be a number or None, got str");
  expect_error_at("torch.clamp_min(x)", x, "torch.clamp_min", "missing required argument 'min'");
  expect_error_at("torch.clamp_max(x, None)", x, "torch.clamp_max", "clamp needs min or max");
  expect_error_at("torch.clamp(x, True)", x, "True", "must be a number or None, got bool");
}

TEST(ElementwiseTriangles, TrilTriuAndSquare) {
  torch::manual_seed(31);
  torch::Tensor m = torch::randn({5, 4}), b = torch::randn({2, 3, 4}), i = torch::randint(-3, 3, {3, 3}, torch::kInt64);
  NamedTensors in = {{"m", m}, {"b", b}, {"i", i}, {"v", torch::randn({4})}};
  expect_returns("torch.triu(m)", in, torch::triu(m));
  expect_returns("torch.tril(m, -1)", in, torch::tril(m, -1));
  expect_returns("m.triu(diagonal=2)", in, torch::triu(m, 2));
  expect_returns("b.tril(1)", in, torch::tril(b, 1));
  expect_returns("torch.tril(i)", in, torch::tril(i));
  // KernelBench level 1, 14 and 15: a triangle of a matmul.
  expect_returns("torch.triu(torch.matmul(m, m.T))", in, torch::triu(torch::matmul(m, m.t())), 1e-5, 1e-5);
  expect_returns("torch.square(m)", in, torch::square(m));
  expect_returns("i.square()", in, torch::square(i));
  expect_returns("torch.square(i > 0)", in, torch::square(i > 0));
  EXPECT_EQ(attr_int(lowered("torch.tril(m, -2)", in), "diagonal"), -2);
  expect_half_precision_matches("torch.triu(m, 1)", in, 0.0, 0.0);
  testing::expect_error_at("torch.tril(v)", in, "v", "tril: input tensor must have at least 2 dimensions, got shape [4]");
}

}  // namespace
}  // namespace kevo
