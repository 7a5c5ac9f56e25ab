// Family "scan": cumsum or cumprod along one dim of a float32 tensor, with the elementwise ops
// before it (a prologue, applied as elements are loaded) and after it (an epilogue, applied as
// they are stored) fused into the same kernel.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <variant>

#include "lower/families.h"

namespace kevo::lower {

namespace {

// How the task's graph maps onto the family: prologue -> scan -> epilogue.
struct ScanMapping {
  int node = -1;        // the cumsum / cumprod node
  int in = -1, out = -1;  // its input and output values
  int dim = 0;
  Region prologue;      // the scan's input from graph inputs
  Region epilogue;      // the graph's output from the scan's result (and graph inputs)
  std::vector<int> inputs;  // graph inputs read, prologue's first
};

const char* const kLayoutNames[] = {"a block per row", "a warp per row", "decoupled look-back", "a thread per column"};

class ScanSpace : public DesignSpace {
 public:
  ScanSpace(TaskGraphPtr tg, ScanMapping m, std::vector<Facts> facts)
      : DesignSpace("scan/" + tg->graph().nodes[static_cast<size_t>(m.node)].op,
                    "prologue, " + tg->graph().nodes[static_cast<size_t>(m.node)].op + " along dim " +
                        std::to_string(m.dim) + " and epilogue in one kernel",
                    "scan", std::move(facts)),
        tg_(std::move(tg)), m_(std::move(m)) {}

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    const Graph& gr = tg_->graph();
    const std::string& op = gr.nodes[static_cast<size_t>(m_.node)].op;
    const std::string out_name = ident(task.outputs.front().name);
    const int64_t layout = v["kLayout"], threads = v["kThreads"], items = v["kItems"], vec = v["kVec"];
    const int rank = tg_->rank(m_.in);
    // Sizes named after the output's declaration (it has the scan's shape).
    const int o = tg_->output();
    const std::string rows = tg_->product(o, 0, m_.dim), len = tg_->dim(o, m_.dim),
                      inner = tg_->product(o, m_.dim + 1, rank);

    std::ostringstream body;
    body << "// The fused prologue and epilogue, generated from the reference's op graph (first workload):\n";
    std::istringstream ref(gr.to_string());
    for (std::string line; std::getline(ref, line);) body << "//   " << line << "\n";
    body << "struct Body {\n  struct Params {\n";
    for (int in : m_.inputs) body << "    const float* __restrict__ " << input_name(in) << ";\n";
    body << "    float* __restrict__ " << out_name << ";\n  };\n\n";
    body << "  // Elements [i, i + kVec) of the scan's input %" << m_.in << ".\n";
    body << "  template <int kVec>\n  static __device__ __forceinline__ void load(const Params& p, long long i, float (&v)[kVec]) {\n";
    if (m_.prologue.nodes.empty()) {
      body << "    kevo::load_vec<kVec>(v, p." << input_name(m_.in) << " + i);\n";
    } else {
      body << load_leaves(m_.prologue.leaves, -1);
      std::string result;
      body << "#pragma unroll\n    for (int k = 0; k < kVec; ++k) {\n";
      body << emit_region(gr, m_.prologue, [&](int leaf) { return "in_" + input_name(leaf) + "[k]"; }, "      ", &result);
      body << "      v[k] = " << result << ";\n    }\n";
    }
    body << "  }\n\n";
    body << "  // Stores output elements [i, i + kVec) from the scanned values s (%" << m_.out << ").\n";
    body << "  template <int kVec>\n  static __device__ __forceinline__ void store(const Params& p, long long i, const float (&s)[kVec]) {\n";
    if (m_.epilogue.nodes.empty()) {
      body << "    kevo::store_vec<kVec>(p." << out_name << " + i, s);\n";
    } else {
      body << load_leaves(m_.epilogue.leaves, m_.out);
      std::string result;
      body << "    float out[kVec];\n#pragma unroll\n    for (int k = 0; k < kVec; ++k) {\n";
      body << emit_region(gr, m_.epilogue,
                          [&](int leaf) { return leaf == m_.out ? std::string("s[k]") : "in_" + input_name(leaf) + "[k]"; },
                          "      ", &result);
      body << "      out[k] = " << result << ";\n    }\n";
      body << "    kevo::store_vec<kVec>(p." << out_name << " + i, out);\n";
    }
    body << "  }\n};\n\n";

