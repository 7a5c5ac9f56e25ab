// The generic family's views and layout ops: each is index remapping inside whatever kernel
// reads it (a reshape through the flat offset, a transpose by swapping index entries, a slice by
// an affine index, a cat by choosing its operand), never a copy of its own.
#include <algorithm>
#include <stdexcept>

#include "lower/generic/dims.h"
#include "lower/generic/ops.h"

namespace kevo::lower::generic {

namespace {

using Map = decltype(Value::map);

// Output dim d is input dim perm[d]: the input's index entry perm[d] is i[d].
Map permute_map(const Node& n, int x, int r) {
  std::vector<int> perm(static_cast<size_t>(r));
  for (int d = 0; d < r; ++d) perm[static_cast<size_t>(d)] = d;
  if (n.op == "transpose") {
    std::swap(perm[static_cast<size_t>(attr_int(n, "dim0"))], perm[static_cast<size_t>(attr_int(n, "dim1"))]);
  } else {
    const auto& dims = attr_ints(n, "dims");
    for (int d = 0; d < r; ++d) perm[static_cast<size_t>(d)] = static_cast<int>(dims[static_cast<size_t>(d)]);
  }
  return [x, perm, r](Code& c, const std::string& i) {
    std::vector<std::string> e(static_cast<size_t>(r));
    for (int d = 0; d < r; ++d) e[static_cast<size_t>(perm[static_cast<size_t>(d)])] = at(i, d);
    return c.read(x, c.index(e));
  };
}

Map unsqueeze_map(const Node& n, int x, int r) {
  const int dim = static_cast<int>(attr_int(n, "dim"));
  return [x, dim, r](Code& c, const std::string& i) {
    std::vector<std::string> e;
    for (int d = 0; d < r; ++d)
      if (d != dim) e.push_back(at(i, d));
    return c.read(x, c.index(e));
  };
}

Map squeeze_map(const ProgramBuilder& b, const Node& n, int x) {
  const int xr = b.value(x).rank();
  std::vector<int64_t> dims = ints_or(n, "dims", {});
  const auto& xs = b.value(x).sizes[0];
  std::vector<bool> gone(static_cast<size_t>(xr), false);
  if (dims.empty())
    for (int d = 0; d < xr; ++d) gone[static_cast<size_t>(d)] = xs[static_cast<size_t>(d)] == 1;
  for (int64_t d : dims) gone[static_cast<size_t>(d)] = xs[static_cast<size_t>(d)] == 1;
  return [x, gone](Code& c, const std::string& i) {
    std::vector<std::string> e;
    int o = 0;
    for (bool g : gone) e.push_back(g ? "0" : at(i, o++));
    return c.read(x, c.index(e));
  };
}

Map flip_map(const Node& n, int x, int r) {
  const std::vector<int64_t> dims = attr_ints(n, "dims");
  return [x, dims, r](Code& c, const std::string& i) {
    std::vector<std::string> e;
    for (int d = 0; d < r; ++d) {
      const bool f = std::find(dims.begin(), dims.end(), d) != dims.end();
      e.push_back(f ? c.dim(x, d) + " - 1 - " + at(i, d) : at(i, d));
    }
    return c.read(x, c.index(e));
  };
}

// The clamped start per workload, as an expression: a literal, or (a chunk's or split's later
// part) a multiple of the part's size, or the operand's size less it.
Map slice_map(const ProgramBuilder& b, const Dims& dims, const Node& n, const Value& v, int x, int r) {
  const int dim = static_cast<int>(attr_int(n, "dim"));
  const int64_t step = attr_int(n, "step");
  const TaskGraph& tg = b.tg();
  std::vector<int64_t> starts;
  const size_t id = static_cast<size_t>(&n - &tg.graph().nodes[0]);
  for (size_t w = 0; w < tg.workloads(); ++w) {
    const int64_t len = b.value(x).sizes[w][static_cast<size_t>(dim)], s0 = attr_int(tg.graph(w).nodes[id], "start");
    starts.push_back(std::min(std::max<int64_t>(s0 < 0 ? s0 + len : s0, 0), len));
  }
  std::string first = std::to_string(starts[0]);
  if (std::count(starts.begin(), starts.end(), starts[0]) != static_cast<long>(starts.size())) {
    const std::string part = "(" + v.dims[static_cast<size_t>(dim)] + ")", whole = "(" + b.value(x).dims[static_cast<size_t>(dim)] + ")";
    std::vector<std::string> tries = {part, whole + " - " + part};
    for (int k = 2; k <= 8; ++k) tries.push_back(std::to_string(k) + " * " + part);
    first.clear();
    for (const std::string& t : tries)
      if (first.empty() && dims.fits(t, starts)) first = t;
    if (first.empty()) throw std::runtime_error("a slice whose start has no expression over the axes");
  }
  return [x, dim, first, step, r](Code& c, const std::string& i) {
    std::vector<std::string> e;
    for (int d = 0; d < r; ++d)
      e.push_back(d == dim ? c.size(first) + " + " + at(i, d) + " * " + std::to_string(step) : at(i, d));
    return c.read(x, c.index(e));
  };
}

// The index per workload: a literal, or counted from the end (x[:, -1]).
Map select_map(const ProgramBuilder& b, const Dims& dims, const Node& n, int x, int r) {
  const int dim = static_cast<int>(attr_int(n, "dim"));
  const TaskGraph& tg = b.tg();
  const size_t id = static_cast<size_t>(&n - &tg.graph().nodes[0]);
  std::vector<int64_t> picks;
  for (size_t w = 0; w < tg.workloads(); ++w) picks.push_back(attr_int(tg.graph(w).nodes[id], "index"));
  std::string index = std::to_string(picks[0]);
  if (std::count(picks.begin(), picks.end(), picks[0]) != static_cast<long>(picks.size())) {
    index.clear();
    for (int k = 1; k <= 16 && index.empty(); ++k) {
      const std::string t = "(" + b.value(x).dims[static_cast<size_t>(dim)] + ") - " + std::to_string(k);
      if (dims.fits(t, picks)) index = t;
    }
    if (index.empty()) throw std::runtime_error("a select whose index has no expression over the axes");
  }
  return [x, dim, index, r](Code& c, const std::string& i) {
    std::vector<std::string> e;
    for (int d = 0; d <= r; ++d) e.push_back(d == dim ? c.size(index) : at(i, d < dim ? d : d - 1));
    return c.read(x, c.index(e));
  };
}

Map triangle_map(const Node& n, int x, int r) {
  const int64_t diagonal = attr_int(n, "diagonal");
  const bool lower = n.op == "tril";
  return [x, diagonal, lower, r](Code& c, const std::string& i) {
    const std::string val = c.read(x, i);
    return std::string("((long long)") + at(i, r - 1) + " - (long long)" + at(i, r - 2) + (lower ? " <= " : " >= ") +
           std::to_string(diagonal) + "LL ? " + val + " : 0.f)";
  };
}

// Operand k covers [offset_k, offset_k + its dim): a chain of choices, the last the default.
Map cat_map(const Node& n, std::vector<int> parts, int r) {
  const int dim = static_cast<int>(attr_int(n, "dim"));
  return [parts, dim, r](Code& c, const std::string& i) {
    const std::string res = c.fresh("cat");
    c.line("float " + res + ";");
    std::string offset = "0";
    for (size_t k = 0; k < parts.size(); ++k) {
      const int u = parts[k];
      std::string end = "(" + offset + " + " + c.dim(u, dim) + ")";
      std::vector<std::string> e;
      for (int d = 0; d < r; ++d) e.push_back(d == dim ? at(i, d) + " - " + offset : at(i, d));
      c.line(std::string(k ? "else " : "") + (k + 1 < parts.size() ? "if (" + at(i, dim) + " < " + end + ") " : "") + "{");
      const std::string j = c.index(e);
      c.line("  " + res + " = " + c.read(u, j) + ";");
      c.line("}");
      offset = end;
    }
    return res;
  };
}

}  // namespace

std::vector<int> ProgramBuilder::view(const Node& n) {
  static const std::vector<std::string> views = {"reshape", "transpose", "permute", "unsqueeze", "squeeze", "expand",
                                                 "contiguous", "flip", "slice", "select", "cat", "full", "tril", "triu"};
  if (std::find(views.begin(), views.end(), n.op) == views.end() || n.outputs.size() != 1) return {};
  Value v = like(n.outputs[0], "%" + std::to_string(n.outputs[0]) + " " + n.op);
  v.kind = Kind::Map;
  for (int in : n.inputs) v.operands.push_back(of(in));
  const int x = v.operands.empty() ? -1 : v.operands[0];
  const int r = v.rank();
  const std::string op = n.op;
  if (op == "full") {
    const double value = attr_float(n, "value");
    v.map = [value](Code&, const std::string&) { return float_literal(value); };
  } else if (op == "reshape") {
    const int me = static_cast<int>(prog_.values.size());
    v.map = [x, me](Code& c, const std::string& i) { return c.read(x, c.unflat(x, c.flat(me, i))); };
  } else if (op == "contiguous") {
    v.map = [x](Code& c, const std::string& i) { return c.read(x, i); };
  } else if (op == "expand") {
    v.map = [x, r](Code& c, const std::string& i) { return c.read(x, c.broadcast(x, i, r)); };
  } else if (op == "transpose" || op == "permute") {
    v.map = permute_map(n, x, r);
  } else if (op == "unsqueeze") {
    v.map = unsqueeze_map(n, x, r);
  } else if (op == "squeeze") {
    v.map = squeeze_map(*this, n, x);
  } else if (op == "flip") {
    v.map = flip_map(n, x, r);
  } else if (op == "slice") {
    v.map = slice_map(*this, *dims_, n, v, x, r);
  } else if (op == "select") {
    v.map = select_map(*this, *dims_, n, x, r);
  } else if (op == "tril" || op == "triu") {
    v.elementwise = true;
    v.map = triangle_map(n, x, r);
  } else if (op == "cat") {
    v.map = cat_map(n, v.operands, r);
  }
  return {add(std::move(v))};
}

}  // namespace kevo::lower::generic
