// The generic family's compute ops: reductions, softmax, normalisations, matrix products,
// convolutions, pooling, scans and losses, each as reductions (an output element = the reduction
// of K terms read through accessors) and maps over them.
#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "lower/generic/ops.h"

namespace kevo::lower::generic {

std::string at(const std::string& i, int d) { return i + "[" + std::to_string(d) + "]"; }

std::vector<int64_t> ints_or(const Node& n, const std::string& key, std::vector<int64_t> fallback) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return fallback;
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return {*i};
  return fallback;
}
bool bool_or(const Node& n, const std::string& key, bool fallback) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end() || !std::holds_alternative<bool>(it->second)) return fallback;
  return std::get<bool>(it->second);
}
std::string str_or(const Node& n, const std::string& key, const std::string& fallback) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end() || !std::holds_alternative<std::string>(it->second)) return fallback;
  return std::get<std::string>(it->second);
}

Finish plain() {
  return [](Code&, const std::string&, const std::string& acc, const std::string&) { return acc; };
}

int reduction(ProgramBuilder& b, const std::string& what, const Value& shape, const std::vector<int>& operands,
              const std::string& op, std::vector<std::string> extents, Term term, Finish finish, bool contraction) {
  Value v = shape;
  v.what = what;
  v.kind = Kind::Reduce;
  v.operands = operands;
  v.op = op;
  v.extents = std::move(extents);
  v.term = std::move(term);
  v.finish = std::move(finish);
  v.contraction = contraction;
  return b.add(std::move(v));
}

// The shape of x reduced over `dims` (kept as 1 or removed).
Value reduced_shape(ProgramBuilder& b, int x, const std::vector<int64_t>& dims, bool keep) {
  const Value& xv = b.value(x);
  std::vector<std::string> out;
  for (int d = 0; d < xv.rank(); ++d) {
    const bool r = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!r) out.push_back(xv.dims[static_cast<size_t>(d)]);
    else if (keep) out.push_back("1");
  }
  return b.shaped(xv, out, [dims, keep](const std::vector<int64_t>& s) {
    std::vector<int64_t> o;
    for (size_t d = 0; d < s.size(); ++d) {
      const bool r = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
      if (!r) o.push_back(s[d]);
      else if (keep) o.push_back(1);
    }
    return o;
  });
}

// The index of x for output index o and reduction index k of a reduction over `dims`.
std::string x_index(Code& c, int x, const std::vector<int64_t>& dims, bool keep, const std::string& o, const std::string& k) {
  std::vector<std::string> e;
  int od = 0, kd = 0;
  for (int d = 0; d < c.value(x).rank(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) {
      e.push_back(at(k, kd++));
      if (keep) ++od;
    } else {
      e.push_back(at(o, od++));
    }
  }
  return c.index(e);
}

// The kept-dims index (reduced dims at 0) of an x index.
std::string kept_index(Code& c, int x, const std::vector<int64_t>& dims, const std::string& xi) {
  std::vector<std::string> e;
  for (int d = 0; d < c.value(x).rank(); ++d)
    e.push_back(std::find(dims.begin(), dims.end(), d) != dims.end() ? "0" : at(xi, d));
  return c.index(e);
}

// x reduced over dims with `op`, each term f(x) ("$" is x's value).
int reduce_over(ProgramBuilder& b, const std::string& what, int x, std::vector<int64_t> dims, bool keep, const std::string& op,
                const std::string& f, Finish finish, std::vector<int> extra,
                std::function<std::string(Code&, const std::string& xi)> term_of) {
  std::sort(dims.begin(), dims.end());
  std::vector<std::string> extents;
  for (int64_t d : dims) extents.push_back(b.value(x).dims[static_cast<size_t>(d)]);
  std::vector<int> operands = {x};
  operands.insert(operands.end(), extra.begin(), extra.end());
  Term term = [x, dims, keep, f, term_of](Code& c, const std::string& o, const std::string& k) {
    const std::string xi = x_index(c, x, dims, keep, o, k);
    if (term_of) return term_of(c, xi);
    std::string e = f, val = c.read(x, xi);
    for (size_t at = e.find('$'); at != std::string::npos; at = e.find('$', at + val.size())) e.replace(at, 1, val);
    return e;
  };
  return reduction(b, what, reduced_shape(b, x, dims, keep), operands, op, extents, term, std::move(finish));
}

std::string product_code(Code& c, const std::vector<std::string>& extents) {
  std::string s = "1.f";
  for (const std::string& e : extents) s += " * (float)" + c.size(e);
  return s;
}

