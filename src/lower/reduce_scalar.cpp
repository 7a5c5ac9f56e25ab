// Family "reduce_scalar": epilogue(reduce every element of prologue(inputs)) to one value (sums,
// means, extrema, norms and the pointwise losses), in two deterministic stages.
#include <nlohmann/json.hpp>

#include <cmath>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

#include "lower/broadcast_leaf.h"
#include "lower/families.h"

namespace kevo::lower {

namespace {

// The reduction: the operator of common.cuh, how an element becomes the value reduced, and how
// the result is finished.
struct Reduction {
  int node = -1, output = -1;
  std::vector<int> operands;  // the values the prologue produces (two for losses)
  int domain = -1;            // the value whose shape is the reduced domain
  std::string op;             // "kevo::Sum"
  std::string what;           // "mean of every element"
  std::string value;          // the value reduced from the operands' expressions $0, $1
  std::string finish;         // from `s` (and `count`)
};

std::string attr_text(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end() || !std::holds_alternative<std::string>(it->second)) return "";
  return std::get<std::string>(it->second);
}

bool same_shape_everywhere(const TaskGraph& tg, int a, int b) {
  for (size_t w = 0; w < tg.workloads(); ++w)
    if (tg.graph(w).values[static_cast<size_t>(a)].shape != tg.graph(w).values[static_cast<size_t>(b)].shape) return false;
  return true;
}

bool classify(const TaskGraph& tg, int p, Reduction& r) {
  const Graph& g = tg.graph();
  const Node& n = g.nodes[static_cast<size_t>(p)];
  if (n.outputs.size() != 1) return false;
  for (int in : n.inputs)
    if (in < 0 || g.values[static_cast<size_t>(in)].dtype != DType::Float32) return false;
  r.node = p;
  r.output = n.outputs[0];
  r.op = "kevo::Sum";
  r.finish = "s";
  const std::string& op = n.op;
  if (op == "mse_loss" || op == "smooth_l1_loss") {
    if (n.inputs.size() != 2) return false;
    const std::string red = attr_text(n, "reduction");
    if (red != "mean" && red != "sum") return false;
    r.operands = {n.inputs[0], n.inputs[1]};
    // The domain is the broadcast shape of the two: one of them must have it.
    bool first = true, second = true;
    for (size_t w = 0; w < tg.workloads(); ++w) {
      const Shape &a = tg.graph(w).values[static_cast<size_t>(n.inputs[0])].shape,
                  &b = tg.graph(w).values[static_cast<size_t>(n.inputs[1])].shape;
      first = first && a.size() >= b.size() && numel(a) >= numel(b);
      second = second && b.size() >= a.size() && numel(b) >= numel(a);
    }
    if (!first && !second) return false;
    r.domain = first ? n.inputs[0] : n.inputs[1];
    if (op == "mse_loss") {
      r.value = "($0 - $1) * ($0 - $1)";
    } else {
      const double beta = attr_float_or(n, "beta", 1.0);
      if (beta == 0) {
        r.value = "fabsf($0 - $1)";
      } else {
        const std::string b = float_literal(beta);
        r.value = "(fabsf($0 - $1) < " + b + " ? 0.5f * ($0 - $1) * ($0 - $1) / " + b + " : fabsf($0 - $1) - " +
                  float_literal(0.5 * beta) + ")";
      }
    }
    if (red == "mean") r.finish = "s / (float)count";
    r.what = red + " of " + op + " over every element";
    return true;
  }
  if (n.inputs.size() != 1) return false;
  const int in = n.inputs[0];
  r.operands = {in};
  r.domain = in;
  r.value = "$0";
  // Every dim of the input is reduced.
  auto it = n.attrs.find("dim");
  if (it == n.attrs.end()) return false;
  if (const auto* dims = std::get_if<std::vector<int64_t>>(&it->second)) {
    std::vector<int64_t> d = *dims;
    for (int64_t& x : d)
      if (x < 0) x += tg.rank(in);
    std::sort(d.begin(), d.end());
    for (size_t i = 0; i < d.size(); ++i)
      if (d[i] != static_cast<int64_t>(i)) return false;
    if (static_cast<int>(d.size()) != tg.rank(in) && !d.empty()) return false;
  } else if (!std::holds_alternative<std::monostate>(it->second)) {
    return false;
  }
  r.what = op + " of every element";
  if (op == "sum") {
  } else if (op == "mean") {
    r.finish = "s / (float)count";
  } else if (op == "prod") {
    r.op = "kevo::Prod";
  } else if (op == "amax") {
    r.op = "kevo::Max";
  } else if (op == "amin") {
    r.op = "kevo::Min";
  } else if (op == "norm") {
    const double pn = attr_float_or(n, "p", 2.0);
    r.what = "norm (p = " + float_literal(pn) + ") of every element";
    NormParts parts = p_norm(pn);
    r.op = "kevo::" + parts.combine, r.finish = parts.finish;
    r.value.clear();  // this family names its operands $0, $1, ...: the norm reads $0
    for (char c : parts.transform) r.value += c == '$' ? std::string("$0") : std::string(1, c);
  } else {
    return false;
  }
  return true;
}

using Leaf = BroadcastLeaf;

bool reserved(const std::string& s) {
  static const std::set<std::string> names = {"p", "i", "k", "v", "s", "r", "n", "count", "out", "partial", "parts",
                                              "Op", "Params", "Problem", "kVec", "kCache", "float", "int", "long",
                                              "const", "static", "struct", "return", "for", "if", "else", "unsigned"};
  static const std::regex generated("(v|d|len_.*|s_.*|at_.*)[0-9]*");
  return names.count(s) || std::regex_match(s, generated);
}

class ReduceScalarSpace : public DesignSpace {
 public:
  ReduceScalarSpace(TaskGraphPtr tg, Reduction red, Region pro, Region epi, std::vector<Leaf> leaves, bool narrow,
                    std::vector<Facts> facts)
      : DesignSpace("reduce_scalar", red.what + ": a partial per block of a fixed grid, then one block combines them in order",
                    "reduce_scalar", std::move(facts)),
        tg_(std::move(tg)), red_(std::move(red)), pro_(std::move(pro)), epi_(std::move(epi)),
        leaves_(std::move(leaves)), narrow_(narrow) {}

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    const std::vector<std::pair<std::string, std::string>> sizes = size_fields();
    const int64_t waves = v["kWaves"], fixed = v["kBlocks"];
    const std::string grid = waves ? std::to_string(waves) + " * num_sms" : std::to_string(fixed);
    std::ostringstream comment;
    comment << "Generated by kevo from template family 'reduce_scalar' (space " << id() << ").\nGenome: " << g.to_string()
            << " =";
    for (const Knob& kn : knobs()) comment << " " << kn.name << " " << v[kn.name] << (&kn == &knobs().back() ? "." : ",");
    return candidate_text(task, task.name + "_reduce_scalar", plan(v, sizes, grid), comment.str(),
                          candidate_templates(manifest()) + "\n" + problem(sizes) + load_function() + store_function() +
                              kernels(g, v, sizes));
  }

