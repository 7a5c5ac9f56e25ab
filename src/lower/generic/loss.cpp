// The generic family's losses: a pointwise loss (a map over the broadcast operands) reduced by
// the contract's reduction ('none', 'mean', 'sum', 'batchmean'); cross-entropy over class indices
// and the triplet margin loss through their row statistics.
#include "lower/generic/ops.h"

namespace kevo::lower::generic {

namespace {

// The pointwise loss `pw` reduced as `reduction` says into graph value out's shape.
int reduce_loss(ProgramBuilder& b, const Node& n, const std::string& what, int pw) {
  const std::string r = str_or(n, "reduction", "mean");
  if (r == "none") return pw;
  const Value& v = b.value(pw);
  std::vector<int64_t> dims;
  std::vector<std::string> extents;
  for (int d = 0; d < v.rank(); ++d) dims.push_back(d), extents.push_back(v.dims[static_cast<size_t>(d)]);
  Finish fin = plain();
  if (r == "mean") fin = mean_of(extents);
  if (r == "batchmean") fin = mean_of({v.rank() ? v.dims[0] : "1"});
  const int out = reduce_over(b, what, pw, dims, false, "GSum", "$", fin);
  return out;
}

// mse, l1, smooth-l1, huber, kl_div, soft-margin and hinge-embedding: a map over the operands.
std::vector<int> pointwise_loss(ProgramBuilder& b, const Node& n, const std::string& what) {
  const std::string& op = n.op;
  const int x = b.of(n.inputs[0]), t = b.of(n.inputs[1]);
  // The broadcast shape of two operands: the one of higher rank.
  Value shape = b.value(x).rank() >= b.value(t).rank() ? b.value(x) : b.value(t);
  shape.dtype = DType::Float32;
  const double beta = attr_float_or(n, op == "huber_loss" ? "delta" : "beta", 1.0), margin = attr_float_or(n, "margin", 1.0);
  const bool log_target = bool_or(n, "log_target", false);
  const int pw = elementwise_map(b, shape, what + " (pointwise)", {x, t}, [=](Code& c, const std::vector<std::string>& a, const std::string&) {
    const std::string d = c.fresh("d");
    c.line("const float " + d + " = " + a[0] + " - " + a[1] + ";");
    const std::string bl = float_literal(beta);
    if (op == "mse_loss") return d + " * " + d;
    if (op == "l1_loss") return "fabsf(" + d + ")";
    if (op == "smooth_l1_loss")
      return "(fabsf(" + d + ") < " + bl + " ? 0.5f * " + d + " * " + d + " / " + bl + " : fabsf(" + d + ") - 0.5f * " + bl + ")";
    if (op == "huber_loss")
      return "(fabsf(" + d + ") < " + bl + " ? 0.5f * " + d + " * " + d + " : " + bl + " * (fabsf(" + d + ") - 0.5f * " + bl + "))";
    if (op == "soft_margin_loss") return "log1pf(expf(-" + a[1] + " * " + a[0] + "))";
    if (op == "hinge_embedding_loss")
      return "(" + a[1] + " == 1.f ? " + a[0] + " : 0.f) + (" + a[1] + " == -1.f ? fmaxf(0.f, " + float_literal(margin) + " - " + a[0] + ") : 0.f)";
    // kl_div(input = log q, target)
    if (log_target) return "expf(" + a[1] + ") * (" + a[1] + " - " + a[0] + ")";
    return "(" + a[1] + " > 0.f ? " + a[1] + " * (logf(" + a[1] + ") - " + a[0] + ") : 0.f)";
  });
  return {reduce_loss(b, n, what, pw)};
}

// Cross-entropy (log_softmax over the classes, then the target's) and nll over class indices.
std::vector<int> class_loss(ProgramBuilder& b, const Node& n, const std::string& what) {
  const std::string& op = n.op;
  const int x = b.of(n.inputs[0]), t = b.of(n.inputs[1]);
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) throw std::runtime_error("class weights are not lowered by the generic family yet");
  if (attr_float_or(n, "label_smoothing", 0.0) != 0.0) throw std::runtime_error("label smoothing is not lowered by the generic family yet");
  if (b.value(t).rank() == b.value(x).rank()) throw std::runtime_error("probability targets are not lowered by the generic family yet");
  const int cdim = b.value(x).rank() == 1 ? 0 : 1;
  const int64_t ignore = static_cast<int64_t>(attr_float_or(n, "ignore_index", -100));
  int m = -1, s = -1;
  if (op == "cross_entropy") std::tie(m, s) = softmax_stats(b, what, x, {cdim});
  Value shape = b.value(t);
  shape.dtype = DType::Float32;
  Value pw = shape;
  pw.what = what + " (per sample)";
  pw.kind = Kind::Map;
  pw.operands = {x, t};
  if (m >= 0) pw.operands.push_back(m), pw.operands.push_back(s);
  const int xr = b.value(x).rank();
  pw.map = [=](Code& c, const std::string& i) {
    const std::string cls = c.fresh("cls");
    c.line("const Idx " + cls + " = (Idx)" + c.read(t, i) + ";");
    std::vector<std::string> xi, si;
    int od = 0;
    for (int d = 0; d < xr; ++d) {
      xi.push_back(d == cdim ? cls + " == " + std::to_string(ignore) + " ? (Idx)0 : " + cls : at(i, od));
      si.push_back(d == cdim ? "0" : at(i, od));
      if (d != cdim) ++od;
    }
    std::string logp = c.read(x, c.index(xi));
    if (m >= 0) {
      const std::string sj = c.index(si);
      logp = logp + " - " + c.read(m, sj) + " - logf(" + c.read(s, sj) + ")";
    }
    return "(" + cls + " == " + std::to_string(ignore) + " ? 0.f : -(" + logp + "))";
  };
  const int per = b.add(std::move(pw));
  const std::string r = str_or(n, "reduction", "mean");
  if (r == "mean" && ignore >= 0) throw std::runtime_error("a mean over targets with an ignore_index is not lowered yet");
  return {reduce_loss(b, n, what, per)};
}

// The triplet margin loss: the p-norm distances of the anchor to the positive and the negative.
std::vector<int> triplet_loss(ProgramBuilder& b, const Node& n, const std::string& what) {
  if (bool_or(n, "swap", false)) throw std::runtime_error("the triplet loss's swap is not lowered by the generic family yet");
  const int a = b.of(n.inputs[0]), pos = b.of(n.inputs[1]), neg = b.of(n.inputs[2]);
  const double p = attr_float_or(n, "p", 2.0), eps = attr_float_or(n, "eps", 1e-6), margin = attr_float_or(n, "margin", 1.0);
  const NormParts parts = p_norm(p);
  auto distance = [&](int other, const std::string& name) {
    const int diff = elementwise_map(b, b.value(a), what + " " + name + " difference", {a, other},
                                     [eps, parts](Code&, const std::vector<std::string>& v, const std::string&) {
                                       std::string e = parts.transform, d = "(" + v[0] + " - " + v[1] + " + " + float_literal(eps) + ")";
                                       for (size_t at = e.find('$'); at != std::string::npos; at = e.find('$', at + d.size())) e.replace(at, 1, d);
                                       return e;
                                     });
    const int r = b.value(a).rank();
    const std::string fin = parts.finish;
    return reduce_over(b, what + " " + name, diff, {r - 1}, false, "G" + parts.combine, "$",
                       [fin](Code&, const std::string&, const std::string& acc, const std::string&) {
                         if (fin == "s") return acc;
                         std::string e = fin;
                         e.replace(e.find("(s") + 1, 1, acc);
                         return e;
                       });
  };
  const int dp = distance(pos, "d(anchor, positive)"), dn = distance(neg, "d(anchor, negative)");
  const int pw = elementwise_map(b, b.value(dp), what + " (per sample)", {dp, dn}, [margin](Code&, const std::vector<std::string>& v, const std::string&) {
    return "fmaxf(" + v[0] + " - " + v[1] + " + " + float_literal(margin) + ", 0.f)";
  });
  return {reduce_loss(b, n, what, pw)};
}

}  // namespace

std::vector<int> lower_loss_op(ProgramBuilder& b, const Node& n, const std::string& what) {
  const std::string& op = n.op;
  if (op == "mse_loss" || op == "l1_loss" || op == "smooth_l1_loss" || op == "huber_loss" || op == "kl_div" ||
      op == "soft_margin_loss" || op == "hinge_embedding_loss")
    return pointwise_loss(b, n, what);
  if (op == "cross_entropy" || op == "nll_loss") return class_loss(b, n, what);
  if (op == "triplet_margin_loss") return triplet_loss(b, n, what);
  return {};
}

}  // namespace kevo::lower::generic