Finish mean_of(std::vector<std::string> extents, const std::string& then) {
  return [extents, then](Code& c, const std::string&, const std::string& acc, const std::string&) {
    std::string e = then, m = acc + " / (" + product_code(c, extents) + ")";
    for (size_t at = e.find('$'); at != std::string::npos; at = e.find('$', at + m.size())) e.replace(at, 1, m);
    return e;
  };
}

std::vector<int64_t> all_dims(int rank) {
  std::vector<int64_t> d;
  for (int i = 0; i < rank; ++i) d.push_back(i);
  return d;
}

// A map value of graph value `gv`'s shape reading `operands` elementwise (broadcast).
int elementwise_map(ProgramBuilder& b, const Value& shape, const std::string& what, std::vector<int> operands,
                    std::function<std::string(Code&, const std::vector<std::string>& args, const std::string& i)> f) {
  Value v = shape;
  v.what = what;
  v.kind = Kind::Map;
  v.elementwise = true;
  v.operands = operands;
  const int r = v.rank();
  v.map = [operands, f, r](Code& c, const std::string& i) {
    std::vector<std::string> args;
    for (int u : operands) args.push_back(u < 0 ? "" : c.read(u, c.broadcast(u, i, r)));
    return f(c, args, i);
  };
  return b.add(std::move(v));
}

// Softmax-like statistics of x over dim: the max and the sum of exp(x - max), both keepdim.
std::pair<int, int> softmax_stats(ProgramBuilder& b, const std::string& what, int x, std::vector<int64_t> dims) {
  const int m = reduce_over(b, what + " (max)", x, dims, true, "GMax", "$", plain());
  const int s = reduce_over(b, what + " (sum of exp)", x, dims, true, "GSum", "", plain(), {m},
                            [x, m, dims](Code& c, const std::string& xi) {
                              return "expf(" + c.read(x, xi) + " - " + c.read(m, kept_index(c, x, dims, xi)) + ")";
                            });
  return {m, s};
}

