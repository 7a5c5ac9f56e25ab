// Losses and distances: interpreted references against LibTorch, with their keyword arguments.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using torch::Tensor;

// Losses sum many terms in float32: compare at atol 1e-5.
void check(const std::string& expr, const NamedTensors& in, const Tensor& expected) {
  expect_returns(expr, in, expected, 1e-5, 1e-5);
}

struct LossOps : ::testing::Test {
  void SetUp() override { torch::manual_seed(7); }
};

TEST_F(LossOps, MseLoss) {
  Tensor a = torch::randn({3, 4}), t = torch::randn({3, 4}), r = torch::randn({4});
  Tensor d = t.to(torch::kFloat64);
  NamedTensors in = {{"a", a}, {"t", t}, {"r", r}, {"q", torch::randn({3})}, {"d", d}, {"i", torch::ones({3, 4}, torch::kInt64)}};
  check("F.mse_loss(a, t)", in, torch::mse_loss(a, t));
  check("F.mse_loss(a, t, reduction='sum')", in, (a - t).pow(2).sum());
  check("F.mse_loss(input=a, target=t, reduction='none')", in, (a - t).pow(2));
  check("F.mse_loss(a, r)", in, (a - r).pow(2).mean());
  check("F.mse_loss(r, a, reduction='none')", in, (r - a).pow(2));
  check("F.mse_loss(a, d)", in, (a.to(torch::kFloat64) - d).pow(2).mean());
  check("F.mse_loss(a, i, reduction='sum')", in, (a - 1).pow(2).sum());
  EXPECT_EQ(attr_str(lowered("F.mse_loss(a, t)", in), "reduction"), "mean");

  expect_errors_at(in, {
      {"F.mse_loss(a, t, reduction='avg')", "reduction", "must be 'mean', 'sum' or 'none', got 'avg'"},
      {"F.mse_loss(a, t, size_average=True)", "size_average", "is deprecated and not supported"},
      {"F.mse_loss(a, q)", "F", "shapes [3, 4] and [3] cannot be broadcast"},
      {"F.mse_loss(i, i)", "F", "mse_loss needs a floating-point input or target, got int64 and int64"},
  });
}

TEST_F(LossOps, SmoothL1Loss) {
  Tensor a = torch::randn({3, 4}) * 2, t = torch::randn({3, 4});
  NamedTensors in = {{"a", a}, {"t", t}};
  auto expected = [&](double beta) {
    Tensor d = (a - t).abs();
    return torch::where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta);
  };
  check("F.smooth_l1_loss(a, t)", in, expected(1.0).mean());
  check("F.smooth_l1_loss(a, t)", in, torch::smooth_l1_loss(a, t));
  check("F.smooth_l1_loss(a, t, reduction='none', beta=0.5)", in, expected(0.5));
  check("F.smooth_l1_loss(a, t, beta=0.0, reduction='sum')", in, (a - t).abs().sum());
  EXPECT_DOUBLE_EQ(attr_float(lowered("F.smooth_l1_loss(a, t, beta=2)", in), "beta"), 2.0);

  expect_errors_at(in, {
      {"F.smooth_l1_loss(a, t, beta=-1.0)", "beta", "must be non-negative"},
      {"F.smooth_l1_loss(a, t, reduction='batchmean')", "reduction", "got 'batchmean'"},
  });
}

TEST_F(LossOps, KlDiv) {
  Tensor lp = torch::log_softmax(torch::randn({4, 5}), 1), p = torch::softmax(torch::randn({4, 5}), 1);
  NamedTensors in = {{"lp", lp}, {"p", p}, {"lq", p.log()}};
  Tensor pointwise = p * (p.log() - lp);
  check("F.kl_div(lp, p, reduction='batchmean')", in, pointwise.sum() / 4);
  check("F.kl_div(lp, p)", in, pointwise.mean());
  check("F.kl_div(lp, p, reduction='sum')", in, torch::kl_div(lp, p, at::Reduction::Sum));
  check("F.kl_div(lp, p, reduction='none')", in, pointwise);
  check("F.kl_div(lp, lq, reduction='batchmean', log_target=True)", in, pointwise.sum() / 4);
  EXPECT_EQ(attr_str(lowered("F.kl_div(lp, p, reduction='batchmean')", in), "reduction"), "batchmean");

  expect_errors_at(in, {
      {"F.kl_div(lp, p, reduction='max')", "reduction", "must be 'mean', 'sum', 'none' or 'batchmean', got 'max'"},
      {"F.kl_div(lp, p, log_target=1)", "log_target", "must be bool, got int"},
  });
}

