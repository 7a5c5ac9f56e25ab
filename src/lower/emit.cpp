// The elementwise emitter: graph nodes to float expressions, one statement per node, written
// the way a person would write the fused body.
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "lower/kit.h"

namespace kevo::lower {

// A 0-d tensor filled with a float (`torch.tensor(0.5)`, lowered to `full`) is written as the literal
// it is, as a Python number's `constant` node is.
bool is_literal_node(const Node& n) {
  if (n.op == "constant") return true;
  if (n.op != "full" || !n.inputs.empty()) return false;
  auto value = n.attrs.find("value");
  return value != n.attrs.end() && std::holds_alternative<double>(value->second) && attr_ints(n, "shape").empty();
}

namespace {

const std::set<std::string>& unary_ops() {
  static const std::set<std::string> ops = {"relu",  "gelu",    "sqrt",     "rsqrt",      "tanh",    "exp",
                                            "log",   "abs",     "neg",      "sin",        "cos",     "erf",
                                            "sigmoid", "silu",  "clamp",    "leaky_relu", "softplus", "elu",
                                            "hardtanh", "hardsigmoid", "hardswish", "mish", "softsign", "selu"};
  return ops;
}
const std::set<std::string>& binary_ops() {
  static const std::set<std::string> ops = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};
  return ops;
}

double number(const AttrValue& a, double fallback) {
  if (const auto* d = std::get_if<double>(&a)) return *d;
  if (const auto* i = std::get_if<int64_t>(&a)) return static_cast<double>(*i);
  if (const auto* b = std::get_if<bool>(&a)) return *b ? 1.0 : 0.0;
  return fallback;
}

double attr_or(const Node& n, const std::string& key, double fallback) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() ? fallback : number(it->second, fallback);
}

bool has_number(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  return it != n.attrs.end() && (std::holds_alternative<double>(it->second) || std::holds_alternative<int64_t>(it->second));
}

// A constant node's value, when the operand is one.
bool constant_of(const Graph& g, int v, double& out) {
  int p = g.values[static_cast<size_t>(v)].producer;
  if (p < 0 || !is_literal_node(g.nodes[static_cast<size_t>(p)])) return false;
  out = attr_or(g.nodes[static_cast<size_t>(p)], "value", 0.0);
  return true;
}

std::string unary(const Node& n, const std::string& a) {
  const std::string& op = n.op;
  if (op == "relu") return "fmaxf(" + a + ", 0.f)";
  if (op == "gelu") {
    auto it = n.attrs.find("approximate");
    bool tanh = it != n.attrs.end() && std::holds_alternative<std::string>(it->second) &&
                std::get<std::string>(it->second) == "tanh";
    if (tanh) return "0.5f * " + a + " * (1.f + tanhf(0.7978845608028654f * (" + a + " + 0.044715f * " + a + " * " + a + " * " + a + ")))";
    return "0.5f * " + a + " * (1.f + erff(" + a + " * 0.7071067811865476f))";
  }
  if (op == "sqrt") return "sqrtf(" + a + ")";
  if (op == "rsqrt") return "rsqrtf(" + a + ")";
  if (op == "tanh") return "tanhf(" + a + ")";
  if (op == "exp") return "expf(" + a + ")";
  if (op == "log") return "logf(" + a + ")";
  if (op == "abs") return "fabsf(" + a + ")";
  if (op == "neg") return "-" + a;
  if (op == "sin") return "sinf(" + a + ")";
  if (op == "cos") return "cosf(" + a + ")";
  if (op == "erf") return "erff(" + a + ")";
  if (op == "sigmoid") return "1.f / (1.f + expf(-" + a + "))";
  if (op == "silu") return a + " / (1.f + expf(-" + a + "))";
  if (op == "softsign") return a + " / (1.f + fabsf(" + a + "))";
  if (op == "mish") return a + " * tanhf(" + a + " > 20.f ? " + a + " : log1pf(expf(" + a + ")))";
  if (op == "softplus") {
    double beta = attr_or(n, "beta", 1.0), threshold = attr_or(n, "threshold", 20.0);
    std::string b = float_literal(beta);
    return "(" + a + " * " + b + " > " + float_literal(threshold) + " ? " + a + " : log1pf(expf(" + a + " * " + b + ")) / " + b + ")";
  }
  if (op == "elu") {
    double alpha = attr_or(n, "alpha", 1.0);
    return "(" + a + " > 0.f ? " + a + " : " + float_literal(alpha) + " * expm1f(" + a + "))";
  }
  if (op == "selu")
    return "1.0507009873554805f * (" + a + " > 0.f ? " + a + " : 1.6732632423543772f * expm1f(" + a + "))";
  if (op == "leaky_relu") return "(" + a + " > 0.f ? " + a + " : " + a + " * " + float_literal(attr_or(n, "negative_slope", 0.01)) + ")";
  if (op == "hardtanh")
    return "fminf(fmaxf(" + a + ", " + float_literal(attr_or(n, "min_val", -1.0)) + "), " + float_literal(attr_or(n, "max_val", 1.0)) + ")";
  if (op == "hardsigmoid") return "fminf(fmaxf(" + a + " / 6.f + 0.5f, 0.f), 1.f)";
  if (op == "hardswish") return a + " * fminf(fmaxf(" + a + " + 3.f, 0.f), 6.f) / 6.f";
  if (op == "clamp") {
    std::string e = a;
    if (has_number(n, "min")) e = "fmaxf(" + e + ", " + float_literal(attr_or(n, "min", 0)) + ")";
    if (has_number(n, "max")) e = "fminf(" + e + ", " + float_literal(attr_or(n, "max", 0)) + ")";
    return e;
  }
  return "";
}

}  // namespace