    // The wrapper kernel(s).
    std::vector<std::string> params, fields;
    nlohmann::json args = nlohmann::json::array();
    for (int in : m_.inputs) {
      params.push_back("const float* " + input_name(in));
      fields.push_back(input_name(in));
      args.push_back(task.inputs[static_cast<size_t>(tg_->input_index(in))].name);
    }
    params.push_back("float* " + out_name);
    fields.push_back(out_name);
    args.push_back(task.outputs.front().name);
    const std::string op_type = op == "cumsum" ? "kevo::Sum" : "kevo::Prod";
    const std::string targs = op_type + ", " + std::to_string(threads) + ", " + std::to_string(items) + ", " +
                              std::to_string(vec) + ", /*kReverse=*/false, /*kExclusive=*/false, Body";
    const int64_t tile = threads * items * vec;
    const std::string tiles_per_row = "((" + len + " + " + std::to_string(tile - 1) + ") // " + std::to_string(tile) + ")";
    std::string call, grid;
    nlohmann::json steps = nlohmann::json::array(), buffers;
    if (layout == 0) {
      params.push_back("long long len");
      args.push_back({{"int64", len}});
      call = "kevo::scan_rows_block<" + targs + ">(p, len)";
      grid = rows;
    } else if (layout == 1) {
      params.insert(params.end(), {"long long rows", "long long len"});
      args.push_back({{"int64", rows}});
      args.push_back({{"int64", len}});
      call = "kevo::scan_rows_warp<" + targs + ">(p, rows, len)";
      grid = "(" + rows + " + " + std::to_string(threads / 32 - 1) + ") // " + std::to_string(threads / 32);
    } else if (layout == 2) {
      const std::string words = rows + " * " + tiles_per_row + " + 1";
      buffers["scan_state"] = {{"dtype", "int64"}, {"shape", nlohmann::json::array({words})}};
      nlohmann::json clear_args = nlohmann::json::array();
      clear_args.push_back("scan_state");
      clear_args.push_back({{"int64", words}});
      steps.push_back({{"kernel", "kevo_scan_clear"},
                       {"grid", nlohmann::json::array({"(" + words + " + 255) // 256"})},
                       {"block", nlohmann::json::array({256})},
                       {"args", clear_args}});
      params.insert(params.end(), {"unsigned long long* state", "long long len", "long long tiles_per_row"});
      args.push_back("scan_state");
      args.push_back({{"int64", len}});
      args.push_back({{"int64", tiles_per_row}});
      call = "kevo::scan_rows_lookback<" + targs + ">(p, len, tiles_per_row, state)";
      grid = rows + " * " + tiles_per_row;
    } else {
      params.insert(params.end(), {"long long outer", "long long len", "long long inner"});
      args.push_back({{"int64", rows}});
      args.push_back({{"int64", len}});
      args.push_back({{"int64", inner}});
      call = "kevo::scan_columns<" + targs + ">(p, outer, len, inner)";
      grid = "(" + rows + " * ((" + inner + ") // " + std::to_string(vec) + ") + " + std::to_string(threads - 1) +
             ") // " + std::to_string(threads);
    }
    std::ostringstream k;
    if (layout == 2) {
      k << "// Zeroes the look-back state (tile tickets and published tiles) before every scan.\n"
        << "extern \"C\" __global__ void __launch_bounds__(256) kevo_scan_clear(unsigned long long* state, long long words) {\n"
        << "  kevo::scan_clear_state(state, words);\n}\n\n";
    }
    k << "// " << op << " along dim " << m_.dim << ": " << kLayoutNames[layout] << " (" << enumerator(g, "kLayout")
      << ").\n";
    k << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") kevo_scan(";
    for (size_t i = 0; i < params.size(); ++i) k << (i ? ", " : "") << params[i];
    k << ") {\n  Body::Params p{";
    for (size_t i = 0; i < fields.size(); ++i) k << (i ? ", " : "") << fields[i];
    k << "};\n  " << call << ";\n}\n";
    steps.push_back({{"kernel", "kevo_scan"},
                    {"grid", nlohmann::json::array({grid})},
                    {"block", nlohmann::json::array({threads})},
                    {"args", args}});

    nlohmann::json plan;
    if (!buffers.is_null()) plan["buffers"] = buffers;
    plan["steps"] = steps;
    std::ostringstream comment;
    comment << "Generated by kevo from template family 'scan' (space " << id() << ").\n"
            << "Genome: " << g.to_string() << " = " << kLayoutNames[layout] << ", " << threads << " threads, "
            << items << " x " << vec << " elements per thread per tile";
    if (layout == 3) comment << " (" << items << " steps along the dim loaded ahead, " << vec << " adjacent columns)";
    comment << ".";
    return candidate_text(task, task.name + "_scan", plan, comment.str(),
                          candidate_templates(manifest()) + "\n" + body.str() + k.str());
  }

 private:
  std::string input_name(int v) const {
    return ident(tg_->task().inputs[static_cast<size_t>(tg_->input_index(v))].name);
  }
  // Loads the vector of every graph input among `leaves` into in_<name>[kVec].
  std::string load_leaves(const std::vector<int>& leaves, int skip) const {
    std::ostringstream s;
    for (int leaf : leaves) {
      if (leaf == skip) continue;
      s << "    float in_" << input_name(leaf) << "[kVec];\n";
      s << "    kevo::load_vec<kVec>(in_" << input_name(leaf) << ", p." << input_name(leaf) << " + i);\n";
    }
    return s.str();
  }