TEST_F(LossOps, CrossEntropyWithClassIndices) {
  Tensor x = torch::randn({4, 5}), t = torch::tensor({1, 0, 4, 1}, torch::kInt64), w = torch::rand({5}) + 0.5;
  Tensor x3 = torch::randn({2, 5, 3}), t3 = torch::randint(0, 5, {2, 3}, torch::kInt64);
  Tensor x1 = torch::randn({5}), t0 = torch::tensor(3, torch::kInt64);
  NamedTensors in = {{"x", x}, {"t", t}, {"w", w}, {"x3", x3}, {"t3", t3}, {"x1", x1}, {"t0", t0}};
  Tensor nll = -torch::log_softmax(x, 1).gather(1, t.unsqueeze(1)).squeeze(1);
  check("F.cross_entropy(x, t)", in, nll.mean());
  check("F.cross_entropy(x, t, reduction='none')", in, nll);
  check("F.cross_entropy(x, t, reduction='sum')", in, nll.sum());
  check("F.cross_entropy(x, t, weight=w)", in, (nll * w.index_select(0, t)).sum() / w.index_select(0, t).sum());
  check("F.cross_entropy(x, t, ignore_index=1)", in, torch::cross_entropy_loss(x, t, {}, at::Reduction::Mean, 1));
  check("F.cross_entropy(x, t, ignore_index=1)", in, nll.index_select(0, torch::tensor({1, 2}, torch::kInt64)).mean());
  check("F.cross_entropy(x, t, label_smoothing=0.1)", in,
        torch::cross_entropy_loss(x, t, {}, at::Reduction::Mean, -100, 0.1));
  check("F.cross_entropy(x3, t3, reduction='none')", in, torch::cross_entropy_loss(x3, t3, {}, at::Reduction::None));
  check("F.cross_entropy(x1, t0)", in, -torch::log_softmax(x1, 0)[3]);
  Node n = lowered("F.cross_entropy(x, t)", in);
  EXPECT_EQ(n.op, "cross_entropy");
  EXPECT_EQ(n.inputs[2], -1);
  EXPECT_EQ(attr_int(n, "ignore_index"), -100);
  EXPECT_EQ(attr_str(n, "reduction"), "mean");
  EXPECT_DOUBLE_EQ(attr_float(n, "label_smoothing"), 0.0);
}

TEST_F(LossOps, CrossEntropyWithProbabilities) {
  Tensor x = torch::randn({4, 5}), p = torch::softmax(torch::randn({4, 5}), 1);
  NamedTensors in = {{"x", x}, {"p", p}, {"t", torch::tensor({1, 0, 4, 1}, torch::kInt64)},
                     {"ti", torch::zeros({4, 5}, torch::kInt64)}, {"tf", torch::zeros({4})},
                     {"t3", torch::zeros({3}, torch::kInt64)}, {"w4", torch::ones({4})}};
  check("F.cross_entropy(x, p)", in, -(p * torch::log_softmax(x, 1)).sum(1).mean());
  check("F.cross_entropy(x, p, reduction='none', label_smoothing=0.2)", in,
        torch::cross_entropy_loss(x, p, {}, at::Reduction::None, -100, 0.2));
  Tensor pd = p.to(torch::kFloat64);
  check("F.cross_entropy(x, pd)", {{"x", x}, {"pd", pd}}, -(pd * torch::log_softmax(x.to(torch::kFloat64), 1)).sum(1).mean());

  expect_errors_at(in, {
      {"F.cross_entropy(x, ti)", "ti",
       "has the input's shape, so it holds class probabilities and must be floating-point, got int64"},
      {"F.cross_entropy(x, tf)", "tf",
       "must be int64 class indices of shape [4] or class probabilities of shape [4, 5], got float32[4]"},
      {"F.cross_entropy(x, t3)", "t3", "shape [3] does not match input [4, 5]: class indices need shape [4]"},
      {"F.cross_entropy(x, p, ignore_index=0)", "ignore_index", "not supported with class-probability targets"},
      {"F.cross_entropy(x, t, label_smoothing=1.5)", "label_smoothing", "must be between 0.0 and 1.0"},
      {"F.cross_entropy(x, t, w4)", "w4", "argument 'weight' of cross_entropy: must have shape [5], got [4]"},
      {"F.cross_entropy(x, t, reduce=False)", "reduce", "is deprecated and not supported"},
  });
}

