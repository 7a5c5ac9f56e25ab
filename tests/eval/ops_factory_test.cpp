// Tensors a reference makes itself: torch.tensor constants, zeros, ones, full and their *_like
// forms, against LibTorch; random and uninitialised ones are refused.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using torch::Tensor;

struct FactoryOps : ::testing::Test {
  void SetUp() override {
    torch::manual_seed(29);
    x = torch::randn({3, 4});
    in = {{"x", x}, {"h", x.to(torch::kFloat16)}, {"i", torch::randint(0, 5, {2, 2}, torch::kInt64)}};
  }
  Tensor x;
  NamedTensors in;
};

TEST_F(FactoryOps, TorchTensorConstants) {
  expect_returns("x + torch.tensor(2.5)", in, x + torch::tensor(2.5f));
  expect_returns("torch.tensor(3)", in, torch::tensor(int64_t{3}));
  expect_returns("torch.tensor(True)", in, torch::tensor(true));
  expect_returns("torch.tensor(0.5, dtype=torch.float16)", in, torch::tensor(0.5).to(torch::kFloat16));
  expect_returns("torch.tensor([1.0, 2.0, 3.0])", in, torch::tensor({1.0f, 2.0f, 3.0f}));
  expect_returns("torch.tensor([[1, 2], [3, 4]])", in, torch::tensor({1, 2, 3, 4}, torch::kInt64).view({2, 2}));
  expect_returns("torch.tensor([[1, 2.5]])", in, torch::tensor({1.0f, 2.5f}).view({1, 2}));
  expect_returns("torch.tensor((True, 2))", in, torch::tensor({1, 2}, torch::kInt64));
  expect_returns("torch.tensor([4.0])", in, torch::tensor({4.0f}));
  expect_returns("torch.tensor([])", in, torch::zeros({0}));
  expect_returns("torch.tensor(x)", in, x);
  // KernelBench level 2, 31, 83 and 93: an elementwise minimum with a constant tensor.
  expect_returns("torch.min(x, torch.tensor(0.25))", in, torch::minimum(x, torch::tensor(0.25f)));
  expect_returns("torch.min(x, torch.tensor(0.0, device=x.device))", in, torch::minimum(x, torch::tensor(0.0f)));
  expect_returns("torch.min(h, torch.tensor(0.0, device=x.device))", in,
                 torch::minimum(in[1].second, torch::tensor(0.0f).to(torch::kFloat16)));
  Node n = lowered("torch.tensor(2.5)", in);
  EXPECT_EQ(n.op, "full");
  EXPECT_EQ(attr_ints(n, "shape"), (std::vector<int64_t>{}));
  EXPECT_DOUBLE_EQ(attr_float(n, "value"), 2.5);
  expect_errors_at(in, {
      {"torch.tensor([[1, 2], [3]])", "[[", "expected sequence of length 2 at dim 1 (got 1)"},
      {"torch.tensor([[1, 2], 3])", "[[", "is not rectangular"},
      {"torch.tensor('a')", "'a'", "must be a number or a (nested) list of numbers, got str"},
      {"torch.tensor([x, x])", "[x", "must hold numbers, got Tensor"},
      {"torch.tensor(1.0, requires_grad=1)", "requires_grad", "must be bool, got int"},
  });
}

TEST_F(FactoryOps, FilledTensors) {
  expect_returns("torch.zeros(2, 3)", in, torch::zeros({2, 3}));
  expect_returns("torch.ones((2, 3), dtype=torch.float16)", in, torch::ones({2, 3}, torch::kFloat16));
  expect_returns("torch.zeros(x.shape)", in, torch::zeros({3, 4}));
  expect_returns("torch.zeros(2, dtype=float)", in, torch::zeros({2}, torch::kFloat64));  // Python's float is float64
  expect_returns("torch.full((2,), 7)", in, torch::full({2}, 7, torch::kInt64));
  expect_returns("torch.full([2, 2], 7.5)", in, torch::full({2, 2}, 7.5));
  expect_returns("torch.full((1,), True)", in, torch::full({1}, true, torch::kBool));
  expect_returns("torch.zeros_like(x)", in, torch::zeros_like(x));
  expect_returns("torch.ones_like(i)", in, torch::ones_like(in[2].second));
  expect_returns("torch.ones_like(h, dtype=torch.float32)", in, torch::ones({3, 4}));
  expect_returns("torch.full_like(x, 3, dtype=torch.float64)", in, torch::full({3, 4}, 3.0, torch::kFloat64));
  expect_returns("x + torch.ones_like(x, device=x.device)", in, x + 1);
  expect_errors_at(in, {
      {"torch.zeros(2, -1)", "2", "Trying to create tensor with negative dimension -1: [2, -1]"},
      {"torch.full((2,), x)", "x)", "must be a number, got Tensor"},
      {"torch.zeros(2, dtype='float')", "dtype", "must be a dtype such as torch.float16, got str"},
      {"torch.rand(3)", "torch", "torch.rand: random tensors make the reference's output random, so it cannot be "
                                 "checked: make the values an input of the contract"},
      {"torch.randn_like(x, dtype=torch.float16)", "torch", "torch.randn_like: random tensors"},
      {"torch.empty(3)", "torch", "torch.empty: uninitialised memory has no defined value: use zeros"},
  });
}

}  // namespace
}  // namespace kevo
