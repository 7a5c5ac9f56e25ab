// The generic family's program: each graph node as maps, reductions and scans (generic_ir.h).
// Elementwise ops and views here; reductions, normalisations, products, convolutions, pooling
// and losses in generic/ops.cpp.
#include <sstream>
#include <stdexcept>

#include "lower/generic/dims.h"
#include "lower/generic/ops.h"

namespace kevo::lower::generic {

int64_t Value::numel(size_t w) const {
  int64_t n = 1;
  for (int64_t s : sizes[w]) n *= s;
  return n;
}

std::string Code::fresh(const std::string& stem) { return stem + std::to_string(next_++); }

std::string Code::index(const std::vector<std::string>& entries) {
  const std::string name = fresh("j");
  std::string s = "Idx " + name + "[" + std::to_string(std::max<size_t>(entries.size(), 1)) + "] = {";
  for (size_t d = 0; d < entries.size(); ++d) s += (d ? ", " : "") + std::string("(Idx)(") + entries[d] + ")";
  if (entries.empty()) s += "0";
  line(s + "};");
  return name;
}

std::string Code::broadcast(int u, const std::string& i, int r) {
  const Value& uv = value(u);
  std::vector<std::string> e;
  for (int d = 0; d < uv.rank(); ++d) {
    bool one = true;
    for (const auto& s : uv.sizes) one = one && s[static_cast<size_t>(d)] == 1;
    e.push_back(one ? "0" : i + "[" + std::to_string(r - uv.rank() + d) + "]");
  }
  return index(e);
}

std::string Code::flat(int v, const std::string& i) const {
  const Value& vv = value(v);
  if (vv.rank() == 0) return "(Idx)0";
  std::string s = i + "[0]";
  for (int d = 1; d < vv.rank(); ++d) s = "(" + s + ") * " + dim(v, d) + " + " + i + "[" + std::to_string(d) + "]";
  return s;
}

std::string Code::unflat_dims(const std::vector<std::string>& dims, const std::string& f) {
  const std::string name = fresh("j"), rest = fresh("f");
  line("Idx " + name + "[" + std::to_string(std::max<size_t>(dims.size(), 1)) + "];");
  if (dims.empty()) {
    line(name + "[0] = 0;");
    return name;
  }
  line("Idx " + rest + " = " + f + ";");
  for (int d = static_cast<int>(dims.size()) - 1; d > 0; --d) {
    const std::string D = size(dims[static_cast<size_t>(d)]);
    line(name + "[" + std::to_string(d) + "] = " + rest + " % " + D + "; " + rest + " /= " + D + ";");
  }
  line(name + "[0] = " + rest + ";");
  return name;
}

std::string Code::unflat(int v, const std::string& f) { return unflat_dims(value(v).dims, f); }

namespace {

std::string num(double v) { return float_literal(v); }

// Elementwise ops the shared emitter does not know (comparisons, selection, casts).
std::string extra_elementwise(const Node& n, const std::vector<std::string>& a) {
  const std::string& op = n.op;
  auto cmp = [&](const char* o) { return "(" + a[0] + " " + o + " " + a[1] + " ? 1.f : 0.f)"; };
  if (op == "eq") return cmp("==");
  if (op == "ne") return cmp("!=");
  if (op == "lt") return cmp("<");
  if (op == "le") return cmp("<=");
  if (op == "gt") return cmp(">");
  if (op == "ge") return cmp(">=");
  if (op == "where") return "(" + a[0] + " != 0.f ? " + a[1] + " : " + a[2] + ")";
  if (op == "floor_divide") return "floorf(" + a[0] + " / " + a[1] + ")";
  if (op == "remainder") return "(" + a[0] + " - " + a[1] + " * floorf(" + a[0] + " / " + a[1] + "))";
  if (op == "celu") {
    const std::string al = num(attr_float(n, "alpha"));
    return "(" + a[0] + " > 0.f ? " + a[0] + " : " + al + " * expm1f(" + a[0] + " / " + al + "))";
  }
  return "";
}

// A cast to dtype t of a float value (rounded as the narrower type would hold it).
std::string cast_to(const std::string& e, const std::string& t) {
  if (t == "bfloat16") return "kevo::round_bf16(" + e + ")";
  if (t == "float16") return "kevo::round_half(" + e + ")";
  if (t == "int64" || t == "int32") return "truncf(" + e + ")";
  if (t == "bool") return "(" + e + " != 0.f ? 1.f : 0.f)";
  return e;
}

}  // namespace

ProgramBuilder::ProgramBuilder(const TaskGraph& tg) : tg_(tg), dims_(std::make_unique<Dims>(tg)) {
  const Graph& g = tg.graph();
  slot_.assign(g.values.size(), -1);
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    Value v = like(g.inputs[i], "input " + tg.task().inputs[i].name);
    v.kind = Kind::Input;
    v.input = static_cast<int>(i);
    slot_[static_cast<size_t>(g.inputs[i])] = add(std::move(v));
  }
}

