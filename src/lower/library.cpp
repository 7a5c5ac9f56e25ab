// Family "library": the graph's matmul (cuBLASLt) or convolution (cuDNN) as a library step, with
// what its epilogue computes exactly, then a generated in-place kernel for the rest of the graph.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "core/candidate.h"
#include "lower/canonical.h"
#include "lower/families.h"

namespace kevo::lower {

namespace {

// How an input reaches output element (row, col) of the output seen as [rows, row_len].
struct Leaf {
  enum Kind { Full, PerRow, InRow };  // same flat index; one value per row; contiguous along the row
  int value = -1;
  std::string name;    // C++ identifier in the generated kernel
  std::string buffer;  // the contract name: the plan argument
  Kind kind = Full;
  std::vector<int> dims;             // output dims along which it varies
  std::vector<std::string> strides;  // its stride along each (expressions)
};

// The main op and the chain right after it that the library's epilogue can take:
// t = main(operands) (+ bias), then optionally u = t * scale (cuBLASLt only), then optionally act(.).
struct Mapping {
  bool conv = false;
  int main_node = -1;
  int a = -1, b = -1, bias = -1;  // graph values (inputs): x and W (or the two matmul operands); bias or -1
  bool transpose_a = false, transpose_b = false;
  int t = -1;
  int scale_out = -1;  // u, or -1
  double scale = 1.0;
  int act_out = -1;    // or -1
  std::string act;     // the library epilogue's name: "relu", "gelu"
  std::map<int, Region> regions;  // the rest of the graph, by the value the kernel starts from
  std::map<int, Leaf> leaves;     // every input a region reads, by value
  Leaf bias_leaf;                 // the main op's bias as the kernel reads it
  int split = 1;                  // output dims [0, split) make the rows, [split, rank) a row
};

constexpr int64_t kCudnnMaxElements = int64_t{1} << 31;

bool is_number(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// The kernel's own names; an input with one of them gets a trailing '_'.
bool reserved(const std::string& s) {
  static const std::set<std::string> words = {"lib", "result", "k", "i", "row", "col", "p", "n", "row_len", "Params",
                                              "Body", "apply", "kVec", "kNeedsRow", "kevo", "float", "int", "long"};
  if (words.count(s) || s.rfind("s_", 0) == 0) return true;
  return s.size() > 1 && (s[0] == 'v' || s[0] == 'd' || s[0] == 'q') && is_number(s.substr(1));
}

std::string kernel_name(std::string s) {
  s = ident(s);
  while (reserved(s)) s += "_";
  return s;
}

// Dim d of a contract tensor as a plan expression: its declared expression (in parentheses when
// compound) or its literal size. Unlike TaskGraph::dim, never an axis that only happens to be equal.
std::string decl_dim(const TensorDecl& t, int d) {
  const Dim& x = t.shape[static_cast<size_t>(d)];
  if (x.expr.empty()) return std::to_string(x.size);
  bool simple = std::all_of(x.expr.begin(), x.expr.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
  return simple ? x.expr : "(" + x.expr + ")";
}

// The product of dims [from, to) of a contract tensor; "1" when empty.
std::string decl_product(const TensorDecl& t, int from, int to) {
  std::string s;
  for (int d = from; d < to; ++d) {
    std::string e = decl_dim(t, d);
    if (e != "1") s += (s.empty() ? "" : " * ") + e;
  }
  return s.empty() ? "1" : s;
}

// Size fields of the kernel's Params: an expression becomes a field (shared by equal
// expressions); an integer literal is written inline.
struct SizeFields {
  std::vector<std::pair<std::string, std::string>> fields;  // name, plan expression
  std::string ref(const std::string& name, const std::string& expr) {
    if (is_number(expr)) return expr;
    for (const auto& [n, e] : fields)
      if (e == expr) return "p." + n;
    fields.emplace_back(name, expr);
    return "p." + name;
  }
};

class LibrarySpace : public DesignSpace {
 public:
  LibrarySpace(TaskGraphPtr tg, Mapping m, std::vector<Facts> facts)
      : DesignSpace(m.conv ? "library/cudnn_conv2d" : "library/cublaslt_matmul",
                    m.conv ? "cuDNN forward convolution (bias and relu in cuDNN or not), then a generated epilogue kernel"
                           : "cuBLASLt matmul (bias, alpha and activation in its epilogue or not), then a generated epilogue kernel",
                    "library", std::move(facts)),
        tg_(std::move(tg)), m_(std::move(m)) {}

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    const int out = tg_->output();
    const bool alpha_in = v["kAlphaIn"], act_in = v["kActIn"];
    // The value the kernel starts from, and what the kernel adds to the library's result to reach
    // it: the library gives act(alpha * A B + libbias); the graph has (A B + b) * scale.
    const int start = act_in ? m_.act_out : alpha_in ? m_.scale_out : m_.t;
    const double bias_coef = bias_coefficient(v);  // the kernel's start value = library result + bias_coef * bias
    // The library writes the output buffer; the kernel (elementwise, same index) updates it in place.
    const std::string out_buffer = task.outputs.front().name;
    std::string lib_math;  // what the library computes, for the comments
    nlohmann::json steps = nlohmann::json::array({library_step(v, out_buffer, &lib_math)});
    std::string comment = genome_comment(g, v, lib_math);
    nlohmann::json plan;
    if (start == out && bias_coef == 0) {
      comment += "\nThe library's epilogue takes the whole graph: there is no kernel step.";
      plan["steps"] = steps;
      return candidate_text(task, task.name + "_library", plan, comment,
                            template_includes({"common.cuh"}) + "\n// No kernel: the plan's library step computes the output.\n");
    }
    std::string bias_expr;
    const std::vector<Leaf> leaves = kernel_leaves(start, bias_coef, &bias_expr);
    SizeFields sizes;
    const std::string body = kernel_body(leaves, start, bias_coef, bias_expr, lib_math, sizes);
    std::string launcher;
    steps.push_back(kernel_step(g, v, leaves, sizes, &launcher));
    plan["steps"] = steps;
    comment += kernel_comment(v, start);
    return candidate_text(task, task.name + "_library", plan, comment, candidate_templates(manifest()) + "\n" + body + launcher);
  }

 private:
  const std::string& input_name(int val) const { return tg_->task().inputs[static_cast<size_t>(tg_->input_index(val))].name; }

  double bias_coefficient(std::map<std::string, int64_t>& v) const {
    const bool bias_in = v["kBiasIn"], alpha_in = v["kAlphaIn"], act_in = v["kActIn"];
    if (m_.bias < 0 || act_in) return 0;
    return alpha_in ? (bias_in ? m_.scale - 1 : m_.scale) : (bias_in ? 0 : 1);
  }

  // The library step (cuDNN's convolution or cuBLASLt's matmul) writing `out_buffer`; what it
  // computes in `lib_math` ("y = relu(x @ W^T + b[col])").
  nlohmann::json library_step(std::map<std::string, int64_t>& v, const std::string& out_buffer, std::string* lib_math) const {
    const bool bias_in = v["kBiasIn"], alpha_in = v["kAlphaIn"], act_in = v["kActIn"];
    nlohmann::json lib;
    if (m_.conv) {
      const Node& n = tg_->graph().nodes[static_cast<size_t>(m_.main_node)];
      lib["library"] = "cudnn.conv2d_forward";
      lib["x"] = input_name(m_.a);
      lib["w"] = input_name(m_.b);
      lib["y"] = out_buffer;
      if (bias_in) lib["bias"] = input_name(m_.bias);
      lib["stride"] = attr_ints(n, "stride");
      lib["padding"] = attr_ints(n, "padding");
      lib["dilation"] = attr_ints(n, "dilation");
      lib["groups"] = attr_int(n, "groups");
      lib["epilogue"] = act_in ? "relu" : "none";
      *lib_math = "conv2d(" + input_name(m_.a) + ", " + input_name(m_.b) + ")" +
                  (bias_in ? " + " + input_name(m_.bias) + "[channel]" : "");
    } else {
      const std::string epilogue = std::string(bias_in ? "bias" : "") + (act_in ? (bias_in ? "_" : "") + m_.act : "");
      lib["library"] = "cublaslt.matmul";
      lib["a"] = input_name(m_.a);
      lib["b"] = input_name(m_.b);
      lib["d"] = out_buffer;
      if (bias_in) lib["bias"] = input_name(m_.bias);
      if (m_.transpose_a) lib["transpose_a"] = true;
      if (m_.transpose_b) lib["transpose_b"] = true;
      if (alpha_in) lib["alpha"] = m_.scale;
      lib["epilogue"] = epilogue.empty() ? "none" : epilogue;
      if (v["kAlgo"] == kAutotunedAlgo) lib["algo"] = "auto";
      else if (v["kAlgo"] > 0) lib["algo"] = v["kAlgo"];
      const Emulation emulation = static_cast<Emulation>(v["kEmulation"]);
      if (emulation != Emulation::Off) lib["emulation"] = emulation_name(emulation);
      *lib_math = input_name(m_.a) + (m_.transpose_a ? "^T" : "") + " @ " + input_name(m_.b) + (m_.transpose_b ? "^T" : "");
      if (alpha_in) *lib_math = number_text(m_.scale) + " * " + *lib_math;
      if (bias_in) *lib_math += " + " + input_name(m_.bias) + "[col]";
    }
    if (act_in) *lib_math = (m_.act == "gelu" ? "gelu_tanh(" : m_.act + "(") + *lib_math + ")";
    *lib_math = out_buffer + " = " + *lib_math;
    return lib;
  }

  std::string genome_comment(const Genome& g, std::map<std::string, int64_t>& v, const std::string& lib_math) const {
    std::ostringstream knobs;
    for (size_t i = 0; i < this->knobs().size(); ++i)
      knobs << (i ? ", " : "") << this->knobs()[i].name << "=" << g.values[i];
    std::string comment = "Generated by kevo from template family 'library' (space " + id() + ").\nGenome: " + knobs.str() +
                          ".\nStep 1, " + (m_.conv ? "cuDNN" : "cuBLASLt") + ": " + lib_math + ".";
    if (m_.conv) return comment;
    const int64_t algo = v["kAlgo"];
    comment += "\ncuBLASLt's algorithm: " +
               (algo == kAutotunedAlgo ? std::string("autotuned per shape at first use: the fastest of cuBLASLt's "
                                                     "first 8 heuristic algorithms")
                : algo == 0            ? std::string("its heuristic's first choice")
                                       : "entry " + std::to_string(algo) + " of its heuristic's list (0 is the first choice)") +
               ".";
    if (v["kEmulation"] != 0)
      comment += "\ncuBLASLt's products: fp32 emulated with bf16x9 (three bf16 parts per operand, fp32-accurate), "
                 "cuBLAS's strategy " + emulation_name(static_cast<Emulation>(v["kEmulation"])) +
                 "; sm_100a and sm_103a only.";
    return comment;
  }

  // The kernel's inputs: the region's from `start`, plus the main op's bias when it corrects the
  // start (`bias_expr`: how the kernel reads it).
  std::vector<Leaf> kernel_leaves(int start, double bias_coef, std::string* bias_expr) const {
    std::vector<Leaf> leaves;
    for (int leaf : m_.regions.at(start).leaves)
      if (leaf != start) leaves.push_back(m_.leaves.at(leaf));
    if (bias_coef == 0) return leaves;
    Leaf b = m_.bias_leaf;
    auto same = std::find_if(leaves.begin(), leaves.end(), [&](const Leaf& l) { return l.value == b.value; });
    if (same == leaves.end() || same->dims != b.dims) {
      if (same != leaves.end()) b.name += "_bias";
      leaves.push_back(b);
    }
    *bias_expr = b.kind == Leaf::PerRow ? b.name : b.name + "[k]";
    return leaves;
  }

  // The kernel's Body: its Params and the in-place update of kVec output elements from the
  // library's result (the size fields it reads go into `sizes`).
  std::string kernel_body(const std::vector<Leaf>& leaves, int start, double bias_coef, const std::string& bias_expr,
                          const std::string& lib_math, SizeFields& sizes) const {
    const Graph& gr = tg_->graph();
    bool needs_row = false;
    for (const Leaf& l : leaves) needs_row = needs_row || l.kind != Leaf::Full;
    const std::string y = kernel_name(tg_->task().outputs.front().name);
    std::ostringstream body;
    body << "// The op graph (first workload); step 1 computed " << lib_math << ":\n";
    std::istringstream ref(gr.to_string());
    for (std::string line; std::getline(ref, line);) body << "//   " << line << "\n";
    body << "struct Body {\n  static constexpr bool kNeedsRow = " << (needs_row ? "true" : "false") << ";\n";
    const std::string loads = leaf_loads(leaves, sizes);
    body << "  struct Params {\n";
    body << "    float* " << y << ";  // holds the library's result; the kernel overwrites it in place\n";
    for (const Leaf& l : leaves) body << "    const float* __restrict__ " << l.name << ";\n";
    for (const auto& f : sizes.fields) body << "    long long " << f.first << ";  // " << f.second << "\n";
    body << "  };\n\n";
    body << "  // Output elements [i, i + kVec) of row `row` (i = row * row_len + col).\n";
    body << "  template <int kVec>\n  static __device__ __forceinline__ void apply(const Params& p, long long i, long long row, "
            "long long col) {\n";
    if (!needs_row) body << "    (void)row, (void)col;\n";
    body << "    float lib[kVec];\n    kevo::load_vec<kVec>(lib, p." << y << " + i);\n" << loads;
    body << "    float result[kVec];\n#pragma unroll\n    for (int k = 0; k < kVec; ++k) {\n";
    const std::string start_var = "v" + std::to_string(start);
    std::string start_expr = "lib[k]";
    if (bias_coef == 0) {
      body << "      // lib[k] is %" << start << " (step 1 computed it)\n";
    } else {
      body << "      const float " << start_var << " = lib[k] + "
           << (bias_coef == 1 ? "" : float_literal(bias_coef) + " * ") << bias_expr << ";  // %" << start
           << " from the library's result\n";
      start_expr = start_var;
    }
    std::string result;
    body << emit_region(gr, m_.regions.at(start),
                        [&](int leaf) {
                          if (leaf == start) return start_expr;
                          const Leaf& l = m_.leaves.at(leaf);
                          return l.kind == Leaf::PerRow ? l.name : l.name + "[k]";
                        },
                        "      ", &result);
    body << "      result[k] = " << result << ";\n    }\n";
    body << "    kevo::store_vec<kVec>(p." << y << " + i, result);\n  }\n};\n\n";
    return body.str();
  }

  // How the kernel reads each input for its kVec elements.
  std::string leaf_loads(const std::vector<Leaf>& leaves, SizeFields& sizes) const {
    std::ostringstream loads;
    for (const Leaf& l : leaves) {
      if (l.kind == Leaf::Full) {
        loads << "    float " << l.name << "[kVec];\n    kevo::load_vec<kVec>(" << l.name << ", p." << l.name << " + i);\n";
        continue;
      }
      std::string at = row_index(l, sizes);
      if (l.kind == Leaf::PerRow) {
        loads << "    const float " << l.name << " = p." << l.name << "[" << at << "];  // one value per row\n";
      } else {
        loads << "    float " << l.name << "[kVec];  // contiguous along the row\n    kevo::load_vec<kVec>(" << l.name
              << ", p." << l.name << " + " << (at == "0" ? "col" : at + " + col") << ");\n";
      }
    }
    return loads.str();
  }

  // The output as rows (dims [0, split)) of row_len elements, as plan expressions.
  struct OutputShape {
    std::string n, rows, row_len;
  };
  OutputShape output_shape() const {
    const TensorDecl& out_decl = tg_->task().outputs.front();
    const int rank = tg_->rank(tg_->output());
    return {decl_product(out_decl, 0, rank), decl_product(out_decl, 0, m_.split), decl_product(out_decl, m_.split, rank)};
  }

  // The kernel step of the plan, and the kernel's launcher (`launcher`).
  nlohmann::json kernel_step(const Genome& g, std::map<std::string, int64_t>& v, const std::vector<Leaf>& leaves,
                             const SizeFields& sizes, std::string* launcher) const {
    const int64_t block = v["kBlock"], vec = v["kVec"], items = v["kItems"], grid_shape = v["kGrid"], waves = v["kWaves"];
    const std::string out_buffer = tg_->task().outputs.front().name, y = kernel_name(out_buffer);
    const OutputShape shape = output_shape();
    std::vector<std::string> fields = {y};
    nlohmann::json args = nlohmann::json::array({out_buffer});
    std::ostringstream k;
    k << "extern \"C\" __global__ void __launch_bounds__(" << block << ") kevo_library_epilogue(float* " << y << ", ";
    for (const Leaf& l : leaves) {
      k << "const float* " << l.name << ", ";
      args.push_back(l.buffer);
      fields.push_back(l.name);
    }
    k << "long long n, long long row_len";
    args.push_back({{"int64", shape.n}});
    args.push_back({{"int64", shape.row_len}});
    for (const auto& [name, expr] : sizes.fields) {
      k << ", long long " << name;
      args.push_back({{"int64", expr}});
      fields.push_back(name);
    }
    k << ") {\n  Body::Params p{";
    for (size_t i = 0; i < fields.size(); ++i) k << (i ? ", " : "") << fields[i];
    k << "};\n  kevo::library_epilogue<" << block << ", " << vec << ", " << items << ", " << enumerator(g, "kGrid")
      << ", Body>(p, n, row_len);\n}\n";
    *launcher = k.str();
    const int64_t tile = block * vec * items;
    const std::string tiles = " + " + std::to_string(tile - 1) + ") // " + std::to_string(tile);
    nlohmann::json grid = grid_shape == 2   ? nlohmann::json::array({shape.rows, "(" + shape.row_len + tiles})
                          : grid_shape == 1 ? nlohmann::json::array({std::to_string(waves) + " * num_sms"})
                                            : nlohmann::json::array({"(" + shape.n + tiles});
    return {{"kernel", "kevo_library_epilogue"}, {"grid", grid}, {"block", {block}}, {"args", args}};
  }

  std::string kernel_comment(std::map<std::string, int64_t>& v, int start) const {
    const int64_t block = v["kBlock"], vec = v["kVec"], items = v["kItems"], grid_shape = v["kGrid"], waves = v["kWaves"];
    const OutputShape shape = output_shape();
    return "\nStep 2, kernel: the rest of the graph from %" + std::to_string(start) + ", in place over " +
           tg_->task().outputs.front().name + "; kBlock " + std::to_string(block) + ", kVec " + std::to_string(vec) +
           ", kItems " + std::to_string(items) + ", " +
           (grid_shape == 2   ? "a block row per output row ([" + shape.rows + "] rows of " + shape.row_len + ")"
            : grid_shape == 1 ? "grid-stride over " + std::to_string(waves) + " blocks per SM"
                              : "one pass over the flat output") +
           ".";
  }

  static std::string number_text(double x) {
    std::ostringstream s;
    s << x;
    return s.str();
  }

  // The index of a broadcast input's element for row `row`: each output dim d < split it varies
  // along contributes (row / (dims d+1 .. split-1)) % dim d, times its stride.
  std::string row_index(const Leaf& l, SizeFields& sizes) const {
    const TensorDecl& out = tg_->task().outputs.front();
    std::string sum;
    for (size_t j = 0; j < l.dims.size(); ++j) {
      const int d = l.dims[j];
      if (d >= m_.split) continue;  // the last dim of an InRow input: `col`
      std::string coord = "row";
      const std::string inner = decl_product(out, d + 1, m_.split);
      if (inner != "1") coord += " / " + sizes.ref("q" + std::to_string(d), inner);
      if (d > 0) coord = (inner != "1" ? "(" + coord + ")" : coord) + " % " + sizes.ref("d" + std::to_string(d), decl_dim(out, d));
      if (l.strides[j] != "1") coord = "(" + coord + ") * " + sizes.ref("s_" + l.name + "_" + std::to_string(j), l.strides[j]);
      sum += (sum.empty() ? "" : " + ") + coord;
    }
    return sum.empty() ? "0" : sum;
  }

  TaskGraphPtr tg_;
  Mapping m_;
};

const ValueInfo& info(const Graph& g, int v) { return g.values[static_cast<size_t>(v)]; }

double constant_value(const Node& n) {
  auto it = n.attrs.find("value");
  if (it == n.attrs.end()) return 0;
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  if (const auto* b = std::get_if<bool>(&it->second)) return *b ? 1 : 0;
  return 0;
}

// The node reading v when it is v's only use, else -1.
int sole_consumer(const TaskGraph& tg, int v) {
  if (tg.uses(v) != 1) return -1;
  const Graph& g = tg.graph();
  for (size_t p = 0; p < g.nodes.size(); ++p)
    for (int in : g.nodes[p].inputs)
      if (in == v) return static_cast<int>(p);
  return -1;
}

// An input of the region as a broadcast onto the output (right-aligned, as torch broadcasts);
// false when a dim neither is 1 nor matches the output's in every workload.
bool broadcast_leaf(const TaskGraph& tg, int v, int out, Leaf& l) {
  const int rank = tg.rank(out), lrank = tg.rank(v), offset = rank - lrank;
  if (info(tg.graph(), v).dtype != DType::Float32 || lrank > rank) return false;
  l.value = v;
  l.buffer = tg.task().inputs[static_cast<size_t>(tg.input_index(v))].name;
  l.name = kernel_name(l.buffer);
  bool full = lrank == rank;
  for (size_t w = 0; w < tg.workloads(); ++w) full = full && info(tg.graph(w), v).shape == info(tg.graph(w), out).shape;
  if (full) return true;
  for (int d = 0; d < lrank; ++d) {
    bool varies = false, matches = true;
    for (size_t w = 0; w < tg.workloads(); ++w) {
      int64_t n = info(tg.graph(w), v).shape[static_cast<size_t>(d)];
      varies = varies || n != 1;
      matches = matches && n == info(tg.graph(w), out).shape[static_cast<size_t>(d + offset)];
    }
    if (!varies) continue;
    if (!matches) return false;
    l.dims.push_back(d + offset);
    l.strides.push_back(decl_product(tg.task().inputs[static_cast<size_t>(tg.input_index(v))], d + 1, lrank));
  }
  l.kind = Leaf::PerRow;  // the final kind is set once the row split is known
  return true;
}

// Whether cuBLASLt takes m's matmul as plan_resolve reads it: a matrix b with a matrix a, or an
// untransposed a of rank 3 or more (a batch of rows: cuBLASLt sees [rows, k]); or a strided batch
// (b, or a transposed a, of rank 3 or more), a and b each a matrix or a batch with t's leading dims.
bool matmul_fits(const TaskGraph& tg, const Mapping& m) {
  const int ra = tg.rank(m.a), rb = tg.rank(m.b);
  if (ra < 2 || rb < 2) return false;
  if (!strided_batch(static_cast<size_t>(ra), static_cast<size_t>(rb), m.transpose_a)) return true;
  for (size_t w = 0; w < tg.workloads(); ++w) {
    const Shape& t = info(tg.graph(w), m.t).shape;
    for (int v : {m.a, m.b}) {
      const Shape& s = info(tg.graph(w), v).shape;
      if (s.size() != 2 && (s.size() != t.size() || !std::equal(t.begin(), t.end() - 2, s.begin()))) return false;
    }
  }
  return true;
}

// The cuDNN convolution's tensors: a 4-d descriptor counts elements in 32 bits.
std::vector<int> cudnn_tensors(const Mapping& m) { return m.conv ? std::vector<int>{m.a, m.b, m.t} : std::vector<int>{}; }

// The main op: the graph's only matmul, linear or conv2d, on fp32 graph inputs, that the library
// takes as it stands and whose result maps onto the output 1:1.
bool find_main_op(const TaskGraph& tg, Mapping& m) {
  const Graph& g = tg.graph();
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    const std::string& op = g.nodes[p].op;
    if (op != "linear" && op != "matmul" && op != "conv2d") continue;
    if (m.main_node >= 0) return false;
    m.main_node = static_cast<int>(p);
  }
  if (m.main_node < 0) return false;
  const Node& main = g.nodes[static_cast<size_t>(m.main_node)];
  m.conv = main.op == "conv2d";
  m.t = main.outputs.front();
  m.a = main.inputs[0];
  m.b = main.inputs[1];
  m.bias = main.inputs.size() > 2 ? main.inputs[2] : -1;
  m.transpose_b = main.op == "linear";
  if (!m.conv) {  // a transposed input (matrix or batch of matrices) is cuBLASLt's transposed operand
    if (const int s = transposed_source(g, m.a); s >= 0 && tg.input_index(s) >= 0) {
      m.a = s;
      m.transpose_a = true;
    }
    if (const int s = transposed_source(g, m.b); s >= 0 && tg.input_index(s) >= 0) {
      m.b = s;
      m.transpose_b = !m.transpose_b;
    }
  }
  for (int operand : {m.a, m.b, m.bias})
    if (operand != -1 && (tg.input_index(operand) < 0 || info(g, operand).dtype != DType::Float32)) return false;
  const bool fits = m.conv ? tg.rank(m.a) == 4 && tg.rank(m.b) == 4 : matmul_fits(tg, m);
  if (!fits || info(g, m.t).dtype != DType::Float32) return false;
  for (size_t w = 0; w < tg.workloads(); ++w)
    if (info(tg.graph(w), m.t).shape != info(tg.graph(w), tg.output()).shape) return false;  // the kernel maps the output 1:1
  // cuDNN's 4-d tensor descriptors count elements in 32 bits: a tensor of 2^31 elements or more is
  // NOT_SUPPORTED (KernelBench's pointwise conv2d, 16 x 128 x 1024 x 1024); the conv family serves it.
  for (size_t w = 0; w < tg.workloads(); ++w)
    for (int v : cudnn_tensors(m))
      if (tg.product_value(w, v, 0, 4) >= kCudnnMaxElements) return false;
  return true;
}

// The library's bias is one value per output column (matmul: t's last dim) or channel (conv: dim 1).
bool map_bias(const TaskGraph& tg, Mapping& m) {
  if (m.bias < 0) return true;
  const int along = m.conv ? 1 : tg.rank(m.t) - 1;
  if (tg.rank(m.bias) != 1) return false;
  for (size_t w = 0; w < tg.workloads(); ++w)
    if (info(tg.graph(w), m.bias).shape[0] != info(tg.graph(w), m.t).shape[static_cast<size_t>(along)]) return false;
  Leaf& b = m.bias_leaf;
  b.value = m.bias;
  b.buffer = tg.task().inputs[static_cast<size_t>(tg.input_index(m.bias))].name;
  b.name = kernel_name(b.buffer);
  b.kind = Leaf::PerRow;
  b.dims = {along};
  b.strides = {"1"};
  return true;
}

// The chain the library's epilogue may take (a scale, cuBLASLt only; then an activation), each
// link only where t's path to the output passes through it alone. Returns the chain's end, or -1
// when the rest of the graph from t is not elementwise.
int map_epilogue_chain(const TaskGraph& tg, Mapping& m) {
  const Graph& g = tg.graph();
  auto region_from = [&](int start) {
    return elementwise_region(g, tg.output(), [&](int v) { return v == start || tg.input_index(v) >= 0; });
  };
  m.regions[m.t] = region_from(m.t);
  if (!m.regions[m.t].ok) return -1;
  int end = m.t;
  if (int c = sole_consumer(tg, m.t); !m.conv && c >= 0) {
    const Node& n = g.nodes[static_cast<size_t>(c)];
    const int other = n.inputs.size() == 2 ? n.inputs[n.inputs[0] == m.t ? 1 : 0] : -1;
    const int producer = other >= 0 ? info(g, other).producer : -1;
    if (n.op == "mul" && other >= 0 && producer >= 0 && is_literal_node(g.nodes[static_cast<size_t>(producer)]) &&
        info(g, other).shape.empty()) {
      Region r = region_from(n.outputs.front());
      if (r.ok) {
        m.scale_out = end = n.outputs.front();
        m.scale = constant_value(g.nodes[static_cast<size_t>(producer)]);
        m.regions[end] = r;
      }
    }
  }
  if (int c = sole_consumer(tg, end); c >= 0) {
    const Node& n = g.nodes[static_cast<size_t>(c)];
    auto approx = n.attrs.find("approximate");
    const bool gelu_tanh = n.op == "gelu" && approx != n.attrs.end() &&
                           std::holds_alternative<std::string>(approx->second) &&
                           std::get<std::string>(approx->second) == "tanh";
    // cuBLASLt's GELU epilogue is the tanh approximation; cuDNN's step offers relu only.
    std::string act = n.op == "relu" ? "relu" : gelu_tanh && !m.conv ? "gelu" : "";
    if (!act.empty() && n.inputs.size() == 1) {
      Region r = region_from(n.outputs.front());
      if (r.ok) {
        m.act_out = end = n.outputs.front();
        m.act = act;
        m.regions[end] = r;
      }
    }
  }
  return end;
}

// The inputs the kernel may read, and the row split: a row runs along the trailing dims no
// broadcast input varies along, except the last dim when an input is contiguous along it.
bool map_leaves(const TaskGraph& tg, Mapping& m) {
  const int rank = tg.rank(m.t);
  for (const auto& [start, r] : m.regions)
    for (int leaf : r.leaves) {
      if (leaf == start || m.leaves.count(leaf)) continue;
      Leaf l;
      if (!broadcast_leaf(tg, leaf, tg.output(), l)) return false;
      m.leaves[leaf] = l;
    }
  std::vector<Leaf*> broadcast;
  for (auto& [v, l] : m.leaves)
    if (l.kind != Leaf::Full) broadcast.push_back(&l);
  if (m.bias >= 0) broadcast.push_back(&m.bias_leaf);
  int last = -1;
  for (const Leaf* l : broadcast)
    for (int d : l->dims) last = std::max(last, d);
  m.split = last == rank - 1 ? rank - 1 : std::max(1, last + 1);
  for (Leaf* l : broadcast)
    l->kind = std::find(l->dims.begin(), l->dims.end(), rank - 1) != l->dims.end() && m.split == rank - 1 ? Leaf::InRow
                                                                                                          : Leaf::PerRow;
  return true;
}

std::unique_ptr<DesignSpace> library_space(const TaskGraphPtr& tgp, Mapping m, int end) {
  const TaskGraph& tg = *tgp;
  const int o = tg.output(), rank = tg.rank(m.t), split = m.split;
  const std::vector<int> cudnn = cudnn_tensors(m);
  const bool has_bias = m.bias >= 0, has_scale = m.scale_out >= 0, can_act = m.act_out >= 0 && !(has_bias && has_scale);
  const bool lib_only = end == o && !(has_bias && has_scale);
  std::vector<Facts> facts;
  for (size_t w = 0; w < tg.workloads(); ++w)
    facts.push_back({{"n", tg.product_value(w, o, 0, rank)},
                     {"row", tg.product_value(w, o, split, rank)},
                     {"rows", tg.product_value(w, o, 0, split)},
                     {"has_bias", has_bias},
                     {"has_scale", has_scale},
                     {"can_act", can_act},
                     {"lib_only", lib_only},
                     {"matmul", !m.conv}});
  auto s = std::make_unique<LibrarySpace>(tgp, std::move(m), std::move(facts));
  s->express("n", tg.product(o, 0, rank));
  s->express("row", tg.product(o, split, rank));
  s->express("rows", tg.product(o, 0, split));
  for (const char* flag : {"has_bias", "has_scale", "can_act", "lib_only", "matmul"})  // the mapping's, not the shape's
    s->express(flag, std::to_string(s->facts().front().at(flag)));
  for (int v : cudnn)
    s->assume({tg.product(v, 0, 4), "<", std::to_string(kCudnnMaxElements), "cuDNN's tensor descriptors count elements in 32 bits"});
  return s;
}

}  // namespace

std::vector<std::unique_ptr<DesignSpace>> lower_library(const TaskGraphPtr& tgp) {
  std::vector<std::unique_ptr<DesignSpace>> out;
  const TaskGraph& tg = *tgp;
  const Graph& g = tg.graph();
  if (g.outputs.size() != 1) return out;
  if (info(g, tg.output()).dtype != DType::Float32 || tg.input_index(tg.output()) >= 0) return out;
  Mapping m;
  if (!find_main_op(tg, m) || !map_bias(tg, m)) return out;
  const int end = map_epilogue_chain(tg, m);
  if (end < 0 || !map_leaves(tg, m)) return out;
  out.push_back(library_space(tgp, std::move(m), end));
  return out;
}

}  // namespace kevo::lower
