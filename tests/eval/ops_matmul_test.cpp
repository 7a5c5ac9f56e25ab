// Matrix products, einsum and scaled_dot_product_attention: interpreted references against LibTorch.
#include <cmath>

#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using torch::Tensor;

// Products sum many terms in float32: compare at atol 1e-5.
void check(const std::string& expr, const NamedTensors& in, const Tensor& expected) {
  expect_returns(expr, in, expected, 1e-5, 1e-5);
}

struct MatmulOps : ::testing::Test {
  void SetUp() override { torch::manual_seed(7); }
};

TEST_F(MatmulOps, MatmulFollowsTorchRankRules) {
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

TEST_F(MatmulOps, MmAndBmm) {
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

TEST_F(MatmulOps, Linear) {
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

TEST_F(MatmulOps, Einsum) {
  Tensor a = torch::randn({2, 3, 4, 5}), b = torch::randn({5, 6}), m = torch::randn({4, 4}), v = torch::randn({4});
  Tensor p = torch::randn({3, 1, 5}), q = torch::randn({7, 5});
  NamedTensors in = {{"a", a}, {"b", b}, {"m", m}, {"v", v}, {"p", p}, {"q", q}};
  check("torch.einsum('bijl,lk->bijk', a, b)", in, torch::einsum("bijl,lk->bijk", {a, b}));  // KernelBench level 1, 11
  check("torch.einsum('ij,jk', m, m)", in, m.mm(m));
  check("torch.einsum('ii->i', m)", in, m.diagonal());
  check("torch.einsum('ii', m)", in, m.trace());
  check("torch.einsum('i,j->ij', v, v)", in, torch::outer(v, v));
  check("torch.einsum('...l,lk->...k', a, b)", in, torch::matmul(a, b));
  check("torch.einsum('bij->jb', a[:, :, :, 0])", in, a.select(3, 0).sum(1).t());
  check("torch.einsum('ij,jk->ik', [m, m])", in, m.mm(m));
  check("torch.einsum('xyz, wz -> xyw', p, q)", in, torch::einsum("xyz,wz->xyw", {p, q}));
  check("torch.einsum('ji', m)", in, m.t());  // implicit output: labels in ASCII order
  Node n = lowered("torch.einsum('ij,jk->ik', m, m)", in);
  EXPECT_EQ(n.op, "einsum");
  EXPECT_EQ(attr_str(n, "equation"), "ij,jk->ik");

  expect_errors_at(in, {
      {"torch.einsum('ij,jk->ik', m)", "'ij", "1 operands were provided but the equation 'ij,jk->ik' names 2"},
      {"torch.einsum('ijk', m)", "'ijk'", "the subscripts of operand 0 ('ijk') do not fit its shape [4, 4]"},
      {"torch.einsum('ij,jk->ik', m, b)", "'ij", "subscript j has size 5 for operand 1 which does not broadcast"},
      {"torch.einsum('ij->iz', m)", "'ij", "output subscript z does not appear in the equation for any input operand"},
      {"torch.einsum('ij->ii', m)", "'ij", "output subscript i appears more than once in the output"},
      {"torch.einsum('i1', v)", "'i1'", "invalid subscript '1'"},
  });
}

// softmax(q k^T / sqrt(E) + mask) v, written out in LibTorch.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias, double scale) {
  Tensor s = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (bias.defined()) s = s + bias;
  return torch::matmul(torch::softmax(s, -1), v);
}

TEST_F(MatmulOps, ScaledDotProductAttention) {
  Tensor q = torch::randn({2, 3, 5, 8}), k = torch::randn({2, 3, 7, 8}), v = torch::randn({2, 3, 7, 4});
  Tensor keep = torch::rand({5, 7}) > 0.3, add = torch::randn({3, 5, 7});
  keep.select(1, 0).fill_(true);  // every row keeps a position
  Tensor kq = torch::randn({2, 3, 5, 8});
  NamedTensors in = {{"q", q}, {"k", k}, {"v", v}, {"keep", keep}, {"add", add}, {"kq", kq}, {"vq", v.narrow(2, 0, 5)}};
  double scale = 1.0 / std::sqrt(8.0);
  Tensor none;
  check("F.scaled_dot_product_attention(q, k, v)", in, attention(q, k, v, none, scale));
  check("F.scaled_dot_product_attention(q, k, v, scale=0.5)", in, attention(q, k, v, none, 0.5));
  check("F.scaled_dot_product_attention(q, k, v, attn_mask=add)", in, attention(q, k, v, add, scale));
  Tensor masked = torch::zeros({5, 7}).masked_fill(keep.logical_not(), -INFINITY);
  check("F.scaled_dot_product_attention(q, k, v, keep)", in, attention(q, k, v, masked, scale));
  Tensor causal = torch::zeros({5, 5}).masked_fill(torch::ones({5, 5}, torch::kBool).tril().logical_not(), -INFINITY);
  check("F.scaled_dot_product_attention(q, kq, vq, is_causal=True)", in, attention(q, kq, v.narrow(2, 0, 5), causal, scale));
  check("F.scaled_dot_product_attention(q[0, 0], k[0, 0], v[0, 0], dropout_p=0.0)", in,
        attention(q[0][0], k[0][0], v[0][0], none, scale));
  Node n = lowered("F.scaled_dot_product_attention(q, k, v)", in);
  EXPECT_EQ(n.op, "scaled_dot_product_attention");
  EXPECT_EQ(n.inputs[3], -1);
  EXPECT_TRUE(attr_is_none(n, "scale"));
  EXPECT_FALSE(attr_bool(n, "is_causal"));
  expect_half_precision_matches("F.scaled_dot_product_attention(q, k, v, add)", in, 1e-2, 5e-2);

  expect_errors_at(in, {
      {"F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)", "dropout_p",
       "dropout makes the reference's output random, so it cannot be checked: pass dropout_p=0.0"},
      {"F.scaled_dot_product_attention(q, v, v)", "v,", "argument 'key' of scaled_dot_product_attention: has embedding size 4"},
      {"F.scaled_dot_product_attention(q, k, kq)", "kq", "has 5 positions but key [2, 3, 7, 8] has 7"},
      {"F.scaled_dot_product_attention(q, k, v, keep, is_causal=True)", "keep", "should not be set when is_causal=True"},
      {"F.scaled_dot_product_attention(q, k, v, add[0, :4])", "add", "does not broadcast to the scores' shape [2, 3, 5, 7]"},
      {"F.scaled_dot_product_attention(q, k, v, enable_gqa=True)", "enable_gqa", "enable_gqa=True is not supported"},
  });
}

}  // namespace
}  // namespace kevo
