// Op family 'matmul': matmul, mm, bmm, linear, einsum and scaled_dot_product_attention.
#include <algorithm>
#include <cctype>
#include <map>

#include "core/nn_args.h"
#include "core/op_families.h"

namespace kevo {

namespace {

using namespace nn;  // the shared argument checks of nn_args.h

// torch.matmul's rules: 1-D operands gain a dim that is removed again, batch dims broadcast.
Shape matmul_shape(const Lowering& L, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty())
    L.fail("both arguments to matmul need to be at least 1-D, got shapes " + shape_string(a) + " and " +
           shape_string(b));
  int64_t ka = a.back(), kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  if (ka != kb)
    L.fail("shapes " + shape_string(a) + " and " + shape_string(b) + " cannot be multiplied (" + str(ka) +
           " != " + str(kb) + ")");
  Shape batch_a(a.begin(), a.end() - std::min<size_t>(a.size(), 2));
  Shape batch_b(b.begin(), b.end() - std::min<size_t>(b.size(), 2));
  Shape s = broadcast_shapes(L, batch_a, batch_b);
  if (a.size() >= 2) s.push_back(a[a.size() - 2]);
  if (b.size() >= 2) s.push_back(b.back());
  return s;
}

Value lower_matmul(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), y = typed(L, a, "other", x);
  return out(L.emit1("matmul", {x, y}, {}, L.dtype(x), matmul_shape(L, L.shape(x), L.shape(y))));
}

Value lower_mm(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), y = typed(L, a, "mat2", x);
  require_rank(L, a, "input", x, 2, "a matrix");
  require_rank(L, a, "mat2", y, 2, "a matrix");
  return out(L.emit1("matmul", {x, y}, {}, L.dtype(x), matmul_shape(L, L.shape(x), L.shape(y))));
}

Value lower_bmm(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), y = typed(L, a, "mat2", x);
  require_rank(L, a, "input", x, 3, "a 3-D batch of matrices");
  require_rank(L, a, "mat2", y, 3, "a 3-D batch of matrices");
  const Shape &xs = L.shape(x), &ys = L.shape(y);
  if (xs[0] != ys[0])
    L.fail("bmm batch sizes differ: " + shape_string(xs) + " and " + shape_string(ys) + " (bmm does not broadcast)");
  return out(L.emit1("bmm", {x, y}, {}, L.dtype(x), matmul_shape(L, xs, ys)));
}

Value lower_linear(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), w = typed(L, a, "weight", x), b = typed(L, a, "bias", x, true);
  const Shape &xs = L.shape(x), &ws = L.shape(w);
  if (xs.empty()) a.fail("input", "must have at least one dim, got a scalar");
  if (ws.size() != 1 && ws.size() != 2)
    a.fail("weight", "must be [out_features, in_features] (or 1-D [in_features]), got shape " + shape_string(ws));
  if (xs.back() != ws.back())
    L.fail("linear: input " + shape_string(xs) + " has " + str(xs.back()) + " features but weight " + shape_string(ws) +
           " expects " + str(ws.back()));
  Shape s(xs.begin(), xs.end() - 1);
  if (ws.size() == 2) s.push_back(ws[0]);
  if (b >= 0 && !broadcasts_to(L.shape(b), s))
    a.fail("bias", "shape " + shape_string(L.shape(b)) + " does not broadcast to the output shape " + shape_string(s));
  return out(L.emit1("linear", {x, w, b}, {}, L.dtype(x), s));
}

// --- einsum ----------------------------------------------------------------------------------

// One operand of an einsum equation: its labels, with '.' standing for the ellipsis' dims.
struct EinsumTerm {
  std::string labels;
  bool ellipsis = false;
};

EinsumTerm einsum_term(const Args& a, const std::string& text) {
  EinsumTerm t;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      t.labels += c;
    } else if (text.compare(i, 3, "...") == 0 && !t.ellipsis) {
      t.ellipsis = true;
      t.labels += '.';
      i += 2;
    } else {
      a.fail("equation", std::string("einsum(): invalid subscript '") + c + "' in '" + text +
                             "' (subscripts are letters, with at most one '...')");
    }
  }
  return t;
}

