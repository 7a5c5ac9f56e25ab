// Op family 'loss': the losses of torch.nn.functional and the distances they are built on.
#include <string>
#include <vector>

#include "core/nn_args.h"
#include "core/op_families.h"

namespace kevo {

namespace {

using namespace nn;  // the shared argument checks of nn_args.h

// Losses of input and target elementwise (broadcast and type-promoted as torch does), then reduced.
Value lower_pointwise_loss(Lowering& L, const Args& a, const std::string& op, std::map<std::string, AttrValue> attrs,
                           bool batchmean = false) {
  int x = a.tensor("input"), y = a.tensor("target");
  DType dtype = promote_types(L.dtype(x), L.dtype(y));
  if (!is_floating(dtype))
    L.fail(op + " needs a floating-point input or target, got " + dtype_name(L.dtype(x)) + " and " +
           dtype_name(L.dtype(y)));
  std::string r = reduction_arg(a, batchmean);
  Shape s = broadcast_shapes(L, L.shape(x), L.shape(y));
  attrs["reduction"] = r;
  return out(L.emit1(op, {x, y}, std::move(attrs), dtype, r == "none" ? s : Shape{}));
}

Value lower_smooth_l1_loss(Lowering& L, const Args& a) {
  double beta = a.number("beta");
  if (beta < 0) a.fail("beta", "must be non-negative, got " + std::to_string(beta));
  return lower_pointwise_loss(L, a, "smooth_l1_loss", {{"beta", beta}});
}

// A target of int64 class indices for an input [C], [N, C] or [N, C, d1, ...]: `rest` is the
// input's shape without the class dim; `alternative` says what else the target could have been.
void class_index_target(const Lowering& L, const Args& a, int t, const Shape& xs, const Shape& rest,
                        const std::string& alternative) {
  const Shape& ts = L.shape(t);
  if (L.dtype(t) != DType::Int64)
    a.fail("target", "must be int64 class indices of shape " + shape_string(rest) + alternative + ", got " +
                         dtype_name(L.dtype(t)) + shape_string(ts));
  if (ts != rest)
    a.fail("target", "shape " + shape_string(ts) + " does not match input " + shape_string(xs) +
                         ": class indices need shape " + shape_string(rest));
}

// The target holds class indices (int64, input's shape without the class dim) or, when it has
// the input's shape, class probabilities: torch decides by shape alone.
Value lower_cross_entropy(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), t = a.tensor("target");
  std::string r = reduction_arg(a, false);
  const Shape &xs = L.shape(x), &ts = L.shape(t);
  if (xs.empty()) a.fail("input", "must have shape [C], [N, C] or [N, C, d1, ...], got a scalar");
  size_t cdim = xs.size() == 1 ? 0 : 1;
  Shape rest = xs;
  rest.erase(rest.begin() + cdim);
  int64_t ignore_index = a.integer("ignore_index");
  double smoothing = a.number("label_smoothing");
  if (smoothing < 0.0 || smoothing > 1.0)
    a.fail("label_smoothing", "must be between 0.0 and 1.0, got " + std::to_string(smoothing));
  DType dtype = L.dtype(x);
  if (ts == xs) {
    if (!is_floating(L.dtype(t)))
      a.fail("target", "has the input's shape, so it holds class probabilities and must be floating-point, got " +
                           dtype_name(L.dtype(t)));
    dtype = promote_types(dtype, L.dtype(t));
    if (ignore_index >= 0) a.fail("ignore_index", "is not supported with class-probability targets");
  } else {
    class_index_target(L, a, t, xs, rest, " or class probabilities of shape " + shape_string(xs));
  }
  int w = affine(L, a, "weight", x, {xs[cdim]});
  return out(L.emit1("cross_entropy", {x, t, w},
                     {{"ignore_index", ignore_index}, {"reduction", r}, {"label_smoothing", smoothing}}, dtype,
                     r == "none" ? rest : Shape{}));
}

Value lower_nll_loss(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), t = a.tensor("target");
  std::string r = reduction_arg(a);
  const Shape& xs = L.shape(x);
  if (xs.empty()) a.fail("input", "must have shape [C], [N, C] or [N, C, d1, ...], got a scalar");
  size_t cdim = xs.size() == 1 ? 0 : 1;
  Shape rest = xs;
  rest.erase(rest.begin() + cdim);
  class_index_target(L, a, t, xs, rest, "");
  int w = affine(L, a, "weight", x, {xs[cdim]});
  return out(L.emit1("nll_loss", {x, t, w}, {{"ignore_index", a.integer("ignore_index")}, {"reduction", r}}, L.dtype(x),
                     r == "none" ? rest : Shape{}));
}