 private:
  std::string n() const { return tg_->product(red_.domain, 0, tg_->rank(red_.domain)); }

  // Params fields and their plan expressions.
  std::vector<std::pair<std::string, std::string>> size_fields() const {
    const int dom = red_.domain, rank = tg_->rank(dom);
    std::vector<std::pair<std::string, std::string>> sizes;
    for (int d = lowest_general_dim(leaves_, rank); d < rank; ++d) sizes.emplace_back("d" + std::to_string(d), tg_->dim(dom, d));
    for (const Leaf& l : leaves_) {
      if (l.kind == Leaf::Trailing) sizes.emplace_back("len_" + l.field, l.span);
      for (size_t k = 0; k < l.strides.size(); ++k) sizes.emplace_back("s_" + l.field + "_" + std::to_string(k), l.strides[k]);
    }
    return sizes;
  }

  // The Problem struct's head: the reduction, Params and the general leaves' index functions.
  std::string problem(const std::vector<std::pair<std::string, std::string>>& sizes) const {
    const int dom = red_.domain, rank = tg_->rank(dom);
    std::ostringstream b;
    b << "// The reduction and its fused prologue and epilogue, generated from the reference's op graph\n"
         "// (first workload):\n";
    std::istringstream ref(tg_->graph().to_string());
    for (std::string line; std::getline(ref, line);) b << "//   " << line << "\n";
    b << "// The domain reduced: the " << n() << " elements of " << shape_text(dom) << ".\n";
    b << "struct Problem {\n  using Op = " << red_.op << ";  // " << red_.what << "\n\n  struct Params {\n";
    for (const Leaf& l : leaves_) b << "    const float* __restrict__ " << l.field << ";\n";
    for (const auto& [f, e] : sizes) b << "    long long " << f << ";  // " << e << "\n";
    b << "  };\n\n";
    for (const Leaf& l : leaves_)
      if (l.kind == Leaf::General) b << leaf_index_function("index_" + l.field, "d", "s_", l, rank) << "\n";
    return b.str();
  }

