// Op graph: value bookkeeping, text form, FLOP count and attribute access.
#include "core/graph.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <sstream>
#include <stdexcept>

namespace kevo {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string attr_string(const AttrValue& a) {
  struct Visitor {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      std::ostringstream os;
      os.precision(17);
      os << d;
      std::string s = os.str();
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
    std::string operator()(const std::string& s) const { return "'" + s + "'"; }
    std::string operator()(const std::vector<int64_t>& v) const { return shape_string(v); }
  };
  return std::visit(Visitor{}, a);
}

int Graph::add_value(ValueInfo v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

std::string Graph::to_string() const {
  std::ostringstream os;
  auto ref = [&](int id) { return id < 0 ? std::string("None") : "%" + std::to_string(id); };
  auto type = [&](int id) {
    const ValueInfo& v = values[id];
    return dtype_name(v.dtype) + shape_string(v.shape);
  };
  os << "graph(";
  for (size_t i = 0; i < inputs.size(); ++i)
    os << (i ? ", " : "") << ref(inputs[i]) << " " << values[inputs[i]].name << ": " << type(inputs[i]);
  os << ")\n";
  for (const Node& n : nodes) {
    os << "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << ref(n.outputs[i]);
    os << " = " << n.op << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << ref(n.inputs[i]);
    os << ")";
    if (!n.attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, v] : n.attrs) {
        os << (first ? "" : ", ") << k << "=" << attr_string(v);
        first = false;
      }
      os << "}";
    }
    os << " : ";
    for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << type(n.outputs[i]);
    os << "  # " << n.pos.line << ":" << n.pos.col << "\n";
  }
  os << "  return ";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : "") << ref(outputs[i]);
  os << "\n";
  return os.str();
}

namespace {

bool is_op(const Node& n, std::initializer_list<const char*> ops) {
  for (const char* op : ops)
    if (n.op == op) return true;
  return false;
}

// Multiply-adds of an einsum: the product of every label's size (and of the ellipsis' dims).
int64_t einsum_macs(const Graph& g, const Node& n) {
  const std::string& eq = attr_str(n, "equation");
  std::map<char, int64_t> size;
  size_t k = 0, d = 0;
  int64_t ellipsis = 1;
  for (size_t i = 0; i < eq.size() && eq.compare(i, 2, "->") != 0; ++i) {
    const Shape& s = g.values[n.inputs[k]].shape;
    if (eq[i] == ',') {
      ++k, d = 0;
    } else if (eq[i] == '.') {
      size_t labels = 0;  // the labels of this operand after the ellipsis decide how many dims it takes
      for (size_t j = i + 3; j < eq.size() && eq[j] != ',' && eq[j] != '-'; ++j) ++labels;
      int64_t here = 1;
      for (; d + labels < s.size(); ++d) here *= s[d];
      ellipsis = std::max(ellipsis, here);
      i += 2;
    } else if (d < s.size()) {
      size[eq[i]] = std::max(size[eq[i]], s[d++]);
    }
  }
  int64_t macs = ellipsis;
  for (const auto& [label, n_] : size) macs *= n_;
  return macs;
}

}  // namespace

int64_t Graph::matmul_conv_flops() const {
  int64_t macs = 0;  // two FLOPs each
  for (const Node& n : nodes) {
    if (is_op(n, {"matmul", "bmm", "linear"})) {
      // Output elements times the contracted length.
      const Shape& a = values[n.inputs[0]].shape;
      macs += numel(values[n.outputs[0]].shape) * (a.empty() ? 1 : a.back());
    } else if (is_op(n, {"conv1d", "conv2d", "conv3d"})) {
      const Shape& w = values[n.inputs[1]].shape;  // [Cout, Cin/groups, k...]
      macs += numel(values[n.outputs[0]].shape) * numel(Shape(w.begin() + 1, w.end()));
    } else if (is_op(n, {"conv_transpose1d", "conv_transpose2d", "conv_transpose3d"})) {
      // Every input element scatters its kernel into Cout/groups channels.
      const Shape& w = values[n.inputs[1]].shape;  // [Cin, Cout/groups, k...]
      macs += numel(values[n.inputs[0]].shape) * numel(Shape(w.begin() + 1, w.end()));
    } else if (n.op == "einsum") {
      macs += einsum_macs(*this, n);
    } else if (n.op == "scaled_dot_product_attention") {
      // q k^T: [.., L, S] scores of E terms each; scores times v: [.., L, Ev] of S terms each.
      const Shape &q = values[n.inputs[0]].shape, &k = values[n.inputs[1]].shape, &o = values[n.outputs[0]].shape;
      int64_t rows = numel(o) / o.back();
      macs += rows * k[k.size() - 2] * (q.back() + o.back());
    }
  }
  return 2 * macs;
}

namespace {
const AttrValue& find_attr(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) throw std::logic_error("node " + n.op + " has no attribute " + key);
  return it->second;
}
}  // namespace

int64_t attr_int(const Node& n, const std::string& key) { return std::get<int64_t>(find_attr(n, key)); }
double attr_float(const Node& n, const std::string& key) {
  const AttrValue& a = find_attr(n, key);
  if (auto i = std::get_if<int64_t>(&a)) return static_cast<double>(*i);
  return std::get<double>(a);
}
double attr_float_or(const Node& n, const std::string& key, double fallback) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return fallback;
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return fallback;
}
const std::vector<int64_t>& attr_ints(const Node& n, const std::string& key) {
  return std::get<std::vector<int64_t>>(find_attr(n, key));
}
bool attr_bool(const Node& n, const std::string& key) { return std::get<bool>(find_attr(n, key)); }
const std::string& attr_str(const Node& n, const std::string& key) {
  return std::get<std::string>(find_attr(n, key));
}
bool attr_is_none(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() || std::holds_alternative<std::monostate>(it->second);
}

}  // namespace kevo