// Binary cross-entropy: target of the input's own shape (torch refuses any other); the optional
// weight and pos_weight broadcast to it.
Value lower_bce(Lowering& L, const Args& a, bool logits) {
  const std::string op = logits ? "binary_cross_entropy_with_logits" : "binary_cross_entropy";
  int x = float_tensor(L, a, "input"), t = typed(L, a, "target", x);
  std::string r = reduction_arg(a);
  const Shape& xs = L.shape(x);
  if (L.shape(t) != xs)
    a.fail("target", "size " + shape_string(L.shape(t)) + " must be the same as the input size " + shape_string(xs));
  std::vector<int> operands = {x, t, typed(L, a, "weight", x, true)};
  if (logits) operands.push_back(typed(L, a, "pos_weight", x, true));
  const char* names[] = {"input", "target", "weight", "pos_weight"};
  for (size_t k = 2; k < operands.size(); ++k)
    if (operands[k] >= 0 && !broadcasts_to(L.shape(operands[k]), xs))
      a.fail(names[k],
             "shape " + shape_string(L.shape(operands[k])) + " does not broadcast to the input " + shape_string(xs));
  return out(L.emit1(op, operands, {{"reduction", r}}, L.dtype(x), r == "none" ? xs : Shape{}));
}

// Losses of two inputs and a ±1 target (margin_ranking, cosine_embedding): every operand shares
// one rank, as torch.nn.functional checks.
void same_rank(const Lowering& L, const Args& a, const std::string& op, const std::vector<std::string>& names) {
  std::string sizes;
  bool differ = false;
  for (const std::string& n : names) {
    sizes += (sizes.empty() ? "" : ", ") + n + ": " + shape_string(L.shape(a.tensor(n)));
    differ |= L.rank(a.tensor(n)) != L.rank(a.tensor(names[0]));
  }
  if (differ) L.fail(op + ": all input tensors should have the same number of dimensions, got sizes " + sizes);
}

DType promoted(Lowering& L, const std::string& op, const std::vector<int>& xs) {
  DType t = L.dtype(xs[0]);
  for (int x : xs) t = promote_types(t, L.dtype(x));
  if (!is_floating(t)) L.fail(op + " needs floating-point inputs, got " + dtype_name(t));
  return t;
}

Value lower_margin_ranking(Lowering& L, const Args& a) {
  same_rank(L, a, "margin_ranking_loss", {"input1", "input2", "target"});
  int x1 = a.tensor("input1"), x2 = a.tensor("input2"), t = a.tensor("target");
  std::string r = reduction_arg(a);
  Shape s = broadcast_shapes(L, broadcast_shapes(L, L.shape(x1), L.shape(x2)), L.shape(t));
  return out(L.emit1("margin_ranking_loss", {x1, x2, t}, {{"margin", a.number("margin")}, {"reduction", r}},
                     promoted(L, "margin_ranking_loss", {x1, x2, t}), r == "none" ? s : Shape{}));
}

// cosine_embedding_loss: inputs [N, D] with a target [N], or [D] with a scalar target.
Value lower_cosine_embedding(Lowering& L, const Args& a) {
  int x1 = float_tensor(L, a, "input1"), x2 = typed(L, a, "input2", x1), t = a.tensor("target");
  std::string r = reduction_arg(a);
  const Shape &s1 = L.shape(x1), &s2 = L.shape(x2);
  if (s1 != s2) a.fail("input2", "shape " + shape_string(s2) + " differs from input1's " + shape_string(s1));
  if (s1.size() != 1 && s1.size() != 2) a.fail("input1", "must be [N, D] or [D], got shape " + shape_string(s1));
  Shape rest(s1.begin(), s1.end() - 1);
  if (L.shape(t) != rest)
    a.fail("target", "must have shape " + shape_string(rest) + " for inputs " + shape_string(s1) + ", got " +
                         shape_string(L.shape(t)));
  return out(L.emit1("cosine_embedding_loss", {x1, x2, t}, {{"margin", a.number("margin")}, {"reduction", r}},
                     promoted(L, "cosine_embedding_loss", {x1, x2, t}), r == "none" ? rest : Shape{}));
}

// The norm of x1 - x2 + eps over the last dim of their broadcast shape.
Shape distance_shape(Lowering& L, int x1, int x2, bool keepdim) {
  Shape s = broadcast_shapes(L, L.shape(x1), L.shape(x2));
  if (s.empty()) L.fail("pairwise_distance needs inputs of at least one dim");
  if (keepdim)
    s.back() = 1;
  else
    s.pop_back();
  return s;
}

Value lower_pairwise_distance(Lowering& L, const Args& a) {
  int x1 = float_tensor(L, a, "x1"), x2 = typed(L, a, "x2", x1);
  bool keepdim = a.boolean("keepdim");
  return out(L.emit1("pairwise_distance", {x1, x2},
                     {{"p", a.number("p")}, {"eps", a.number("eps")}, {"keepdim", keepdim}}, L.dtype(x1),
                     distance_shape(L, x1, x2, keepdim)));
}