  std::string load_function() const {
    const Graph& gr = tg_->graph();
    std::ostringstream b;
    b << "  // The values reduced at flat indices [i, i + kVec) of the domain.\n";
    b << "  template <int kVec, kevo::LoadHint kCache>\n";
    b << "  static __device__ __forceinline__ void load(const Params& p, long long i, float (&v)[kVec]) {\n";
    for (const Leaf& l : leaves_) {
      b << "    float " << l.local << "[kVec];\n";
      if (l.kind == Leaf::Full) {
        b << "    kevo::load_hinted<kVec, kCache>(" << l.local << ", p." << l.field << " + i);\n";
      } else if (l.kind == Leaf::Trailing) {
        // The vector does not cross the end of the span: the manifest keeps span % kVec == 0.
        b << "    kevo::load_vec<kVec>(" << l.local << ", p." << l.field << " + "
          << (narrow_ ? "(unsigned)i % (unsigned)p.len_" + l.field + ");  // 32-bit: n < 2^32 in every workload\n"
                      : "i % p.len_" + l.field + ");\n");
      } else {
        b << "#pragma unroll\n    for (int k = 0; k < kVec; ++k) " << l.local << "[k] = p." << l.field << "[index_"
          << l.field << "(p, i + k)];\n";
      }
    }
    b << "#pragma unroll\n    for (int k = 0; k < kVec; ++k) {\n";
    // Both operands' regions as one (a node they share is computed once).
    std::vector<std::string> operand(red_.operands.size());
    std::string merged_result;
    b << emit_region(gr, pro_, [&](int leaf) { return local_of(leaf) + "[k]"; }, "      ", &merged_result);
    for (size_t i = 0; i < red_.operands.size(); ++i) {
      Region one = elementwise_region(gr, red_.operands[i], [&](int x) { return tg_->input_index(x) >= 0; });
      emit_region(gr, one, [&](int leaf) { return local_of(leaf) + "[k]"; }, "", &operand[i]);
    }
    std::string value = red_.value;
    for (size_t i = 0; i < operand.size(); ++i)
      for (size_t at; (at = value.find("$" + std::to_string(i))) != std::string::npos;) value.replace(at, 2, operand[i]);
    b << "      v[k] = " << value << ";\n    }\n  }\n\n";
    return b.str();
  }

  std::string store_function() const {
    std::ostringstream b;
    b << "  // The output from the reduced value s of count elements: finish, then the epilogue.\n";
    b << "  static __device__ __forceinline__ void store(float* out, float s, long long count) {\n";
    b << "    const float r = " << red_.finish << ";\n";
    std::string res;
    b << emit_region(tg_->graph(), epi_, [&](int) { return std::string("r"); }, "    ", &res);
    b << "    *out = " << res << ";\n  }\n};\n\n";
    return b.str();
  }

