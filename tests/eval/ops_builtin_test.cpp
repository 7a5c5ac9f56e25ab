// Built-in ops: broadcasting arithmetic and comparisons with torch's type promotion, where,
// maximum/minimum, constant folding and size queries, each against LibTorch called directly.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h

struct BuiltinOps : ::testing::Test {
  void SetUp() override {
    torch::manual_seed(11);
    x = torch::randn({4, 5});
    row = torch::rand({5}) + 0.5;  // broadcasts over x's rows; kept away from 0 for division
    col = torch::rand({4, 1}) + 0.5;
    n = torch::randint(1, 7, {4, 5}, torch::kInt64);
    in = {{"x", x}, {"row", row}, {"col", col}, {"n", n}};
  }
  torch::Tensor x, row, col, n;
  NamedTensors in;
};

TEST_F(BuiltinOps, BroadcastingArithmeticMatchesTorch) {
  expect_returns("x + row", in, x + row);
  expect_returns("x - col", in, x - col);
  expect_returns("row * col", in, row * col);
  expect_returns("x / row", in, x / row);
  expect_returns("col ** 2", in, col.pow(2));
  expect_returns("row ** col", in, row.pow(col));
  expect_returns("x // col", in, torch::floor_divide(x, col));
  expect_returns("x % col", in, torch::remainder(x, col));
  expect_returns("torch.add(x, row)", in, torch::add(x, row));
  expect_returns("torch.sub(x, other=row)", in, torch::sub(x, row));
  expect_returns("x.mul(col)", in, x.mul(col));
  expect_returns("torch.div(x, row)", in, torch::div(x, row));
  expect_returns("torch.pow(col, 3)", in, torch::pow(col, 3));
  expect_returns("-x", in, -x);
  expect_returns("+x", in, x);
}

TEST_F(BuiltinOps, ScalarsFollowTorchTypePromotion) {
  expect_returns("x * 2.0 + 1", in, x * 2.0 + 1);
  expect_returns("2.0 * x", in, 2.0 * x);
  expect_returns("1 - x", in, 1 - x);
  expect_returns("n + 1", in, n + 1);            // int64 stays int64
  expect_returns("n * 0.5", in, n * 0.5);        // a float scalar lifts int64 to float32
  expect_returns("n / 2", in, n / 2);            // true division of integers gives float32
  expect_returns("n // 2", in, torch::floor_divide(n, 2));
  expect_returns("n ** 2", in, n.pow(2));
  expect_returns("x + n", in, x + n);            // float32 with int64 tensor: float32
  EXPECT_EQ(lower_for(returning("n * 0.5", in), in).values.back().dtype, DType::Float32);
  EXPECT_EQ(lower_for(returning("n + 1", in), in).values.back().dtype, DType::Int64);
}

TEST_F(BuiltinOps, ComparisonsGiveBool) {
  expect_returns("x > 0", in, x > 0);
  expect_returns("x <= row", in, x <= row);
  expect_returns("n == 3", in, n == 3);
  expect_returns("n != col", in, n != col);
  expect_returns("torch.lt(x, col)", in, torch::lt(x, col));
  expect_returns("x.ge(0.5)", in, x.ge(0.5));
  EXPECT_EQ(lower_for(returning("x < row", in), in).values.back().dtype, DType::Bool);
}

TEST_F(BuiltinOps, WhereMaximumMinimum) {
  expect_returns("torch.where(x > 0, x, row)", in, torch::where(x > 0, x, row));
  expect_returns("torch.where(x > 0, x, 0.0)", in, torch::where(x > 0, x, torch::zeros({}, x.options())));
  expect_returns("torch.where(x > col, 1.0, 0.0)", in,
                 torch::where(x > col, torch::ones({}), torch::zeros({})));
  expect_returns("torch.maximum(x, row)", in, torch::maximum(x, row));
  expect_returns("torch.minimum(x, col)", in, torch::minimum(x, col));
  expect_returns("x.maximum(row)", in, x.maximum(row));
}

TEST_F(BuiltinOps, PythonNumbersFoldAndSizesAreKnown) {
  expect_returns("x * math.sqrt(2.0 / math.pi)", in, x * std::sqrt(2.0 / M_PI));
  expect_returns("x * (3 // 2) + 2 ** 3", in, x * 1 + 8);
  expect_returns("x.view(x.size(0) * x.shape[1])", in, x.view({20}));
  expect_returns("x.view(x.numel())", in, x.view({20}));
  expect_returns("x * x.dim() + x.ndim", in, x * 2 + 2);
  // Folded arithmetic leaves no node behind: one mul and its constant.
  Graph g = lower_for(returning("x * (1.5 * 2)", in), in);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "constant");
  EXPECT_DOUBLE_EQ(attr_float(g.nodes[0], "value"), 3.0);
  EXPECT_EQ(g.nodes[1].op, "mul");
}

// Python's builtins over shapes and numbers (min/max of sizes, int(), len()); abs() of a tensor is torch.abs.
TEST_F(BuiltinOps, PythonBuiltins) {
  expect_returns("x.view(min(x.shape[0], 2), -1)", in, x.view({2, 10}));
  expect_returns("x.view(max(2, x.size(1), 1), -1)", in, x.view({5, 4}));
  expect_returns("x.view(min((20, 40)))", in, x.view({20}));
  expect_returns("x * int(2.7) + float(1)", in, x * 2 + 1.0);
  expect_returns("x * int(-2.7)", in, x * -2);
  expect_returns("x * len(x) + len(x.shape)", in, x * 4 + 2);
  expect_returns("x * abs(-3) + abs(x)", in, x * 3 + x.abs());
  expect_returns("x * max(0.5, 1)", in, x * 1);
  expect_error_at("min(x, row)", in, "x,", "Python's min() of tensors is not supported: use torch.minimum or torch.amin");
  expect_error_at("x * max()", in, "max", "missing required argument 'args'");
  expect_error_at("x * len(x[0, 0])", in, "x[0", "len() of a 0-d tensor");
  expect_error_at("x * int('3')", in, "'3'", "must be a number, got str");
}

TEST_F(BuiltinOps, DevicesAreAcceptedAndIgnored) {
  expect_returns("x + torch.tensor(1.0, device=x.device)", in, x + 1);
  expect_returns("x.to(torch.device('cuda'))", in, x);
  expect_error_at("x + torch.device(1)", in, "1", "argument 'type' of device: must be str, got int");
  expect_error_at("x + x.device", in, "+", "unsupported operand type device");
}

TEST_F(BuiltinOps, ErrorsPointAtTheProblem) {
  expect_error_at("x + torch.randx", in, "randx", "unknown function 'torch.randx'");
  expect_error_at("x + x.shape", in, "+", "unsupported operand type tuple");
  expect_error_at("x + row.view(5, 1)", in, "+", "cannot be broadcast");
  expect_error_at("torch.where(x, x, row)", in, "x, x", "must be a bool tensor");
  expect_error_at("x * (1 / 0)", in, "/", "division by zero");
  expect_error_at("x.size(2)", in, "x.size", "out of range");
}

}  // namespace
}  // namespace kevo
