// Op graph: value bookkeeping, text form, FLOP count and attribute access.
#include "core/graph.h"

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

int64_t Graph::matmul_conv_flops() const {
  int64_t flops = 0;
  for (const Node& n : nodes) {
    if (n.op == "matmul" || n.op == "bmm" || n.op == "linear") {
      // Output elements times the contracted length, two FLOPs per multiply-add.
      const Shape& a = values[n.inputs[0]].shape;
      int64_t k = a.empty() ? 1 : a.back();
      flops += 2 * numel(values[n.outputs[0]].shape) * k;
    } else if (n.op == "conv2d") {
      const Shape& w = values[n.inputs[1]].shape;  // [Cout, Cin/groups, kh, kw]
      int64_t per_out = w.size() == 4 ? w[1] * w[2] * w[3] : 0;
      flops += 2 * numel(values[n.outputs[0]].shape) * per_out;
    }
  }
  return flops;
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