TEST_F(LossOps, PointwiseLosses) {
  Tensor a = torch::randn({3, 4}) * 2, t = torch::randn({3, 4}), r = torch::randn({4});
  Tensor y = torch::randint(0, 2, {3, 4}).to(torch::kFloat32) * 2 - 1;
  NamedTensors in = {{"a", a}, {"t", t}, {"r", r}, {"y", y}};
  check("F.l1_loss(a, t)", in, (a - t).abs().mean());
  check("F.l1_loss(a, r, reduction='sum')", in, (a - r).abs().sum());
  check("F.huber_loss(a, t)", in, torch::huber_loss(a, t));
  check("F.huber_loss(a, t, reduction='none', delta=0.5)", in, torch::huber_loss(a, t, at::Reduction::None, 0.5));
  check("F.soft_margin_loss(a, y)", in, torch::log1p(torch::exp(-y * a)).mean());
  check("F.hinge_embedding_loss(a, y, margin=0.5, reduction='sum')", in,
        torch::hinge_embedding_loss(a, y, 0.5, at::Reduction::Sum));
  EXPECT_DOUBLE_EQ(attr_float(lowered("F.huber_loss(a, t, delta=2)", in), "delta"), 2.0);
  expect_half_precision_matches("F.huber_loss(a, t, reduction='none')", in);
  expect_errors_at(in, {
      {"F.huber_loss(a, t, delta=0.0)", "delta", "huber_loss does not support non-positive values for delta"},
      {"F.l1_loss(a, t, reduction='avg')", "reduction", "must be 'mean', 'sum' or 'none', got 'avg'"},
      {"F.huber_loss(a, t, weight=r)", "weight", "a weighted huber_loss is not supported"},
  });
}

TEST_F(LossOps, NllAndBinaryCrossEntropy) {
  Tensor lp = torch::log_softmax(torch::randn({4, 5}), 1), c = torch::tensor({1, 0, 4, 1}, torch::kInt64);
  Tensor lp3 = torch::log_softmax(torch::randn({2, 5, 3}), 1), c3 = torch::randint(0, 5, {2, 3}, torch::kInt64);
  Tensor p = torch::rand({4, 5}) * 0.9 + 0.05, y = torch::rand({4, 5}), w = torch::rand({5}) + 0.5;
  Tensor logits = torch::randn({4, 5});
  NamedTensors in = {{"lp", lp}, {"c", c}, {"lp3", lp3}, {"c3", c3}, {"p", p}, {"y", y}, {"w", w}, {"logits", logits}};
  check("F.nll_loss(lp, c)", in, -lp.gather(1, c.unsqueeze(1)).mean());
  check("F.nll_loss(lp, c, weight=w, reduction='sum')", in, torch::nll_loss(lp, c, w, at::Reduction::Sum));
  check("F.nll_loss(lp, c, ignore_index=1)", in, torch::nll_loss(lp, c, {}, at::Reduction::Mean, 1));
  check("F.nll_loss(lp3, c3, reduction='none')", in, -lp3.gather(1, c3.unsqueeze(1)).squeeze(1));
  check("F.binary_cross_entropy(p, y)", in, -(y * p.log() + (1 - y) * (1 - p).log()).mean());
  check("F.binary_cross_entropy(p, y, weight=w, reduction='sum')", in,
        (-(y * p.log() + (1 - y) * (1 - p).log()) * w).sum());
  check("F.binary_cross_entropy_with_logits(logits, y)", in, torch::binary_cross_entropy_with_logits(logits, y));
  check("F.binary_cross_entropy_with_logits(logits, y, pos_weight=w, reduction='none')", in,
        torch::binary_cross_entropy_with_logits(logits, y, {}, w, at::Reduction::None));
  expect_errors_at(in, {
      {"F.nll_loss(lp, y)", "y", "must be int64 class indices of shape [4], got float32[4, 5]"},
      {"F.nll_loss(lp, c, w[:4])", "w", "must have shape [5], got [4]"},
      {"F.binary_cross_entropy(p, y[0])", "y[0]", "size [5] must be the same as the input size [4, 5]"},
      {"F.binary_cross_entropy_with_logits(logits, y, pos_weight=c)", "pos_weight", "must have the input's dtype float32, got int64"},
  });
}

