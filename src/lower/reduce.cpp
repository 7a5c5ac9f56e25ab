// Family "reduce": epilogue(reduce over one axis or adjacent axes(prologue(inputs))) with the
// input viewed as [outer, R, inner], on the rows layout (inner == 1) or the columns layout.
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

// What the reduction node computes, in terms of the template's operators.
struct Reduction {
  int node = -1, input = -1, output = -1;
  std::vector<int64_t> dims;   // reduced dims of the input, adjacent and ascending
  std::string op;              // "kevo::SumOp"
  std::string what;            // a comment: "sum over dim 1"
  std::string transform;       // applied to each reduced value (norms); "$" is the value
  std::string finish;          // the reduced value from the state `s`
  bool indices = false;        // argmax/argmin: the output is int64
  int state_bytes = 4;
};

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = dims.size() == 1 ? "dim " : "dims ";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s;
}

// The reduction a node performs, or false when the family does not implement it.
bool classify(const TaskGraph& tg, int p, Reduction& r) {
  const Graph& g = tg.graph();
  const Node& n = g.nodes[static_cast<size_t>(p)];
  if (n.inputs.size() != 1 || n.inputs[0] < 0) return false;
  r.node = p;
  r.input = n.inputs[0];
  const int rank = tg.rank(r.input);
  auto all_dims = [&] {
    r.dims.clear();
    for (int d = 0; d < rank; ++d) r.dims.push_back(d);
  };
  auto list_dims = [&] {
    auto it = n.attrs.find("dim");
    if (it == n.attrs.end()) return false;
    if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) r.dims = *v;
    else if (const auto* d = std::get_if<int64_t>(&it->second)) r.dims = {*d};
    else if (std::holds_alternative<std::monostate>(it->second)) all_dims();
    else return false;
    return true;
  };
  r.transform = "$";
  r.finish = "s";
  const std::string& op = n.op;
  if (op == "max_dim" || op == "min_dim") {
    // torch.max(x, dim): values or indices; one of them only (graphs have a single output).
    if (n.outputs.size() != 2 || !list_dims()) return false;
    const bool values = tg.uses(n.outputs[0]) > 0, idx = tg.uses(n.outputs[1]) > 0;
    if (values == idx) return false;
    r.output = n.outputs[values ? 0 : 1];
    r.indices = idx;
    const bool max = op == "max_dim";
    r.op = idx ? (max ? "kevo::ArgMaxOp" : "kevo::ArgMinOp") : (max ? "kevo::MaxOp" : "kevo::MinOp");
    r.what = std::string(max ? "max" : "min") + (idx ? " indices" : " values");
    if (idx) r.finish = "s.i", r.state_bytes = 8;
  } else {
    if (n.outputs.size() != 1 || !list_dims()) return false;
    r.output = n.outputs[0];
    r.what = op;
    if (op == "sum") {
      r.op = "kevo::SumOp";
    } else if (op == "mean") {
      r.op = "kevo::SumOp";
      r.finish = "s / (float)p.R";
    } else if (op == "prod") {
      r.op = "kevo::ProdOp";
    } else if (op == "amax") {
      r.op = "kevo::MaxOp";
    } else if (op == "amin") {
      r.op = "kevo::MinOp";
    } else if (op == "argmax" || op == "argmin") {
      r.op = op == "argmax" ? "kevo::ArgMaxOp" : "kevo::ArgMinOp";
      r.indices = true;
      r.finish = "s.i";
      r.state_bytes = 8;
    } else if (op == "logsumexp") {
      r.op = "kevo::LogSumExpOp";
      r.finish = "logf(s.s) + s.m";
      r.state_bytes = 8;
    } else if (op == "norm") {
      const double pn = attr_float_or(n, "p", 2.0);
      r.what = "norm (p = " + float_literal(pn) + ")";
      NormParts parts = p_norm(pn);
      r.transform = parts.transform, r.op = "kevo::" + parts.combine + "Op", r.finish = parts.finish;
    } else {
      return false;
    }
  }
  for (int64_t& d : r.dims)
    if (d < 0) d += rank;
  std::sort(r.dims.begin(), r.dims.end());
  if (r.dims.empty()) return false;
  for (size_t i = 1; i < r.dims.size(); ++i)
    if (r.dims[i] != r.dims[i - 1] + 1) return false;  // not adjacent: no [outer, R, inner] view
  r.what += " over " + dims_text(r.dims);
  if (g.values[static_cast<size_t>(r.input)].dtype != DType::Float32) return false;
  return true;
}