namespace {

std::vector<int> reduction_op(ProgramBuilder& b, const Node& n, const std::string& what) {
  const int x = b.of(n.inputs[0]);
  const int r = b.value(x).rank();
  std::vector<int64_t> dims = ints_or(n, "dim", all_dims(r));
  const bool keep = bool_or(n, "keepdim", false);
  const std::string& op = n.op;
  auto same = [&](const std::string& o, const std::string& f, Finish fin) { return reduce_over(b, what, x, dims, keep, o, f, fin); };
  std::vector<std::string> extents;
  for (int64_t d : dims) extents.push_back(b.value(x).dims[static_cast<size_t>(d)]);
  if (op == "sum") return {same("GSum", "$", plain())};
  if (op == "prod") return {same("GProd", "$", plain())};
  if (op == "amax") return {same("GMax", "$", plain())};
  if (op == "amin") return {same("GMin", "$", plain())};
  if (op == "mean") return {same("GSum", "$", mean_of(extents))};
  if (op == "argmax" || op == "argmin") {
    return {same(op == "argmax" ? "GArgMax" : "GArgMin", "$",
                 [](Code&, const std::string&, const std::string&, const std::string& arg) { return "(float)" + arg; })};
  }
  if (op == "max_dim" || op == "min_dim") {
    const bool mx = op == "max_dim";
    return {same(mx ? "GMax" : "GMin", "$", plain()),
            same(mx ? "GArgMax" : "GArgMin", "$",
                 [](Code&, const std::string&, const std::string&, const std::string& arg) { return "(float)" + arg; })};
  }
  if (op == "norm") {
    const NormParts parts = p_norm(attr_float_or(n, "p", 2.0));
    std::string fin = parts.finish;
    return {same("G" + parts.combine, parts.transform,
                 [fin](Code&, const std::string&, const std::string& acc, const std::string&) {
                   if (fin == "s") return acc;
                   std::string e = fin;  // "sqrtf(s)", "powf(s, 0.5f)"
                   e.replace(e.find("(s") + 1, 1, acc);
                   return e;
                 })};
  }
  if (op == "logsumexp") {
    const int m = reduce_over(b, what + " (max)", x, dims, true, "GMax", "$", plain());
    std::vector<int64_t> sorted = dims;
    std::sort(sorted.begin(), sorted.end());
    return {reduce_over(
        b, what, x, dims, keep, "GSum", "",
        [x, m, sorted, keep](Code& c, const std::string& o, const std::string& acc, const std::string&) {
          // The max at the kept index of output index o.
          std::vector<std::string> e;
          int od = 0;
          for (int d = 0; d < c.value(x).rank(); ++d) {
            const bool red = std::find(sorted.begin(), sorted.end(), d) != sorted.end();
            e.push_back(red ? "0" : at(o, od));
            if (!red || keep) ++od;
          }
          const std::string mv = c.fresh("m");
          c.line("const float " + mv + " = " + c.read(m, c.index(e)) + ";");
          return "(" + mv + " == -__int_as_float(0x7f800000) ? " + mv + " : logf(" + acc + ") + " + mv + ")";
        },
        {m},
        [x, m, sorted](Code& c, const std::string& xi) {
          const std::string mv = c.fresh("m");
          c.line("const float " + mv + " = " + c.read(m, kept_index(c, x, sorted, xi)) + ";");
          return "(" + mv + " == -__int_as_float(0x7f800000) ? 0.f : expf(" + c.read(x, xi) + " - " + mv + "))";
        })};
  }
  return {};
}

std::vector<int> softmax_op(ProgramBuilder& b, const Node& n, const std::string& what) {
  const int x = b.of(n.inputs[0]);
  const int64_t dim = ints_or(n, "dim", {0})[0];
  auto [m, s] = softmax_stats(b, what, x, {dim});
  const bool log = n.op == "log_softmax";
  return {elementwise_map(b, b.like(n.outputs[0], what), what, {x, m, s}, [log](Code&, const std::vector<std::string>& a, const std::string&) {
    return log ? a[0] + " - " + a[1] + " - logf(" + a[2] + ")" : "expf(" + a[0] + " - " + a[1] + ") / " + a[2];
  })};
}

// Mean and (biased) variance of x over the reduction that `index` describes.
std::vector<int> norm_op(ProgramBuilder& b, const Node& n, const std::string& what) {
  const int x = b.of(n.inputs[0]);
  const int w = n.inputs.size() > 1 ? b.of(n.inputs[1]) : -1, bias = n.inputs.size() > 2 ? b.of(n.inputs[2]) : -1;
  const int r = b.value(x).rank();
  const double eps = attr_float_or(n, "eps", 1e-5);
  std::vector<int64_t> dims;
  int param_dim = -1;  // the x dim a per-channel weight follows; -1: right-aligned (layer norm)
  if (n.op == "layer_norm") {
    const size_t k = ints_or(n, "normalized_shape", {}).size();
    for (int d = r - static_cast<int>(k); d < r; ++d) dims.push_back(d);
  } else if (n.op == "instance_norm") {
    for (int d = 2; d < r; ++d) dims.push_back(d);
    param_dim = 1;
  } else if (n.op == "batch_norm") {
    for (int d = 0; d < r; ++d)
      if (d != 1) dims.push_back(d);
    param_dim = 1;
  } else if (n.op == "group_norm") {
    param_dim = 1;  // weight and bias per channel
  }
  auto affine = [w, bias, param_dim, eps](Code& c, const std::string& xv, const std::string& mean, const std::string& var,
                                          const std::string& i, int rank) {
    std::string e = "(" + xv + " - " + mean + ") * rsqrtf(" + var + " + " + float_literal(eps) + ")";
    auto param = [&](int u) {
      if (param_dim >= 0) return c.read(u, c.index({at(i, param_dim)}));
      return c.read(u, c.broadcast(u, i, rank));
    };
    if (w >= 0) e = "(" + e + ") * " + param(w);
    if (bias >= 0) e += " + " + param(bias);
    return e;
  };
  std::vector<int> params;
  if (w >= 0) params.push_back(w);
  if (bias >= 0) params.push_back(bias);
  if (n.op == "group_norm") {
    // Statistics per (n, group): x viewed as [N, G, C/G * spatial].
    const int64_t groups = attr_int(n, "num_groups");
    const Value& xv = b.value(x);
    const std::string C = xv.dims[1];
    const std::string cg = "(" + C + ") // " + std::to_string(groups);
    std::vector<std::string> extents = {cg};
    for (int d = 2; d < r; ++d) extents.push_back(xv.dims[static_cast<size_t>(d)]);
    Value shape = b.shaped(xv, {xv.dims[0], std::to_string(groups)}, [groups](const std::vector<int64_t>& s) {
      return std::vector<int64_t>{s[0], groups};
    });
    auto xi_of = [x, r, cg](Code& c, const std::string& o, const std::string& k) {
      std::vector<std::string> e = {at(o, 0), at(o, 1) + " * " + c.size(cg) + " + " + at(k, 0)};
      for (int d = 2; d < r; ++d) e.push_back(at(k, d - 1));
      return c.index(e);
    };
    const int mean = reduction(b, what + " (mean)", shape, {x}, "GSum", extents,
                               [x, xi_of](Code& c, const std::string& o, const std::string& k) { return c.read(x, xi_of(c, o, k)); },
                               mean_of(extents));
    const int var = reduction(b, what + " (variance)", shape, {x, mean}, "GSum", extents,
                              [x, mean, xi_of](Code& c, const std::string& o, const std::string& k) {
                                const std::string d = c.fresh("d");
                                c.line("const float " + d + " = " + c.read(x, xi_of(c, o, k)) + " - " + c.read(mean, o) + ";");
                                return d + " * " + d;
                              },
                              mean_of(extents));
    Value out = b.like(n.outputs[0], what);
    out.kind = Kind::Map;
    out.operands = {x, mean, var};
    out.operands.insert(out.operands.end(), params.begin(), params.end());
    out.map = [x, mean, var, cg, affine, r](Code& c, const std::string& i) {
      const std::string s = c.index({at(i, 0), at(i, 1) + " / " + c.size(cg)});
      return affine(c, c.read(x, i), c.read(mean, s), c.read(var, s), i, r);
    };
    return {b.add(std::move(out))};
  }
  if (dims.empty()) return {};
  std::vector<std::string> extents;
  for (int64_t d : dims) extents.push_back(b.value(x).dims[static_cast<size_t>(d)]);
  const int mean = reduce_over(b, what + " (mean)", x, dims, true, "GSum", "$", mean_of(extents));
  const int var = reduce_over(b, what + " (variance)", x, dims, true, "GSum", "", mean_of(extents), {mean},
                              [x, mean, dims](Code& c, const std::string& xi) {
                                const std::string d = c.fresh("d");
                                c.line("const float " + d + " = " + c.read(x, xi) + " - " + c.read(mean, kept_index(c, x, dims, xi)) + ";");
                                return d + " * " + d;
                              });
  Value out = b.like(n.outputs[0], what);
  out.kind = Kind::Map;
  out.operands = {x, mean, var};
  out.operands.insert(out.operands.end(), params.begin(), params.end());
  out.map = [x, mean, var, dims, affine, r](Code& c, const std::string& i) {
    const std::string s = kept_index(c, x, dims, i);
    return affine(c, c.read(x, i), c.read(mean, s), c.read(var, s), i, r);
  };
  return {b.add(std::move(out))};
}

// Labelled contraction (einsum): each operand's dims carry labels; output labels index the
// output, the others are summed. Operand dims of size 1 broadcast.
int contraction(ProgramBuilder& b, const std::string& what, const Value& shape, const std::vector<int>& ops,
                const std::vector<std::string>& labels, const std::string& out_labels, Finish finish, std::vector<int> extra = {}) {
  std::string summed;
  std::vector<std::string> extents;
  for (size_t k = 0; k < ops.size(); ++k)
    for (size_t d = 0; d < labels[k].size(); ++d) {
      const char l = labels[k][d];
      if (out_labels.find(l) != std::string::npos || summed.find(l) != std::string::npos) continue;
      summed += l;
      extents.push_back(b.value(ops[k]).dims[d]);
    }
  Term term = [ops, labels, out_labels, summed](Code& c, const std::string& o, const std::string& k) {
    std::string e;
    for (size_t q = 0; q < ops.size(); ++q) {
      const Value& v = c.value(ops[q]);
      std::vector<std::string> idx;
      for (size_t d = 0; d < labels[q].size(); ++d) {
        bool one = true;
        for (const auto& s : v.sizes) one = one && s[d] == 1;
        const char l = labels[q][d];
        const size_t po = out_labels.find(l);
        idx.push_back(one ? "0" : po != std::string::npos ? at(o, static_cast<int>(po)) : at(k, static_cast<int>(summed.find(l))));
      }
      e += (q ? " * " : "") + c.read(ops[q], c.index(idx));
    }
    return e;
  };
  std::vector<int> operands = ops;
  operands.insert(operands.end(), extra.begin(), extra.end());
  return reduction(b, what, shape, operands, "GSum", extents, term, std::move(finish), true);
}

std::string letters(int from, int count) {
  std::string s;
  for (int i = 0; i < count; ++i) s += static_cast<char>('a' + from + i);
  return s;
}

// x[..., k] w[n, k] (+ bias) -> [..., n].
std::vector<int> linear_op(ProgramBuilder& b, const Node& n, const std::string& what) {
  const Value shape = b.like(n.outputs[0], what);
  const int ro = shape.rank();
  const int x = b.of(n.inputs[0]), w = b.of(n.inputs[1]), bias = n.inputs.size() > 2 ? b.of(n.inputs[2]) : -1;
  const int rx = b.value(x).rank();
  const std::string batch = letters(0, rx - 1);
  Finish fin = plain();
  std::vector<int> ops = {x, w};
  if (bias >= 0)
    fin = [bias, ro](Code& c, const std::string& o, const std::string& acc, const std::string&) {
      return acc + " + " + c.read(bias, c.broadcast(bias, o, ro));
    };
  // x[..., k] w[n, k] -> [..., n]
  const int id = contraction(b, what, shape, ops, {batch + "Y", (b.value(w).rank() == 2 ? "X" : "") + std::string("Y")},
                             batch + (b.value(w).rank() == 2 ? "X" : ""), fin, bias >= 0 ? std::vector<int>{bias} : std::vector<int>{});
  return {id};
}

// matmul and bmm: torch's broadcasting of the leading dims, a vector operand's dim dropped.
std::vector<int> matmul_op(ProgramBuilder& b, const Node& n, const std::string& what) {
  const Value shape = b.like(n.outputs[0], what);
  const int a = b.of(n.inputs[0]), c = b.of(n.inputs[1]);
  const int ra = b.value(a).rank(), rc = b.value(c).rank();
  std::string la, lc, lo;
  if (ra == 1 && rc == 1) {
    la = "K", lc = "K", lo = "";
  } else if (ra == 1) {
    lc = letters(0, rc - 2) + "KN", la = "K", lo = letters(0, rc - 2) + "N";
  } else if (rc == 1) {
    la = letters(0, ra - 2) + "MK", lc = "K", lo = letters(0, ra - 2) + "M";
  } else {
    const int batch = std::max(ra, rc) - 2;
    lo = letters(0, batch) + "MN";
    la = letters(batch - (ra - 2), ra - 2) + "MK";
    lc = letters(batch - (rc - 2), rc - 2) + "KN";
  }
  return {contraction(b, what, shape, {a, c}, {la, lc}, lo, plain())};
}

// einsum without ...: the output's labels given, or those used once.
std::vector<int> einsum_op(ProgramBuilder& b, const Node& n, const std::string& what) {
  const Value shape = b.like(n.outputs[0], what);
  const std::string eq = attr_str(n, "equation");
  if (eq.find("...") != std::string::npos) throw std::runtime_error("einsum with ... is not lowered by the generic family yet");
  const size_t arrow = eq.find("->");
  std::vector<std::string> labels;
  std::string lhs = eq.substr(0, arrow), out;
  for (size_t at = 0;;) {
    size_t comma = lhs.find(',', at);
    labels.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    std::map<char, int> count;
    for (const auto& l : labels)
      for (char ch : l) ++count[ch];
    for (const auto& [ch, k] : count)
      if (k == 1) out += ch;
  }
  std::vector<int> ops;
  for (int in : n.inputs) ops.push_back(b.of(in));
  return {contraction(b, what, shape, ops, labels, out, plain())};
}

std::vector<int> attention_op(ProgramBuilder& b, const Node& n, const std::string& what) {
  const Value shape = b.like(n.outputs[0], what);
  const int ro = shape.rank();
  // softmax(q k^T * scale + mask) v: the scores stored, their row statistics, then the product.
  const int q = b.of(n.inputs[0]), k = b.of(n.inputs[1]), v = b.of(n.inputs[2]);
  const int mask = n.inputs.size() > 3 ? b.of(n.inputs[3]) : -1;
  const Value& qv = b.value(q);
  const int r = qv.rank();
  if (b.value(k).rank() != r || b.value(v).rank() != r) throw std::runtime_error("attention operands of different ranks");
  const std::string batch = letters(0, r - 2);
  const double scale = attr_float_or(n, "scale", 0.0);  // 0: 1/sqrt(E), E of each workload
  const bool causal = bool_or(n, "is_causal", false);
  const bool bool_mask = mask >= 0 && b.value(mask).dtype == DType::Bool;
  std::vector<std::string> sdims(ro);
  std::vector<std::string> out_dims = shape.dims;
  for (int d = 0; d < ro - 1; ++d) sdims[static_cast<size_t>(d)] = out_dims[static_cast<size_t>(d)];
  sdims[static_cast<size_t>(ro - 1)] = b.value(k).dims[static_cast<size_t>(r - 2)];
  Value sshape = b.shaped(shape, sdims, [&b, k, r](const std::vector<int64_t>& s) {
    std::vector<int64_t> o = s;
    o.back() = b.value(k).sizes[0][static_cast<size_t>(r - 2)];
    return o;
  });
  for (size_t w = 0; w < sshape.sizes.size(); ++w) sshape.sizes[w].back() = b.value(k).sizes[w][static_cast<size_t>(r - 2)];
  Finish fin = [=](Code& c, const std::string& o, const std::string& acc, const std::string&) {
    std::string e = acc + " * " + (scale != 0.0 ? float_literal(scale) : "(1.f / sqrtf((float)" + c.dim(q, r - 1) + "))");
    if (causal) e = "(" + at(o, ro - 1) + " <= " + at(o, ro - 2) + " ? " + e + " : -__int_as_float(0x7f800000))";
    if (mask >= 0) {
      const std::string m = c.read(mask, c.broadcast(mask, o, ro));
      e = bool_mask ? "(" + m + " != 0.f ? " + e + " : -__int_as_float(0x7f800000))" : e + " + " + m;
    }
    return e;
  };
  const int scores = contraction(b, what + " (scores)", sshape, {q, k}, {batch + "LE", batch + "SE"}, batch + "LS", fin,
                                 mask >= 0 ? std::vector<int>{mask} : std::vector<int>{});
  auto [m, z] = softmax_stats(b, what, scores, {ro - 1});
  const int probs = elementwise_map(b, b.value(scores), what + " (probabilities)", {scores, m, z},
                                    [](Code&, const std::vector<std::string>& a, const std::string&) {
                                      return "expf(" + a[0] + " - " + a[1] + ") / " + a[2];
                                    });
  return {contraction(b, what, shape, {probs, v}, {batch + "LS", batch + "SV"}, batch + "LV", plain())};
}

std::vector<int> product_op(ProgramBuilder& b, const Node& n, const std::string& what) {
  if (n.op == "linear") return linear_op(b, n, what);
  if (n.op == "matmul" || n.op == "bmm") return matmul_op(b, n, what);
  if (n.op == "einsum") return einsum_op(b, n, what);
  if (n.op == "scaled_dot_product_attention") return attention_op(b, n, what);
  return {};
}

}  // namespace