std::string float_literal(double v) {
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".";
  return s + "f";
}

NormParts p_norm(double p) {
  if (p == 2) return {"$ * $", "Sum", "sqrtf(s)"};
  if (p == 1) return {"fabsf($)", "Sum", "s"};
  if (std::isinf(p)) return {"fabsf($)", p > 0 ? "Max" : "Min", "s"};
  if (p == 0) return {"($ != 0.f ? 1.f : 0.f)", "Sum", "s"};
  return {"powf(fabsf($), " + float_literal(p) + ")", "Sum", "powf(s, " + float_literal(1.0 / p) + ")"};
}

bool is_elementwise(const Node& n) {
  if (n.outputs.size() != 1) return false;
  if (is_literal_node(n)) return true;
  if (unary_ops().count(n.op)) return n.inputs.size() == 1;
  if (binary_ops().count(n.op)) return n.inputs.size() == 2;
  return false;
}

Region elementwise_region(const Graph& g, int target, const std::function<bool(int)>& stop, bool half_values) {
  Region r;
  std::set<int> seen_nodes, seen_leaves;
  std::function<bool(int)> visit = [&](int v) {
    if (stop(v)) {
      if (seen_leaves.insert(v).second) r.leaves.push_back(v);
      return true;
    }
    int p = g.values[static_cast<size_t>(v)].producer;
    if (p < 0) return false;
    const Node& n = g.nodes[static_cast<size_t>(p)];
    const DType t = g.values[static_cast<size_t>(v)].dtype;
    const bool floating = t == DType::Float32 || (half_values && (t == DType::BFloat16 || t == DType::Float16));
    if (!is_elementwise(n) || !floating) return false;
    if (seen_nodes.count(p)) return true;
    for (int in : n.inputs)
      if (in < 0 || !visit(in)) return false;
    seen_nodes.insert(p);
    return true;
  };
  r.target = target;
  r.ok = visit(target);
  if (r.ok) r.nodes.assign(seen_nodes.begin(), seen_nodes.end());  // node ids ascend in graph order
  return r;
}

std::string emit_region(const Graph& g, const Region& region, const std::function<std::string(int)>& leaf,
                        const std::string& indent, std::string* result) {
  std::ostringstream s;
  std::map<int, std::string> name;
  for (int v : region.leaves) name[v] = leaf(v);
  for (int p : region.nodes) {
    const Node& n = g.nodes[static_cast<size_t>(p)];
    int out = n.outputs.front();
    std::string var = "v" + std::to_string(out);
    if (is_literal_node(n)) {
      name[out] = float_literal(attr_or(n, "value", 0.0));
      continue;
    }
    std::string e;
    if (n.inputs.size() == 1) {
      e = unary(n, name.at(n.inputs[0]));
    } else {
      const std::string &a = name.at(n.inputs[0]), &b = name.at(n.inputs[1]);
      double k = 0;
      if (n.op == "add") e = a + " + " + (has_number(n, "alpha") ? float_literal(attr_or(n, "alpha", 1)) + " * " : "") + b;
      if (n.op == "sub") e = a + " - " + (has_number(n, "alpha") ? float_literal(attr_or(n, "alpha", 1)) + " * " : "") + b;
      if (n.op == "mul") e = a + " * " + b;
      if (n.op == "div") e = a + " / " + b;
      if (n.op == "maximum") e = "fmaxf(" + a + ", " + b + ")";
      if (n.op == "minimum") e = "fminf(" + a + ", " + b + ")";
      if (n.op == "pow") {
        if (constant_of(g, n.inputs[1], k) && k == 2) e = a + " * " + a;
        else if (constant_of(g, n.inputs[1], k) && k == 3) e = a + " * " + a + " * " + a;
        else if (constant_of(g, n.inputs[1], k) && k == 0.5) e = "sqrtf(" + a + ")";
        else e = "powf(" + a + ", " + b + ")";
      }
    }
    s << indent << "const float " << var << " = " << e << ";\n";
    name[out] = var;
  }
  if (result) *result = name.at(region.target);
  return s.str();
}

}  // namespace kevo::lower