  TaskGraphPtr tg_;
  ScanMapping m_;
};

// The mapping through scan node `n`, or one with node = -1 when the graph does not fit.
ScanMapping map_scan(const TaskGraph& tg, int n) {
  ScanMapping m;
  const Graph& g = tg.graph();
  const Node& node = g.nodes[static_cast<size_t>(n)];
  if (node.inputs.size() != 1 || node.outputs.size() != 1) return m;
  const int in = node.inputs[0], out = node.outputs[0];
  const Shape& shape = g.values[static_cast<size_t>(in)].shape;
  if (shape.empty() || g.values[static_cast<size_t>(in)].dtype != DType::Float32 ||
      g.values[static_cast<size_t>(out)].dtype != DType::Float32)
    return m;
  auto same_shape_input = [&](int v) {
    return tg.input_index(v) >= 0 && g.values[static_cast<size_t>(v)].dtype == DType::Float32 &&
           g.values[static_cast<size_t>(v)].shape == shape;
  };
  m.prologue = elementwise_region(g, in, [&](int v) { return tg.input_index(v) >= 0; });
  if (!m.prologue.ok) return m;
  for (int leaf : m.prologue.leaves)
    if (!same_shape_input(leaf)) return m;
  const int o = tg.output();
  if (g.values[static_cast<size_t>(o)].dtype != DType::Float32 || g.values[static_cast<size_t>(o)].shape != shape) return m;
  m.epilogue = elementwise_region(g, o, [&](int v) { return v == out || tg.input_index(v) >= 0; });
  if (!m.epilogue.ok || std::find(m.epilogue.leaves.begin(), m.epilogue.leaves.end(), out) == m.epilogue.leaves.end())
    return m;
  for (int leaf : m.epilogue.leaves)
    if (leaf != out && !same_shape_input(leaf)) return m;
  m.inputs = m.prologue.leaves;
  for (int leaf : m.epilogue.leaves)
    if (leaf != out && std::find(m.inputs.begin(), m.inputs.end(), leaf) == m.inputs.end()) m.inputs.push_back(leaf);
  m.in = in;
  m.out = out;
  m.dim = static_cast<int>(std::get<int64_t>(node.attrs.at("dim")));
  m.node = n;
  return m;
}

}  // namespace

std::vector<std::unique_ptr<DesignSpace>> lower_scan(const TaskGraphPtr& tgp) {
  std::vector<std::unique_ptr<DesignSpace>> out;
  const TaskGraph& tg = *tgp;
  const Graph& g = tg.graph();
  if (g.outputs.size() != 1 || tg.input_index(tg.output()) >= 0) return out;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.op != "cumsum" && node.op != "cumprod") continue;
    auto dim = node.attrs.find("dim");
    if (dim == node.attrs.end() || !std::holds_alternative<int64_t>(dim->second)) continue;
    ScanMapping m = map_scan(tg, static_cast<int>(n));
    if (m.node < 0) continue;
    const int rank = tg.rank(m.in);
    std::vector<Facts> facts;
    for (size_t w = 0; w < tg.workloads(); ++w) {
      const int64_t rows = tg.product_value(w, m.in, 0, m.dim), len = tg.product_value(w, m.in, m.dim, m.dim + 1),
                    inner = tg.product_value(w, m.in, m.dim + 1, rank);
      facts.push_back({{"rows", rows}, {"len", len}, {"inner", inner}, {"strided", inner > 1 ? 1 : 0},
                       {"vec_span", inner > 1 ? inner : len}});
    }
    // Each workload must agree on whether the scan is strided (one layout family serves all).
    bool mixed = false;
    for (const Facts& f : facts) mixed = mixed || f.at("strided") != facts.front().at("strided");
    if (mixed) continue;
    try {  // every size the plans use must be an expression over the axes
      tg.product(m.in, 0, rank);
    } catch (const std::runtime_error&) {
      continue;
    }
    const std::string rows = tg.product(m.in, 0, m.dim), len = tg.product(m.in, m.dim, m.dim + 1),
                      inner = tg.product(m.in, m.dim + 1, rank);
    const bool strided = facts.front().at("strided") == 1;
    out.push_back(std::make_unique<ScanSpace>(tgp, std::move(m), std::move(facts)));
    DesignSpace& s = *out.back();
    s.express("rows", rows);
    s.express("len", len);
    s.express("inner", inner);
    s.express("strided", strided ? "1" : "0");
    s.express("vec_span", strided ? inner : len);
    s.assume({inner, strided ? ">" : "==", "1", strided ? "the strided layout scans along a dim that is not innermost"
                                                        : "the layout scans along the innermost dim"});
  }
  return out;
}

}  // namespace kevo::lower