  // Stage 1 (partials per block) and stage 2 (one block combines them in order).
  std::string kernels(const Genome& g, std::map<std::string, int64_t>& v,
                      const std::vector<std::pair<std::string, std::string>>& sizes) const {
    const int64_t block = v["kBlock"], vec = v["kVec"], items = v["kItems"], waves = v["kWaves"], fixed = v["kBlocks"];
    std::ostringstream k;
    k << "// Stage 1: " << (waves ? std::to_string(waves) + " blocks per SM" : std::to_string(fixed) + " blocks") << " of "
      << block << " threads, each thread " << items << " loads of " << vec << " in flight.\n";
    k << "extern \"C\" __global__ void __launch_bounds__(" << block << ") kevo_reduce_scalar_partials(";
    std::vector<std::string> params, fields;
    for (const Leaf& l : leaves_) params.push_back("const float* " + l.field), fields.push_back(l.field);
    params.push_back("float* partial");
    params.push_back("long long n");
    for (const auto& s : sizes) params.push_back("long long " + s.first), fields.push_back(s.first);
    for (size_t i = 0; i < params.size(); ++i) k << (i ? ", " : "") << params[i];
    k << ") {\n  const Problem::Params p{";
    for (size_t i = 0; i < fields.size(); ++i) k << (i ? ", " : "") << fields[i];
    k << "};\n  kevo::reduce_scalar_partials<" << block << ", " << vec << ", " << items << ", " << enumerator(g, "kCache")
      << ", Problem>(p, n, partial);\n}\n\n";
    k << "// Stage 2: one block combines the stage-1 partials in order.\n";
    k << "extern \"C\" __global__ void __launch_bounds__(" << block
      << ") kevo_reduce_scalar_finish(const float* partial, int parts, float* out, long long count) {\n";
    k << "  kevo::reduce_scalar_finish<" << block << ", Problem>(partial, parts, out, count);\n}\n";
    return k.str();
  }

  nlohmann::json plan(std::map<std::string, int64_t>& v, const std::vector<std::pair<std::string, std::string>>& sizes,
                      const std::string& grid) const {
    const Task& task = tg_->task();
    const int64_t block = v["kBlock"];
    std::string scratch = "partials";
    for (const auto* list : {&task.inputs, &task.outputs})
      for (const TensorDecl& t : *list)
        if (t.name == scratch) scratch = "kevo_partials";
    nlohmann::json args1 = nlohmann::json::array();
    for (const Leaf& l : leaves_) args1.push_back(task.inputs[static_cast<size_t>(tg_->input_index(l.value))].name);
    args1.push_back(scratch);
    args1.push_back({{"int64", n()}});
    for (const auto& s : sizes) args1.push_back({{"int64", s.second}});
    nlohmann::json args2 = nlohmann::json::array();
    args2.push_back(scratch);
    args2.push_back({{"int", grid}});
    args2.push_back(task.outputs.front().name);
    args2.push_back({{"int64", n()}});
    nlohmann::json buffer = nlohmann::json::object();
    buffer["dtype"] = "float32";
    buffer["shape"] = nlohmann::json::array({grid});
    nlohmann::json step1 = {{"kernel", "kevo_reduce_scalar_partials"}, {"grid", {grid}}, {"block", {block}}, {"args", args1}};
    nlohmann::json step2 = {{"kernel", "kevo_reduce_scalar_finish"}, {"grid", {1}}, {"block", {block}}, {"args", args2}};
    nlohmann::json plan = nlohmann::json::object();
    plan["buffers"] = nlohmann::json::object();
    plan["buffers"][scratch] = buffer;
    plan["steps"] = nlohmann::json::array({step1, step2});
    return plan;
  }

  std::string shape_text(int v) const {
    std::string s = "[";
    for (int d = 0; d < tg_->rank(v); ++d) s += (d ? ", " : "") + tg_->dim(v, d);
    return s + "]";
  }
  std::string local_of(int v) const {
    for (const Leaf& l : leaves_)
      if (l.value == v) return l.local;
    return "?";
  }
  TaskGraphPtr tg_;
  Reduction red_;
  Region pro_, epi_;
  std::vector<Leaf> leaves_;
  bool narrow_;
};