std::vector<int> lower_window_op(ProgramBuilder& b, const Node& n, const std::string& what);  // generic/window.cpp
std::vector<int> lower_loss_op(ProgramBuilder& b, const Node& n, const std::string& what);    // generic/loss.cpp

std::vector<int> lower_op(ProgramBuilder& b, const Node& n) {
  const std::string what = "%" + std::to_string(n.outputs.empty() ? -1 : n.outputs[0]) + " " + n.op;
  static const std::set<std::string> reductions = {"sum", "prod", "amax", "amin", "mean", "argmax", "argmin",
                                                   "max_dim", "min_dim", "norm", "logsumexp"};
  if (reductions.count(n.op)) return reduction_op(b, n, what);
  if (n.op == "softmax" || n.op == "log_softmax") return softmax_op(b, n, what);
  if (n.op.find("_norm") != std::string::npos && n.op != "weight_norm") return norm_op(b, n, what);
  if (n.op == "linear" || n.op == "matmul" || n.op == "bmm" || n.op == "einsum" || n.op == "scaled_dot_product_attention")
    return product_op(b, n, what);
  if (n.op == "cumsum" || n.op == "cumprod") {
    Value v = b.like(n.outputs[0], what);
    v.kind = Kind::Scan;
    v.op = n.op == "cumsum" ? "GSum" : "GProd";
    v.scan_dim = static_cast<int>(ints_or(n, "dim", {0})[0]);
    v.operands = {b.of(n.inputs[0])};
    const int x = v.operands[0];
    v.term = [x](Code& c, const std::string& o, const std::string&) { return c.read(x, o); };
    return {b.add(std::move(v))};
  }
  std::vector<int> out = lower_window_op(b, n, what);
  if (!out.empty()) return out;
  return lower_loss_op(b, n, what);
}

}  // namespace kevo::lower::generic