using Leaf = BroadcastLeaf;

// Names the generated code uses itself; an input so named is renamed "in_<name>".
bool reserved(const std::string& s) {
  static const std::set<std::string> names = {"p", "i", "k", "v", "o", "s", "r", "R", "outer", "inner", "Op",
                                              "Params", "Problem", "kVec", "kCache", "float", "int", "long",
                                              "const", "static", "struct", "return", "for", "if", "else", "unsigned"};
  static const std::regex generated("(v|pd|od|ps_.*|os_.*|plen_.*|olen_.*)[0-9]*");
  return names.count(s) || std::regex_match(s, generated);
}

class ReduceSpace : public DesignSpace {
 public:
  ReduceSpace(TaskGraphPtr tg, bool columns, Reduction red, Region pro, Region epi, std::vector<Leaf> pro_leaves,
              std::vector<Leaf> epi_leaves, std::vector<Facts> facts)
      : DesignSpace(columns ? "reduce_columns" : "reduce_rows",
                    columns ? red.what + " as columns: threads along the contiguous inner axis, R split per column"
                            : red.what + " as rows: a thread group per contiguous row of R",
                    "reduce", std::move(facts)),
        tg_(std::move(tg)), columns_(columns), red_(std::move(red)), pro_(std::move(pro)), epi_(std::move(epi)),
        pro_leaves_(std::move(pro_leaves)), epi_leaves_(std::move(epi_leaves)) {}

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    using Sizes = std::vector<std::pair<std::string, std::string>>;
    const Sizes sizes = size_fields();
    std::ostringstream comment;
    comment << "Generated by kevo from template family 'reduce' (space " << id() << ").\nGenome: " << g.to_string() << " =";
    for (const Knob& kn : knobs()) comment << " " << kn.name << " " << v[kn.name] << (&kn == &knobs().back() ? "." : ",");
    return candidate_text(task, task.name + "_" + id(), plan(v, sizes), comment.str(),
                          candidate_templates(manifest()) + "\n" + problem(sizes) + kernel(g, v, sizes));
  }

 private:
  // Size fields of Params (and kernel parameters after the pointers), with their plan expressions.
  std::vector<std::pair<std::string, std::string>> size_fields() const {
    const int in = red_.input, out = tg_->output();
    const int in_rank = tg_->rank(in), out_rank = tg_->rank(out);
    std::vector<std::pair<std::string, std::string>> sizes;
    for (int d = lowest_general_dim(pro_leaves_, in_rank); d < in_rank; ++d) sizes.emplace_back("pd" + std::to_string(d), tg_->dim(in, d));
    for (const Leaf& l : pro_leaves_) {
      if (l.kind == Leaf::Trailing) sizes.emplace_back("plen_" + l.field, l.span);
      for (size_t k = 0; k < l.strides.size(); ++k) sizes.emplace_back("ps_" + l.field + "_" + std::to_string(k), l.strides[k]);
    }
    for (int d = lowest_general_dim(epi_leaves_, out_rank); d < out_rank; ++d) sizes.emplace_back("od" + std::to_string(d), tg_->dim(out, d));
    for (const Leaf& l : epi_leaves_) {
      if (l.kind == Leaf::Trailing) sizes.emplace_back("olen_" + l.field, l.span);
      for (size_t k = 0; k < l.strides.size(); ++k) sizes.emplace_back("os_" + l.field + "_" + std::to_string(k), l.strides[k]);
    }
    return sizes;
  }

  std::string out_type() const { return red_.indices ? "long long" : "float"; }

  // The Problem struct: Params, the leaves' index functions, load() (the prologue) and store()
  // (the finish and the epilogue).
  std::string problem(const std::vector<std::pair<std::string, std::string>>& sizes) const {
    const int in = red_.input, in_rank = tg_->rank(in), out_rank = tg_->rank(tg_->output());
    const int d0 = static_cast<int>(red_.dims.front()), d1 = static_cast<int>(red_.dims.back()) + 1;
    std::ostringstream b;
    b << "// The reduction and its fused prologue and epilogue, generated from the reference's op graph\n"
         "// (first workload):\n";
    std::istringstream ref(tg_->graph().to_string());
    for (std::string line; std::getline(ref, line);) b << "//   " << line << "\n";
    b << "// The input of the reduction is viewed as [outer, R, inner] = [" << tg_->product(in, 0, d0) << ", "
      << tg_->product(in, d0, d1) << ", " << tg_->product(in, d1, in_rank) << "].\n";
    b << "struct Problem {\n  using Op = " << red_.op << ";  // " << red_.what << "\n\n  struct Params {\n";
    for (const Leaf& l : inputs()) b << "    const float* __restrict__ " << l.field << ";\n";
    b << "    " << out_type() << "* __restrict__ " << output_field() << ";\n";
    b << "    int R;  // elements per reduction\n";
    for (const auto& [f, e] : sizes) b << "    long long " << f << ";  // " << e << "\n";
    b << "  };\n\n";
    for (const Leaf& l : pro_leaves_)
      if (l.kind == Leaf::General) b << leaf_index_function("index_" + l.field, "pd", "ps_", l, in_rank) << "\n";
    for (const Leaf& l : epi_leaves_)
      if (l.kind == Leaf::General) b << leaf_index_function("out_index_" + l.field, "od", "os_", l, out_rank) << "\n";
    return b.str() + load_function() + store_function();
  }

  std::string load_function() const {
    std::ostringstream b;
    b << "  // The values reduced at flat indices [i, i + kVec) of the reduction's input.\n";
    b << "  template <int kVec, kevo::LoadHint kCache>\n";
    b << "  static __device__ __forceinline__ void load(const Params& p, long long i, float (&v)[kVec]) {\n";
    for (const Leaf& l : pro_leaves_) {
      b << "    float " << l.local << "[kVec];\n";
      if (l.kind == Leaf::Full)
        b << "    kevo::load_hinted<kVec, kCache>(" << l.local << ", p." << l.field << " + i);\n";
      else if (l.kind == Leaf::Trailing)  // the manifest keeps the span a multiple of kVec
        b << "    kevo::load_vec<kVec>(" << l.local << ", p." << l.field << " + i % p.plen_" << l.field << ");\n";
      else
        b << "#pragma unroll\n    for (int k = 0; k < kVec; ++k) " << l.local << "[k] = p." << l.field << "[index_"
          << l.field << "(p, i + k)];\n";
    }
    b << "#pragma unroll\n    for (int k = 0; k < kVec; ++k) {\n";
    std::string result;
    b << emit_region(tg_->graph(), pro_, [&](int leaf) { return pro_local(leaf) + "[k]"; }, "      ", &result);
    std::string value = red_.transform;
    for (size_t at; (at = value.find('$')) != std::string::npos;) value.replace(at, 1, result);
    b << "      v[k] = " << value << ";\n    }\n  }\n\n";
    return b.str();
  }

  std::string store_function() const {
    const std::string out_field = output_field();
    std::ostringstream b;
    b << "  // Output element o from the reduction's state: finish, then the epilogue.\n";
    b << "  static __device__ __forceinline__ void store(const Params& p, long long o, Op::State s) {\n";
    if (red_.indices) {
      b << "    p." << out_field << "[o] = " << red_.finish << ";\n  }\n};\n\n";
      return b.str();
    }
    b << "    const float r = " << red_.finish << ";\n";
    for (const Leaf& l : epi_leaves_)
      b << "    const float " << l.local << " = p." << l.field << "["
        << (l.kind == Leaf::Full       ? std::string("o")
            : l.kind == Leaf::Trailing ? "o % p.olen_" + l.field
                                       : "out_index_" + l.field + "(p, o)")
        << "];\n";
    std::string res;
    b << emit_region(tg_->graph(), epi_, [&](int leaf) { return leaf == red_.output ? std::string("r") : epi_local(leaf); }, "    ",
                     &res);
    b << "    p." << out_field << "[o] = " << res << ";\n  }\n};\n\n";
    return b.str();
  }

  std::string kernel_name() const { return columns_ ? "kevo_reduce_columns" : "kevo_reduce_rows"; }

  std::string kernel(const Genome& g, std::map<std::string, int64_t>& v,
                     const std::vector<std::pair<std::string, std::string>>& sizes) const {
    const int64_t threads = v["kThreads"], rows = v["kRows"], split = v["kSplit"], cols = v["kCols"],
                  grid_waves = v["kGrid"], vec = v["kVec"], items = v["kItems"];
    const std::string cache = enumerator(g, "kCache"), out_field = output_field();
    std::vector<std::string> params, fields;
    for (const Leaf& l : inputs()) params.push_back("const float* " + l.field), fields.push_back(l.field);
    params.push_back(out_type() + "* " + out_field), fields.push_back(out_field);
    if (!columns_) params.push_back("long long outer");
    params.push_back("int R"), fields.push_back("R");
    if (columns_) params.push_back("long long inner");
    for (const auto& s : sizes) params.push_back("long long " + s.first), fields.push_back(s.first);
    std::ostringstream k;
    if (columns_) {
      k << "// " << threads << " threads along inner x " << split << " along R per block; each thread " << cols << " x "
        << vec << " columns, " << items << " rows of R in flight.\n";
    } else {
      k << "// " << threads << " threads per row, " << rows << " row" << (rows > 1 ? "s" : "") << " per block, "
        << (grid_waves ? "grid-stride over " + std::to_string(grid_waves) + " blocks per SM" : std::string("one pass"))
        << "; " << items << " loads of " << vec << " in flight per thread.\n";
    }
    k << "extern \"C\" __global__ void __launch_bounds__(" << threads * rows * split << ") " << kernel_name() << "(";
    for (size_t i = 0; i < params.size(); ++i) k << (i ? ", " : "") << params[i];
    k << ") {\n  const Problem::Params p{";
    for (size_t i = 0; i < fields.size(); ++i) k << (i ? ", " : "") << fields[i];
    k << "};\n";
    if (columns_)
      k << "  kevo::reduce_columns<" << threads << ", " << split << ", " << cols << ", " << vec << ", " << items << ", "
        << cache << ", Problem>(p, R, inner);\n}\n";
    else
      k << "  kevo::reduce_rows<" << threads << ", " << rows << ", " << vec << ", " << items << ", " << cache << ", "
        << (grid_waves ? "kevo::GridShape::GridStride" : "kevo::GridShape::OnePass") << ", Problem>(p, outer, R);\n}\n";
    return k.str();
  }

  nlohmann::json plan(std::map<std::string, int64_t>& v, const std::vector<std::pair<std::string, std::string>>& sizes) const {
    const Task& task = tg_->task();
    const int in = red_.input, in_rank = tg_->rank(in);
    const int d0 = static_cast<int>(red_.dims.front()), d1 = static_cast<int>(red_.dims.back()) + 1;
    const int64_t threads = v["kThreads"], rows = v["kRows"], cols = v["kCols"], grid_waves = v["kGrid"], vec = v["kVec"];
    const std::string outer = tg_->product(in, 0, d0), r_len = tg_->product(in, d0, d1), inner = tg_->product(in, d1, in_rank);
    nlohmann::json args = nlohmann::json::array();
    for (const Leaf& l : inputs()) args.push_back(task.inputs[static_cast<size_t>(tg_->input_index(l.value))].name);
    args.push_back(task.outputs.front().name);
    if (!columns_) args.push_back({{"int64", outer}});
    args.push_back({{"int", r_len}});
    if (columns_) args.push_back({{"int64", inner}});
    for (const auto& s : sizes) args.push_back({{"int64", s.second}});
    std::string grid;
    if (columns_) {
      const int64_t tile = threads * cols * vec;
      grid = (outer == "1" ? "" : paren(outer) + " * ") + "((" + inner + " + " + std::to_string(tile - 1) + ") // " + std::to_string(tile) + ")";
    } else {
      grid = grid_waves ? std::to_string(grid_waves) + " * num_sms"
                        : (rows == 1 ? outer : "(" + outer + " + " + std::to_string(rows - 1) + ") // " + std::to_string(rows));
    }
    const int64_t block = threads * rows * v["kSplit"];
    return {{"steps", {{{"kernel", kernel_name()}, {"grid", {grid}}, {"block", {block}}, {"args", args}}}}};
  }

  static std::string paren(const std::string& e) {
    return e.find_first_of("+-") == std::string::npos ? e : "(" + e + ")";
  }
  // Every input read by the kernel (prologue's, then the epilogue's not already read), once each.
  std::vector<Leaf> inputs() const {
    std::vector<Leaf> all = pro_leaves_;
    for (const Leaf& l : epi_leaves_) {
      bool seen = false;
      for (const Leaf& m : all) seen = seen || m.value == l.value;
      if (!seen) all.push_back(l);
    }
    return all;
  }
  std::string output_field() const {
    std::string f = ident(tg_->task().outputs.front().name);
    return reserved(f) ? "out_" + f : f;
  }
  std::string pro_local(int v) const {
    for (const Leaf& l : pro_leaves_)
      if (l.value == v) return l.local;
    return "?";
  }
  std::string epi_local(int v) const {
    for (const Leaf& l : epi_leaves_)
      if (l.value == v) return l.local;
    return "?";
  }

  TaskGraphPtr tg_;
  bool columns_;
  Reduction red_;
  Region pro_, epi_;
  std::vector<Leaf> pro_leaves_, epi_leaves_;
};

