// The generic family's sizes: every dim of every graph value as a plan expression over the axes
// that equals it in every workload (the contract's spelling where a declared tensor has it, a
// convolution's or pooling's output formula, a product of an operand's dims, or a literal).
#include <stdexcept>

#include "lower/generic/dims.h"

namespace kevo::lower::generic {

namespace {

// (i + c) // s + 1, written plainly.
std::string window_out(const std::string& i, int64_t c, int64_t s, int64_t plus) {
  std::string e = paren(i);
  if (c > 0) e += " + " + std::to_string(c);
  if (c < 0) e += " - " + std::to_string(-c);
  if (s != 1) e = "(" + e + ") // " + std::to_string(s);
  if (plus > 0) e += " + " + std::to_string(plus);
  if (plus < 0) e += " - " + std::to_string(-plus);
  return e;
}

int64_t list_at(const Node& n, const std::string& key, size_t d, int64_t fallback) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return fallback;
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return v->empty() ? fallback : (*v)[std::min(d, v->size() - 1)];
  if (const auto* i = std::get_if<int64_t>(&it->second)) return *i;
  return fallback;
}

}  // namespace

bool Dims::fits(const std::string& expr, const std::vector<int64_t>& want) const {
  try {
    AxisExpr e = AxisExpr::parse(expr);
    for (size_t w = 0; w < want.size(); ++w)
      if (e.eval(tg_.task().axis_values(tg_.task().workloads[w])) != want[w]) return false;
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

std::vector<int64_t> Dims::sizes(int v, int d) const {
  std::vector<int64_t> out;
  for (size_t w = 0; w < tg_.workloads(); ++w) out.push_back(tg_.graph(w).values[static_cast<size_t>(v)].shape[static_cast<size_t>(d)]);
  return out;
}

// Output dims of convolutions and pooling by their formulas; "" where the op has none.
std::string Dims::formula(const Node& n, int d) const {
  const std::string& op = n.op;
  if (op == "cat" && d == static_cast<int>(attr_int(n, "dim"))) {
    std::string e;
    for (int u : n.inputs) {
      const std::string ud = at(u, d);
      if (ud.empty()) return "";
      e += (e.empty() ? "" : " + ") + paren(ud);
    }
    return e;
  }
  const bool conv = op.rfind("conv", 0) == 0, pool = op.find("pool") != std::string::npos && op.find("adaptive") == std::string::npos;
  if (!conv && !pool) return "";
  const int x = n.inputs[0];
  const int xr = tg_.rank(x);
  const int out_rank = tg_.rank(n.outputs[0]);
  int spatial = 0;
  if (conv) spatial = static_cast<int>(op[op.size() - 2] - '0');
  else spatial = static_cast<int>(op[op.find("pool") + 4] - '0');
  const int first = out_rank - spatial;
  if (d < first) return "";
  const size_t s = static_cast<size_t>(d - first);
  const std::string i = at(x, xr - spatial + static_cast<int>(s));
  if (i.empty()) return "";
  int64_t k = 0;
  if (conv) {
    k = tg_.graph().values[static_cast<size_t>(n.inputs[1])].shape[static_cast<size_t>(2 + static_cast<int>(s))];
  } else {
    k = list_at(n, "kernel_size", s, 1);
  }
  const int64_t stride = list_at(n, "stride", s, pool ? k : 1), pad = list_at(n, "padding", s, 0),
                dil = list_at(n, "dilation", s, 1);
  if (op.rfind("conv_transpose", 0) == 0) {
    const int64_t outpad = list_at(n, "output_padding", s, 0);
    // (i - 1) * s - 2p + d(k - 1) + output_padding + 1
    std::string e = stride == 1 ? paren(i) : paren(i) + " * " + std::to_string(stride);
    const int64_t c = -stride - 2 * pad + dil * (k - 1) + outpad + 1;
    if (c > 0) e += " + " + std::to_string(c);
    if (c < 0) e += " - " + std::to_string(-c);
    return e;
  }
  bool ceil = false;
  auto it = n.attrs.find("ceil_mode");
  if (it != n.attrs.end() && std::holds_alternative<bool>(it->second)) ceil = std::get<bool>(it->second);
  const int64_t c = 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  return window_out(i, c, stride, 1);
}

std::string Dims::at(int v, int d) const {
  auto it = dims_.find(v);
  if (it == dims_.end() || it->second.size() <= static_cast<size_t>(d)) return "";
  return it->second[static_cast<size_t>(d)];
}

Dims::Dims(const TaskGraph& tg) : tg_(tg) {
  const Graph& g = tg.graph();
  for (size_t v = 0; v < g.values.size(); ++v) resolve(static_cast<int>(v));
}

void Dims::resolve(int v) {
  const Graph& g = tg_.graph();
  const int rank = tg_.rank(v);
  std::vector<std::string> row(static_cast<size_t>(rank));
  const int p = g.values[static_cast<size_t>(v)].producer;
  for (int d = 0; d < rank; ++d) {
    const std::vector<int64_t> want = sizes(v, d);
    std::string found;
    try {
      found = tg_.dim(v, d);
    } catch (const std::runtime_error&) {
    }
    if (found.empty() && p >= 0) {
      std::string f = formula(g.nodes[static_cast<size_t>(p)], d);
      if (!f.empty() && fits(f, want)) found = f;
    }
    if (found.empty()) {
      // A dim of an operand, or a product of consecutive dims of one (a flatten).
      std::vector<int> from;
      if (p >= 0) from = g.nodes[static_cast<size_t>(p)].inputs;
      for (const auto& [u, dims] : dims_) from.push_back(u);
      for (int u : from) {
        if (u < 0 || !found.empty()) continue;
        const auto& ud = dims_[u];
        for (size_t a = 0; a < ud.size() && found.empty(); ++a) {
          std::string e;
          for (size_t b = a; b < ud.size() && found.empty(); ++b) {
            e += (b == a ? "" : " * ") + paren(ud[b]);
            if (fits(e, want)) found = e;
          }
        }
      }
    }
    if (found.empty() && p >= 0) {
      // An operand's dim less or more a constant (a narrow to all but the last element).
      for (int u : g.nodes[static_cast<size_t>(p)].inputs) {
        if (u < 0 || !found.empty()) continue;
        for (const std::string& ud : dims_[u])
          for (int c = 1; c <= 16 && found.empty(); ++c)
            for (const char* op : {" - ", " + "})
              if (found.empty() && fits(paren(ud) + op + std::to_string(c), want)) found = paren(ud) + op + std::to_string(c);
      }
    }
    if (found.empty() && p >= 0 && !g.nodes[static_cast<size_t>(p)].inputs.empty() && g.nodes[static_cast<size_t>(p)].inputs[0] >= 0) {
      // The dim a reshape's -1 resolved: the operand's size over the other dims.
      const int u = g.nodes[static_cast<size_t>(p)].inputs[0];
      std::string num, den;
      for (const std::string& e : dims_[u]) num += (num.empty() ? "" : " * ") + paren(e);
      for (int o = 0; o < rank; ++o)
        if (o != d) {
          std::string e = o < d ? row[static_cast<size_t>(o)] : "";
          if (e.empty()) {
            std::vector<int64_t> s = sizes(v, o);
            bool same = true;
            for (int64_t x : s) same = same && x == s.front();
            if (!same) { den = "?"; break; }
            e = std::to_string(s.front());
          }
          den += (den.empty() ? "" : " * ") + paren(e);
        }
      if (den != "?" && !num.empty()) {
        std::string e = den.empty() ? num : "(" + num + ") // (" + den + ")";
        if (fits(e, want)) found = e;
      }
    }
    if (found.empty()) {
      bool same = true;
      for (int64_t x : want) same = same && x == want.front();
      if (same) found = std::to_string(want.front());
    }
    if (found.empty())
      throw std::runtime_error("no plan expression for dim " + std::to_string(d) + " of value %" + std::to_string(v));
    row[static_cast<size_t>(d)] = found;
  }
  dims_[v] = row;
}

const std::vector<std::string>& Dims::of(int v) const { return dims_.at(v); }

}  // namespace kevo::lower::generic