Value lower_cosine_similarity(Lowering& L, const Args& a) {
  int x1 = float_tensor(L, a, "x1"), x2 = typed(L, a, "x2", x1);
  Shape s = broadcast_shapes(L, L.shape(x1), L.shape(x2));
  int64_t dim = normalize_dim(L, a.integer("dim"), static_cast<int64_t>(s.size()), a.pos("dim"));
  if (!s.empty()) s.erase(s.begin() + dim);
  return out(L.emit1("cosine_similarity", {x1, x2}, {{"dim", dim}, {"eps", a.number("eps")}}, L.dtype(x1), s));
}

// max(d(a, p) - d(a, n) + margin, 0) with d the pairwise distance (swap: the smaller of d(a, n)
// and d(p, n)); inputs of one rank, as F.triplet_margin_loss checks.
Value lower_triplet_margin(Lowering& L, const Args& a) {
  int an = float_tensor(L, a, "anchor"), pos = typed(L, a, "positive", an), neg = typed(L, a, "negative", an);
  if (L.rank(an) != L.rank(pos) || L.rank(an) != L.rank(neg))
    L.fail(
        "the anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: "
        "anchor " +
        str(L.rank(an)) + "D, positive " + str(L.rank(pos)) + "D, and negative " + str(L.rank(neg)) + "D inputs");
  std::string r = reduction_arg(a);
  double margin = a.number("margin"), p = a.number("p");
  if (margin <= 0) a.fail("margin", "must be greater than 0, got " + std::to_string(margin));
  Shape s = distance_shape(L, an, pos, false);
  Shape s2 = distance_shape(L, an, neg, false);
  s = broadcast_shapes(L, s, s2);
  return out(
      L.emit1("triplet_margin_loss", {an, pos, neg},
              {{"margin", margin}, {"p", p}, {"eps", a.number("eps")}, {"swap", a.boolean("swap")}, {"reduction", r}},
              L.dtype(an), r == "none" ? s : Shape{}));
}

}  // namespace

void register_loss_ops(OpTable& t) {
  const std::string F = "torch.nn.functional.";
  const std::string legacy = "input, target, size_average=None, reduce=None, reduction='mean'";
  t.add({F + "mse_loss"}, legacy,
        [](Lowering& L, const Args& a) { return lower_pointwise_loss(L, a, "mse_loss", {}); });
  t.add({F + "l1_loss"}, legacy, [](Lowering& L, const Args& a) { return lower_pointwise_loss(L, a, "l1_loss", {}); });
  t.add({F + "soft_margin_loss"}, legacy,
        [](Lowering& L, const Args& a) { return lower_pointwise_loss(L, a, "soft_margin_loss", {}); });
  t.add({F + "smooth_l1_loss"}, legacy + ", beta=1.0", lower_smooth_l1_loss);
  t.add({F + "huber_loss"}, "input, target, reduction='mean', delta=1.0, weight=None", [](Lowering& L, const Args& a) {
    double delta = a.number("delta");
    if (delta <= 0)
      a.fail("delta", "huber_loss does not support non-positive values for delta, got " + std::to_string(delta));
    if (!a.is_none("weight")) a.fail("weight", "a weighted huber_loss is not supported");
    return lower_pointwise_loss(L, a, "huber_loss", {{"delta", delta}});
  });
  t.add({F + "hinge_embedding_loss"}, "input, target, margin=1.0, size_average=None, reduce=None, reduction='mean'",
        [](Lowering& L, const Args& a) {
          return lower_pointwise_loss(L, a, "hinge_embedding_loss", {{"margin", a.number("margin")}});
        });
  t.add({F + "kl_div"}, legacy + ", log_target=False", [](Lowering& L, const Args& a) {
    return lower_pointwise_loss(L, a, "kl_div", {{"log_target", a.boolean("log_target")}}, /*batchmean=*/true);
  });
  t.add({F + "cross_entropy"},
        "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', "
        "label_smoothing=0.0",
        lower_cross_entropy);
  t.add({F + "nll_loss"},
        "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean'",
        lower_nll_loss);
  t.add({F + "binary_cross_entropy"}, "input, target, weight=None, size_average=None, reduce=None, reduction='mean'",
        [](Lowering& L, const Args& a) { return lower_bce(L, a, false); });
  t.add({F + "binary_cross_entropy_with_logits"},
        "input, target, weight=None, size_average=None, reduce=None, reduction='mean', pos_weight=None",
        [](Lowering& L, const Args& a) { return lower_bce(L, a, true); });
  const std::string pair = "input1, input2, target, margin=0, size_average=None, reduce=None, reduction='mean'";
  t.add({F + "margin_ranking_loss"}, pair, lower_margin_ranking);
  t.add({F + "cosine_embedding_loss"}, pair, lower_cosine_embedding);
  t.add({F + "triplet_margin_loss"},
        "anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, size_average=None, reduce=None, "
        "reduction='mean'",
        lower_triplet_margin);
  t.add({F + "pairwise_distance", "torch.pairwise_distance"}, "x1, x2, p=2.0, eps=1e-06, keepdim=False",
        lower_pairwise_distance);
  t.add({F + "cosine_similarity", "torch.cosine_similarity"}, "x1, x2, dim=1, eps=1e-08", lower_cosine_similarity);
}

}  // namespace kevo