std::vector<std::unique_ptr<DesignSpace>> lower(const TaskGraphPtr& tgp) {
  std::vector<std::unique_ptr<DesignSpace>> out;
  const TaskGraph& tg = *tgp;
  const Graph& g = tg.graph();
  if (g.outputs.size() != 1 || tg.task().outputs.size() != 1) return out;
  const int o = tg.output();
  if (g.values[static_cast<size_t>(o)].dtype != DType::Float32) return out;
  for (size_t w = 0; w < tg.workloads(); ++w)
    if (numel(tg.graph(w).values[static_cast<size_t>(o)].shape) != 1) return out;
  int red_node = -1;
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    if (is_elementwise(g.nodes[p])) continue;
    if (red_node >= 0) return out;
    red_node = static_cast<int>(p);
  }
  Reduction red;
  if (red_node < 0 || !classify(tg, red_node, red)) return out;

  // The prologue: every operand's elementwise region over the inputs, merged.
  auto is_input = [&](int v) { return tg.input_index(v) >= 0; };
  Region pro;
  pro.ok = true;
  std::set<int> nodes;
  for (int x : red.operands) {
    Region r = elementwise_region(g, x, is_input);
    if (!r.ok) return out;
    nodes.insert(r.nodes.begin(), r.nodes.end());
    for (int l : r.leaves)
      if (std::find(pro.leaves.begin(), pro.leaves.end(), l) == pro.leaves.end()) pro.leaves.push_back(l);
    if (pro.target < 0) pro.target = x;
  }
  pro.nodes.assign(nodes.begin(), nodes.end());
  Region epi = elementwise_region(g, o, [&](int v) { return v == red.output; });
  if (!epi.ok || pro.leaves.empty()) return out;
  for (int x : red.operands)  // losses: both operands broadcast to the domain
    if (!same_shape_everywhere(tg, x, red.domain) && x != red.domain) {
      for (size_t w = 0; w < tg.workloads(); ++w) {
        const Shape &a = tg.graph(w).values[static_cast<size_t>(x)].shape, &d = tg.graph(w).values[static_cast<size_t>(red.domain)].shape;
        for (size_t i = 0; i < a.size(); ++i)
          if (a[a.size() - 1 - i] != 1 && a[a.size() - 1 - i] != d[d.size() - 1 - i]) return out;
      }
    }

  std::vector<Leaf> leaves;
  for (int v : pro.leaves) {
    Leaf l;
    if (!broadcast_leaf(tg, v, red.domain, l)) return out;
    l.field = ident(tg.task().inputs[static_cast<size_t>(tg.input_index(v))].name);
    if (reserved(l.field)) l.field = "in_" + l.field;
    l.local = l.field;
    leaves.push_back(std::move(l));
  }
  std::vector<Facts> facts;
  bool narrow = true;
  for (size_t w = 0; w < tg.workloads(); ++w) {
    const int64_t n = numel(tg.graph(w).values[static_cast<size_t>(red.domain)].shape);
    int64_t align = n;
    for (const Leaf& l : leaves)
      if (l.kind == Leaf::Trailing) align = std::gcd(align, AxisExpr::parse(l.span).eval(tg.task().axis_values(tg.task().workloads[w])));
    narrow = narrow && n < (int64_t{1} << 32);
    facts.push_back({{"n", n}, {"align", align}});
  }
  try {
    tg.product(red.domain, 0, tg.rank(red.domain));
  } catch (const std::runtime_error&) {
    return out;
  }
  const std::string n = tg.product(red.domain, 0, tg.rank(red.domain));
  std::vector<std::string> align{n};  // gcd'd with every trailing leaf's span
  for (const Leaf& l : leaves)
    if (l.kind == Leaf::Trailing) align.push_back(l.span);
  out.push_back(std::make_unique<ReduceScalarSpace>(tgp, std::move(red), std::move(pro), std::move(epi), std::move(leaves),
                                                    narrow, std::move(facts)));
  out.back()->express("n", n);
  out.back()->express_gcd("align", align);
  if (narrow) out.back()->assume({n, "<", "4294967296", "32-bit element indices (the workloads all had n < 2^32)"});
  return out;
}

}  // namespace

std::vector<std::unique_ptr<DesignSpace>> lower_reduce_scalar(const TaskGraphPtr& tg) { return lower(tg); }

}  // namespace kevo::lower