TEST_F(LossOps, MarginAndEmbeddingLosses) {
  Tensor x1 = torch::randn({6}), x2 = torch::randn({6}), s = torch::randint(0, 2, {6}).to(torch::kFloat32) * 2 - 1;
  Tensor e1 = torch::randn({6, 8}), e2 = torch::randn({6, 8});
  NamedTensors in = {{"x1", x1}, {"x2", x2}, {"s", s}, {"e1", e1}, {"e2", e2}, {"m", torch::randn({6, 1})}};
  check("F.margin_ranking_loss(x1, x2, s)", in, torch::clamp_min(-s * (x1 - x2), 0).mean());
  check("F.margin_ranking_loss(x1, x2, s, margin=0.5, reduction='none')", in, torch::clamp_min(-s * (x1 - x2) + 0.5, 0));
  check("F.cosine_embedding_loss(e1, e2, s)", in, torch::cosine_embedding_loss(e1, e2, s));
  check("F.cosine_embedding_loss(e1, e2, s, margin=0.2, reduction='none')", in,
        torch::cosine_embedding_loss(e1, e2, s, 0.2, at::Reduction::None));
  check("F.pairwise_distance(e1, e2)", in, (e1 - e2 + 1e-6).norm(2, 1));
  check("F.pairwise_distance(e1, e2, p=1.0, keepdim=True)", in, torch::pairwise_distance(e1, e2, 1.0, 1e-6, true));
  check("F.cosine_similarity(e1, e2)", in, torch::cosine_similarity(e1, e2, 1, 1e-8));
  check("torch.cosine_similarity(e1, e2[0], dim=-1)", in, torch::cosine_similarity(e1, e2[0], -1, 1e-8));
  expect_errors_at(in, {
      {"F.margin_ranking_loss(x1, e2, s)", "F", "all input tensors should have the same number of dimensions"},
      {"F.cosine_embedding_loss(e1, e2, m)", "m)", "must have shape [6] for inputs [6, 8], got [6, 1]"},
  });
}

// KernelBench level 1, 99: nn.TripletMarginLoss(margin=1.0), written F.triplet_margin_loss.
TEST_F(LossOps, TripletMarginLoss) {
  Tensor a = torch::randn({8, 16}), p = torch::randn({8, 16}), n = torch::randn({8, 16});
  NamedTensors in = {{"a", a}, {"p", p}, {"n", n}, {"v", torch::randn({16})}};
  auto d = [](const Tensor& x, const Tensor& y, double q) { return (x - y + 1e-6).norm(q, -1); };
  check("F.triplet_margin_loss(a, p, n)", in, torch::clamp_min(d(a, p, 2) - d(a, n, 2) + 1.0, 0).mean());
  check("F.triplet_margin_loss(a, p, n, margin=0.5, p=1, reduction='none')", in,
        torch::clamp_min(d(a, p, 1) - d(a, n, 1) + 0.5, 0));
  check("F.triplet_margin_loss(anchor=a, positive=p, negative=n, swap=True, eps=1e-3, reduction='sum')", in,
        torch::triplet_margin_loss(a, p, n, 1.0, 2, 1e-3, true, at::Reduction::Sum));
  expect_half_precision_matches("F.triplet_margin_loss(a, p, n, reduction='none')", in, 2e-2, 1e-1);
  expect_errors_at(in, {
      {"F.triplet_margin_loss(a, p, v)", "F",
       "the anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: "
       "anchor 2D, positive 2D, and negative 1D inputs"},
      {"F.triplet_margin_loss(a, p, n, margin=0.0)", "margin=", "must be greater than 0"},
  });
}

}  // namespace
}  // namespace kevo