ProgramBuilder::~ProgramBuilder() = default;

Value ProgramBuilder::like(int graph_value, const std::string& what) const {
  Value v;
  v.what = what;
  v.dtype = tg_.graph().values[static_cast<size_t>(graph_value)].dtype;
  v.dims = dims_->of(graph_value);
  for (size_t w = 0; w < tg_.workloads(); ++w) v.sizes.push_back(tg_.graph(w).values[static_cast<size_t>(graph_value)].shape);
  return v;
}

Value ProgramBuilder::shaped(const Value& base, const std::vector<std::string>& dims,
                             const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& size) const {
  Value v;
  v.dtype = DType::Float32;
  v.dims = dims;
  for (const auto& s : base.sizes) v.sizes.push_back(size(s));
  return v;
}

int ProgramBuilder::add(Value v) {
  prog_.values.push_back(std::move(v));
  return static_cast<int>(prog_.values.size()) - 1;
}

int ProgramBuilder::of(int graph_value) const {
  if (graph_value < 0) return -1;
  const int s = slot_[static_cast<size_t>(graph_value)];
  if (s < 0) throw std::runtime_error("value %" + std::to_string(graph_value) + " is used before it is made");
  return s;
}

const Value& ProgramBuilder::value(int v) const { return prog_.values[static_cast<size_t>(v)]; }

Program ProgramBuilder::build() {
  const Graph& g = tg_.graph();
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    std::vector<int> made = lower_node(node);
    if (made.size() != node.outputs.size()) throw std::runtime_error("the generic family does not lower " + node.op + " yet");
    for (size_t o = 0; o < made.size(); ++o) slot_[static_cast<size_t>(node.outputs[o])] = made[o];
  }
  for (int o : g.outputs) prog_.outputs.push_back(of(o));
  return std::move(prog_);
}

std::vector<int> ProgramBuilder::lower_node(const Node& n) {
  if (is_elementwise(n) || !extra_elementwise(n, {"a", "b", "c"}).empty() || n.op == "cast") return {elementwise(n)};
  std::vector<int> out = view(n);
  if (!out.empty()) return out;
  return lower_op(*this, n);
}

int ProgramBuilder::elementwise(const Node& n) {
  const Graph& g = tg_.graph();
  Value v = like(n.outputs[0], "%" + std::to_string(n.outputs[0]) + " " + n.op);
  v.kind = Kind::Map;
  v.elementwise = true;
  for (int in : n.inputs) v.operands.push_back(of(in));
  const int r = v.rank();
  const std::vector<int> ops = v.operands;
  const int id = static_cast<int>(&n - &g.nodes[0]);
  v.map = [&g, id, ops, r](Code& c, const std::string& i) {
    const Node& n = g.nodes[static_cast<size_t>(id)];
    // Each operand read once into a name: the emitted expressions use an operand several times.
    std::vector<std::string> args;
    for (int u : ops) {
      const std::string x = c.fresh("x");
      c.line("const float " + x + " = " + c.read(u, c.broadcast(u, i, r)) + ";");
      args.push_back(x);
    }
    if (n.op == "cast") return cast_to(args[0], attr_str(n, "dtype"));
    std::string e = extra_elementwise(n, args);
    if (!e.empty()) return e;
    // The shared emitter, on this one node, its operands named by the reads above.
    Region region;
    region.ok = true;
    region.target = n.outputs[0];
    region.nodes = {id};
    region.leaves = n.inputs;
    std::map<int, std::string> leaf;
    for (size_t k = 0; k < n.inputs.size(); ++k) leaf[n.inputs[k]] = args[k];
    std::string result;
    std::string stmts = emit_region(g, region, [&](int u) { return leaf.at(u); }, "    ", &result);
    std::istringstream lines(stmts);
    for (std::string l; std::getline(lines, l);) {
      const std::string name = c.fresh("e");
      // Rename the emitter's vN so that inlined chains never declare a name twice.
      const std::string var = "v" + std::to_string(n.outputs[0]);
      size_t at = l.find("const float " + var + " =");
      if (at != std::string::npos) l.replace(at + 12, var.size(), name), result = name;
      c.line(l.substr(l.find_first_not_of(' ')));
    }
    return result;
  };
  return add(std::move(v));
}

}  // namespace kevo::lower::generic