// torch.einsum's shape rules: a label has one size (1 broadcasts), the ellipsis dims broadcast,
// and without '->' the output is the ellipsis then every label used once, in ASCII order.
Value lower_einsum(Lowering& L, const Args& a) {
  std::string eq;
  for (char c : a.str("equation"))
    if (c != ' ') eq += c;
  const Value& ops = a.get("operands");
  std::vector<int> xs;
  for (const Value& v : ops.items) {
    if (v.kind != Value::Kind::Tensor) a.fail("operands", "must be tensors, got " + v.type_name());
    xs.push_back(v.tensor);
  }
  if (xs.empty()) a.fail("operands", "einsum(): must provide at least one operand");
  for (int x : xs) {
    if (!is_floating(L.dtype(x))) a.fail("operands", "must be floating-point tensors, got " + dtype_name(L.dtype(x)));
    if (L.dtype(x) != L.dtype(xs[0]))
      a.fail("operands", "must share one dtype, got " + dtype_name(L.dtype(xs[0])) + " and " + dtype_name(L.dtype(x)));
  }
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<EinsumTerm> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(einsum_term(a, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != xs.size())
    a.fail("equation", "einsum(): " + str(static_cast<int64_t>(xs.size())) +
                           " operands were provided but the equation '" + eq + "' names " +
                           str(static_cast<int64_t>(terms.size())));
  std::map<char, int64_t> size;
  std::map<char, int> uses;
  Shape ellipsis;
  for (size_t k = 0; k < xs.size(); ++k) {
    const Shape& s = L.shape(xs[k]);
    const EinsumTerm& t = terms[k];
    int64_t named = static_cast<int64_t>(t.labels.size()) - t.ellipsis, rank = static_cast<int64_t>(s.size());
    if (t.ellipsis ? named > rank : named != rank)
      a.fail("equation", "einsum(): the subscripts of operand " + str(static_cast<int64_t>(k)) + " ('" + t.labels +
                             "') do not fit its shape " + shape_string(s));
    int64_t d = 0;
    for (char c : t.labels) {
      if (c == '.') {
        Shape part(s.begin() + d, s.begin() + d + (rank - named));
        ellipsis = broadcast_shapes(L, ellipsis, part);
        d += rank - named;
        continue;
      }
      ++uses[c];
      int64_t n = s[d++];
      auto it = size.find(c);
      if (it == size.end() || it->second == 1)
        size[c] = n;
      else if (n != 1 && n != it->second)
        a.fail("equation", std::string("einsum(): subscript ") + c + " has size " + str(n) + " for operand " +
                               str(static_cast<int64_t>(k)) + " which does not broadcast with previously seen size " +
                               str(it->second));
    }
  }
  std::string rhs;
  if (arrow != std::string::npos) {
    EinsumTerm t = einsum_term(a, eq.substr(arrow + 2));
    for (char c : t.labels) {
      if (c != '.' && !size.count(c))
        a.fail("equation", std::string("einsum(): output subscript ") + c +
                               " does not appear in the equation for any input operand");
      if (std::count(t.labels.begin(), t.labels.end(), c) > 1)
        a.fail("equation", std::string("einsum(): output subscript ") + c + " appears more than once in the output");
    }
    rhs = t.labels;
  } else {
    rhs = ".";
    for (const auto& [c, n] : uses)
      if (n == 1) rhs += c;
  }
  Shape s;
  for (char c : rhs) {
    if (c == '.')
      s.insert(s.end(), ellipsis.begin(), ellipsis.end());
    else
      s.push_back(size[c]);
  }
  return out(L.emit1("einsum", xs, {{"equation", eq}}, L.dtype(xs[0]), s));
}

// --- attention -------------------------------------------------------------------------------

// softmax(q k^T * scale + mask) v over the last two dims; batch dims broadcast as in matmul.
Value lower_attention(Lowering& L, const Args& a) {
  int q = float_tensor(L, a, "query"), k = typed(L, a, "key", q), v = typed(L, a, "value", q);
  for (const char* name : {"query", "key", "value"})
    if (L.rank(a.tensor(name)) < 2)
      a.fail(name, "must have at least 2 dims [..., L, E], got shape " + shape_string(L.shape(a.tensor(name))));
  const Shape &qs = L.shape(q), &ks = L.shape(k), &vs = L.shape(v);
  if (ks.back() != qs.back())
    a.fail("key", "has embedding size " + str(ks.back()) + " but query " + shape_string(qs) + " has " + str(qs.back()));
  if (vs[vs.size() - 2] != ks[ks.size() - 2])
    a.fail("value", "has " + str(vs[vs.size() - 2]) + " positions but key " + shape_string(ks) + " has " +
                        str(ks[ks.size() - 2]));
  double p = a.number("dropout_p");
  if (p != 0.0)
    a.fail("dropout_p", "dropout makes the reference's output random, so it cannot be checked: pass dropout_p=0.0");
  if (a.has("enable_gqa") && a.boolean("enable_gqa")) a.fail("enable_gqa", "enable_gqa=True is not supported");
  bool causal = a.boolean("is_causal");
  int mask = a.opt_tensor("attn_mask");
  int64_t Lq = qs[qs.size() - 2], S = ks[ks.size() - 2];
  Shape batch =
      broadcast_shapes(L, broadcast_shapes(L, Shape(qs.begin(), qs.end() - 2), Shape(ks.begin(), ks.end() - 2)),
                       Shape(vs.begin(), vs.end() - 2));
  if (mask >= 0) {
    if (causal) a.fail("attn_mask", "an explicit attn_mask should not be set when is_causal=True");
    if (L.dtype(mask) != DType::Bool && L.dtype(mask) != L.dtype(q))
      a.fail("attn_mask",
             "must be bool or have the query's dtype " + dtype_name(L.dtype(q)) + ", got " + dtype_name(L.dtype(mask)));
    Shape scores = batch;
    scores.push_back(Lq);
    scores.push_back(S);
    if (!broadcasts_to(L.shape(mask), scores))
      a.fail("attn_mask", "shape " + shape_string(L.shape(mask)) + " does not broadcast to the scores' shape " +
                              shape_string(scores));
  }
  AttrValue scale;
  if (!a.is_none("scale")) scale = a.number("scale");
  Shape s = batch;
  s.push_back(Lq);
  s.push_back(vs.back());
  return out(L.emit1("scaled_dot_product_attention", {q, k, v, mask}, {{"is_causal", causal}, {"scale", scale}},
                     L.dtype(q), s));
}

}  // namespace

void register_matmul_ops(OpTable& t) {
  t.add({"torch.matmul", "Tensor.matmul"}, "input, other", lower_matmul);
  t.add({"torch.mm", "Tensor.mm"}, "input, mat2", lower_mm);
  t.add({"torch.bmm", "Tensor.bmm"}, "input, mat2", lower_bmm);
  t.add({"torch.nn.functional.linear"}, "input, weight, bias=None", lower_linear);
  t.add({"torch.einsum"}, "equation, *operands", lower_einsum);
  t.add({"torch.nn.functional.scaled_dot_product_attention"},
        "query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False",
        lower_attention);
}

}  // namespace kevo