std::vector<std::unique_ptr<DesignSpace>> lower(const TaskGraphPtr& tgp) {
  std::vector<std::unique_ptr<DesignSpace>> out;
  const TaskGraph& tg = *tgp;
  const Graph& g = tg.graph();
  if (g.outputs.size() != 1 || tg.task().outputs.size() != 1) return out;
  // Exactly one node is not elementwise: the reduction.
  int red_node = -1;
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    if (is_elementwise(g.nodes[p])) continue;
    if (red_node >= 0) return out;
    red_node = static_cast<int>(p);
  }
  Reduction red;
  if (red_node < 0 || !classify(tg, red_node, red)) return out;
  const int o = tg.output();
  const DType out_dtype = g.values[static_cast<size_t>(o)].dtype;
  if (red.indices ? (o != red.output || out_dtype != DType::Int64) : out_dtype != DType::Float32) return out;
  for (size_t w = 0; w < tg.workloads(); ++w)
    if (tg.graph(w).values[static_cast<size_t>(o)].shape != tg.graph(w).values[static_cast<size_t>(red.output)].shape)
      return out;  // the epilogue does not broadcast the reduced value

  auto is_input = [&](int v) { return tg.input_index(v) >= 0; };
  Region pro = elementwise_region(g, red.input, is_input);
  Region epi = elementwise_region(g, o, [&](int v) { return v == red.output || is_input(v); });
  if (!pro.ok || (!red.indices && !epi.ok)) return out;
  std::vector<Leaf> pro_leaves, epi_leaves;
  std::set<std::string> taken;
  auto name_leaf = [&](Leaf& l) {
    l.field = ident(tg.task().inputs[static_cast<size_t>(tg.input_index(l.value))].name);
    if (reserved(l.field)) l.field = "in_" + l.field;
    l.local = l.field;
  };
  for (int v : pro.leaves) {
    Leaf l;
    if (!broadcast_leaf(tg, v, red.input, l)) return out;
    name_leaf(l);
    pro_leaves.push_back(std::move(l));
  }
  if (!red.indices)
    for (int v : epi.leaves) {
      if (v == red.output) continue;
      Leaf l;
      if (!broadcast_leaf(tg, v, o, l)) return out;
      name_leaf(l);
      epi_leaves.push_back(std::move(l));
    }
  if (pro_leaves.empty()) return out;  // a reduction of constants

  const int rank = tg.rank(red.input);
  const int d0 = static_cast<int>(red.dims.front()), d1 = static_cast<int>(red.dims.back()) + 1;
  bool columns = false, full = true;
  std::vector<Facts> facts;
  for (size_t w = 0; w < tg.workloads(); ++w) {
    const int64_t outer = tg.product_value(w, red.input, 0, d0), r = tg.product_value(w, red.input, d0, d1),
                  inner = tg.product_value(w, red.input, d1, rank);
    if (r <= 0 || r > (int64_t{1} << 30) || outer <= 0 || inner <= 0) return out;  // 32-bit indices along R
    columns = columns || inner > 1;
    full = full && outer == 1 && inner == 1;
    facts.push_back({{"outer", outer}, {"R", r}, {"inner", inner}, {"state_bytes", red.state_bytes}});
  }
  // A whole-tensor sum, mean, product, extremum or norm with nothing read after it is the
  // reduce_scalar family's (a two-stage reduction over every SM, not one row on one block).
  const std::string& op = g.nodes[static_cast<size_t>(red_node)].op;
  if (full && epi_leaves.empty() && (op == "sum" || op == "mean" || op == "prod" || op == "amax" || op == "amin" || op == "norm"))
    return out;
  for (size_t w = 0; w < facts.size(); ++w) {
    Facts& f = facts[w];
    f["columns"] = columns;
    int64_t line = columns ? f["inner"] : f["R"];
    for (const Leaf& l : pro_leaves)
      if (l.kind == Leaf::Trailing) line = std::gcd(line, l.span_values[w]);
    f["line"] = line;
  }
  try {
    tg.product(red.input, 0, rank);  // every size has a plan expression
    tg.product(o, 0, tg.rank(o));
  } catch (const std::runtime_error&) {
    return out;
  }
  const std::string outer = tg.product(red.input, 0, d0), along = tg.product(red.input, d0, d1),
                    inner = tg.product(red.input, d1, rank);
  std::vector<std::string> line{columns ? inner : along};  // gcd'd with every trailing leaf's span
  for (const Leaf& l : pro_leaves)
    if (l.kind == Leaf::Trailing) line.push_back(l.span);
  out.push_back(std::make_unique<ReduceSpace>(tgp, columns, std::move(red), std::move(pro), std::move(epi),
                                              std::move(pro_leaves), std::move(epi_leaves), std::move(facts)));
  DesignSpace& s = *out.back();
  s.express("outer", outer);
  s.express("R", along);
  s.express("inner", inner);
  s.express("state_bytes", std::to_string(s.facts().front().at("state_bytes")));
  s.express("columns", columns ? "1" : "0");
  // The layout is chosen for the workloads: the rows layout needs inner == 1 everywhere, and the
  // columns layout was measured with inner > 1 (one workload at least).
  if (!columns) s.assume({inner, "==", "1", "the rows layout reads contiguous rows"});
  s.express_gcd("line", line);
  return out;
}

}  // namespace

std::vector<std::unique_ptr<DesignSpace>> lower_reduce(const TaskGraphPtr& tg) { return lower(tg); }

}  // namespace kevo::lower
