// Family "pool": max_pool2d, avg_pool2d and avg_pool1d of a float32 tensor, with the elementwise
// ops before the pooling (a prologue, applied to every input element read) and after it (an
// epilogue, applied as outputs are stored) fused into the same kernel. Two kernels: output tiles
// per block (pool/pool.cuh, space "pool/<op>") and warps streaming down column strips
// (pool/stream.cuh, space "pool_stream/<op>", offered where the window has stride 1 along W).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <variant>

#include "lower/families.h"

namespace kevo::lower {

namespace {

// The pooling window, (height, width); 1-D pooling has a window of height 1.
struct Window {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool average = false, count_pad = true;
  int64_t divisor = 0;  // divisor_override; 0 when not given
};

// How the task's graph maps onto the family: prologue -> pooling -> epilogue.
struct PoolMapping {
  int node = -1;
  int in = -1, out = -1;  // the pooling's input and output values
  int nd = 2;             // pooled dims
  Window win;
  Region prologue;        // the pooling's input from graph inputs
  Region epilogue;        // the graph's output from the pooling's result (and graph inputs)
  std::vector<int> inputs;  // graph inputs read, prologue's first
};

// What both kernels share: the mapping, the sizes of the plan, and the generated Window and Body.
class PoolSpaceBase : public DesignSpace {
 protected:
  PoolSpaceBase(std::string id, std::string description, const Manifest& manifest, TaskGraphPtr tg, PoolMapping m,
                std::vector<Facts> facts)
      : DesignSpace(std::move(id), std::move(description), manifest, std::move(facts)), tg_(std::move(tg)),
        m_(std::move(m)) {}

  // Plan expressions over the axes, named after the declarations of an input read by the
  // prologue (it has the pooling's input shape) and of the output (the pooling's output shape).
  struct Sizes {
    std::string planes, H, W, OH, OW;
  };
  Sizes sizes() const {
    const int rank = tg_->rank(m_.in);
    const int in = m_.prologue.leaves.empty() ? m_.in : m_.prologue.leaves.front(), out = tg_->output();
    return {tg_->product(in, 0, rank - m_.nd), m_.nd == 2 ? tg_->dim(in, rank - 2) : "1", tg_->dim(in, rank - 1),
            m_.nd == 2 ? tg_->dim(out, rank - 2) : "1", tg_->dim(out, rank - 1)};
  }

  // The graph as a comment, struct Window and struct Body (load and store with the fusions).
  std::string window_and_body() const {
    const Task& task = tg_->task();
    const Graph& gr = tg_->graph();
    const std::string out_name = ident(task.outputs.front().name);
    const Window& w = m_.win;
    std::ostringstream body;
    body << "// The pooling window and the fused prologue and epilogue, generated from the reference's op graph\n"
         << "// (first workload):\n";
    std::istringstream ref(gr.to_string());
    for (std::string line; std::getline(ref, line);) body << "//   " << line << "\n";
    body << "struct Window {\n"
         << "  static constexpr int kH = " << w.kh << ", kW = " << w.kw << ";\n"
         << "  static constexpr int kStrideH = " << w.sh << ", kStrideW = " << w.sw << ";\n"
         << "  static constexpr int kPadH = " << w.ph << ", kPadW = " << w.pw << ";\n"
         << "  static constexpr int kDilationH = " << w.dh << ", kDilationW = " << w.dw << ";\n"
         << "  static constexpr bool kAverage = " << (w.average ? "true" : "false") << ";\n"
         << "  static constexpr bool kCountPad = " << (w.count_pad ? "true" : "false") << ";\n"
         << "  static constexpr int kDivisor = " << w.divisor << ";\n};\n\n";
    body << "struct Body {\n  struct Params {\n";
    for (int in : m_.inputs) body << "    const float* __restrict__ " << input_name(in) << ";\n";
    body << "    float* __restrict__ " << out_name << ";\n  };\n\n";
    body << "  // Element i of the pooling's input %" << m_.in << ".\n";
    body << "  static __device__ __forceinline__ float load(const Params& p, long long i) {\n";
    if (m_.prologue.nodes.empty()) {
      body << "    return p." << input_name(m_.in) << "[i];\n";
    } else {
      std::string result;
      body << emit_region(gr, m_.prologue, [&](int leaf) { return "p." + input_name(leaf) + "[i]"; }, "    ", &result);
      body << "    return " << result << ";\n";
    }
    body << "  }\n\n";
    body << "  // Elements [i, i + kVec) of %" << m_.in << " (i a multiple of kVec, the vector inside one row).\n";
    body << "  template <int kVec>\n";
    body << "  static __device__ __forceinline__ void load_vec(const Params& p, long long i, float (&r)[kVec]) {\n";
    if (m_.prologue.nodes.empty()) {
      body << "    kevo::load_vec<kVec>(r, p." << input_name(m_.in) << " + i);\n";
    } else {
      for (int leaf : m_.prologue.leaves)
        body << "    float in_" << input_name(leaf) << "[kVec];\n    kevo::load_vec<kVec>(in_" << input_name(leaf)
             << ", p." << input_name(leaf) << " + i);\n";
      std::string result;
      body << "#pragma unroll\n    for (int e = 0; e < kVec; ++e) {\n";
      body << emit_region(
          gr, m_.prologue, [&](int leaf) { return "in_" + input_name(leaf) + "[e]"; }, "      ", &result);
      body << "      r[e] = " << result << ";\n    }\n";
    }
    body << "  }\n\n";
    body << "  // Stores output element i from the pooled value s (%" << m_.out << ").\n";
    body << "  static __device__ __forceinline__ void store(const Params& p, long long i, float s) {\n";
    if (m_.epilogue.nodes.empty()) {
      body << "    p." << out_name << "[i] = s;\n";
    } else {
      std::string result;
      body << emit_region(gr, m_.epilogue,
                          [&](int leaf) { return leaf == m_.out ? std::string("s") : "p." + input_name(leaf) + "[i]"; },
                          "    ", &result);
      body << "    p." << out_name << "[i] = " << result << ";\n";
    }
    body << "  }\n};\n\n";
    return body.str();
  }

  // The kernel's parameters and the plan's arguments for them: the graph inputs, the output.
  void buffer_params(std::vector<std::string>& params, std::vector<std::string>& fields, nlohmann::json& args) const {
    const Task& task = tg_->task();
    for (int in : m_.inputs) {
      params.push_back("const float* " + input_name(in));
      fields.push_back(input_name(in));
      args.push_back(task.inputs[static_cast<size_t>(tg_->input_index(in))].name);
    }
    params.push_back("float* " + ident(task.outputs.front().name));
    fields.push_back(ident(task.outputs.front().name));
    args.push_back(task.outputs.front().name);
  }

  std::string input_name(int v) const {
    return ident(tg_->task().inputs[static_cast<size_t>(tg_->input_index(v))].name);
  }

  TaskGraphPtr tg_;
  PoolMapping m_;
};

// Output tiles: a block per tile, each thread a patch of outputs (pool/pool.cuh).
class PoolSpace : public PoolSpaceBase {
 public:
  PoolSpace(TaskGraphPtr tg, PoolMapping m, std::vector<Facts> facts)
      : PoolSpaceBase("pool/" + tg->graph().nodes[static_cast<size_t>(m.node)].op,
                      "prologue, " + tg->graph().nodes[static_cast<size_t>(m.node)].op + " and epilogue in one kernel",
                      family_manifest("pool"), tg, m, std::move(facts)) {}

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    const Node& node = tg_->graph().nodes[static_cast<size_t>(m_.node)];
    const int64_t bw = v["kBlockW"], bh = v["kBlockH"], ow_per = v["kOutW"], oh_per = v["kOutH"], shared = v["kShared"];
    const Window& w = m_.win;
    const auto [planes, H, W, OH, OW] = sizes();
    const std::string body = window_and_body();

    const int64_t tile_h = bh * oh_per, tile_w = bw * ow_per;
    const std::string tiles_h = "((" + OH + " + " + std::to_string(tile_h - 1) + ") // " + std::to_string(tile_h) + ")";
    const std::string tiles_w = "((" + OW + " + " + std::to_string(tile_w - 1) + ") // " + std::to_string(tile_w) + ")";
    const int64_t span_h = (tile_h - 1) * w.sh + (w.kh - 1) * w.dh + 1, span_w = (tile_w - 1) * w.sw + (w.kw - 1) * w.dw + 1;
    const int64_t shared_bytes = shared ? span_h * span_w * 4 : 0;

    std::vector<std::string> params, fields;
    nlohmann::json args = nlohmann::json::array();
    buffer_params(params, fields, args);
    for (const std::string& s : {H, W, OH, OW, tiles_h, tiles_w}) args.push_back({{"int", s}});
    params.insert(params.end(), {"int H", "int W", "int OH", "int OW", "int tiles_h", "int tiles_w"});

    std::ostringstream k;
    k << "// " << node.op << ": a " << tile_h << " x " << tile_w << " output tile per block, " << oh_per << " x "
      << ow_per << " outputs per thread, input " << (shared ? "staged in shared memory" : "read from global memory")
      << ".\n";
    k << "extern \"C\" __global__ void __launch_bounds__(" << bw * bh << ") kevo_pool(";
    for (size_t i = 0; i < params.size(); ++i) k << (i ? ", " : "") << params[i];
    k << ") {\n  Body::Params p{";
    for (size_t i = 0; i < fields.size(); ++i) k << (i ? ", " : "") << fields[i];
    k << "};\n  kevo::pool2d<Window, " << bw << ", " << bh << ", " << ow_per << ", " << oh_per << ", "
      << enumerator(g, "kShared") << ", Body>(p, H, W, OH, OW, tiles_h, tiles_w);\n}\n";

    nlohmann::json step = {{"kernel", "kevo_pool"},
                           {"grid", nlohmann::json::array({planes + " * " + tiles_h + " * " + tiles_w})},
                           {"block", nlohmann::json::array({bw, bh})}};
    if (shared_bytes) step["shared_bytes"] = shared_bytes;
    step["args"] = args;
    nlohmann::json plan;
    plan["steps"] = nlohmann::json::array({step});
    std::ostringstream comment;
    comment << "Generated by kevo from template family 'pool' (space " << id() << ").\n"
            << "Genome: " << g.to_string() << " = blocks of " << bw << " x " << bh << " threads (W x H), " << ow_per
            << " x " << oh_per << " outputs per thread (W x H), " << (shared ? "shared-memory input tile" : "direct loads")
            << ".";
    return candidate_text(task, task.name + "_pool", plan, comment.str(),
                          candidate_templates(manifest()) + "\n" + body + k.str());
  }
};

// Streaming: warps walk down column strips, one row at a time (pool/stream.cuh). Space
// "pool_stream/<op>" loads one float per lane and column chunk; "pool_vec/<op>" (pool/vec.json)
// loads vectors of kVec adjacent columns (rows whose width kVec divides) and can stage its
// stores through shared memory.
class PoolStreamSpace : public PoolSpaceBase {
 public:
  PoolStreamSpace(TaskGraphPtr tg, PoolMapping m, std::vector<Facts> facts, bool vectors)
      : PoolSpaceBase(std::string(vectors ? "pool_vec/" : "pool_stream/") +
                          tg->graph().nodes[static_cast<size_t>(m.node)].op,
                      "prologue, " + tg->graph().nodes[static_cast<size_t>(m.node)].op +
                          " and epilogue in one kernel whose warps stream down column strips" +
                          (vectors ? ", loading vectors" : ""),
                      manifest_at(vectors ? "pool/vec.json" : "pool/stream.json"), tg, m, std::move(facts)),
        vectors_(vectors) {}

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    const Node& node = tg_->graph().nodes[static_cast<size_t>(m_.node)];
    const int64_t bw = v["kBlockW"], bh = v["kBlockH"], cols = v["kCols"], rows = v["kRows"], ahead = v["kAhead"];
    const int64_t vec = vectors_ ? v["kVec"] : 1, stage = vectors_ ? v["kStage"] : 0;
    const int64_t occupancy = vectors_ ? v["kOccupancy"] : 0;  // threads per SM asked of ptxas (0: its choice)
    const int64_t rolled = vectors_ ? v["kRolled"] : 0;
    const auto [planes, H, W, OH, OW] = sizes();
    const Window& w = m_.win;

    const int64_t strip = 32 * cols * vec, warps_w = bw / 32, walk = rows * bh;
    const std::string strips = "((" + OW + " + " + std::to_string(strip - 1) + ") // " + std::to_string(strip) + ")";
    const std::string groups_w = "((" + strips + " + " + std::to_string(warps_w - 1) + ") // " + std::to_string(warps_w) + ")";
    const std::string groups_h = "((" + OH + " + " + std::to_string(walk - 1) + ") // " + std::to_string(walk) + ")";

    std::vector<std::string> params, fields;
    nlohmann::json args = nlohmann::json::array();
    buffer_params(params, fields, args);
    for (const std::string& s : {H, W, OH, OW, groups_h, groups_w}) args.push_back({{"int", s}});
    params.insert(params.end(), {"int H", "int W", "int OH", "int OW", "int groups_h", "int groups_w"});

    std::ostringstream k;
    k << "// " << node.op << ", streaming: each warp owns a strip of " << strip << " columns (" << cols;
    if (vec > 1)
      k << " vector(s) of " << vec << " per lane, " << 32 * vec << " columns apart) and walks down\n";
    else
      k << " per lane, 32 apart) and walks down\n";
    k << "// " << rows << " output rows. Of each " << w.kh << " x " << w.kw
      << " window, the columns come from neighbouring lanes by shuffles, the rows from\n"
      << "// a ring of registers; the input rows of the next " << ahead
      << " step(s) are loaded while a step computes.\n"
      << "// A block is " << warps_w << " strip(s) side by side x " << bh << " walk(s) stacked.";
    if (stage) k << " Stores go through shared memory, 32 consecutive floats per instruction.";
    if (occupancy) k << "\n// Registers are capped so that " << occupancy << " threads fit an SM.";
    k << "\n";
    k << "extern \"C\" __global__ void __launch_bounds__(" << bw * bh;
    if (occupancy) k << ", " << occupancy / (bw * bh);  // blocks per SM: ptxas keeps registers within that
    k << ") kevo_pool(";
    for (size_t i = 0; i < params.size(); ++i) k << (i ? ", " : "") << params[i];
    k << ") {\n  Body::Params p{";
    for (size_t i = 0; i < fields.size(); ++i) k << (i ? ", " : "") << fields[i];
    k << "};\n  kevo::pool2d_stream<Window, /*kBlockW=*/" << bw << ", /*kBlockH=*/" << bh << ", /*kCols=*/" << cols
      << ", /*kRows=*/" << rows << ", /*kAhead=*/" << ahead << ", /*kVec=*/" << vec << ", "
      << (vectors_ ? enumerator(g, "kStage") : "kevo::Stores::Direct") << ", "
      << (vectors_ ? enumerator(g, "kRolled") : "kevo::Walk::Unrolled")
      << ", Body>(p, H, W, OH, OW, groups_h, groups_w);\n}\n";

    nlohmann::json step = {{"kernel", "kevo_pool"},
                           {"grid", nlohmann::json::array({planes + " * " + groups_h + " * " + groups_w})},
                           {"block", nlohmann::json::array({bw, bh})}};
    if (stage) step["shared_bytes"] = bw * bh * cols * vec * 4;  // a strip's row of outputs per warp
    step["args"] = args;
    nlohmann::json plan;
    plan["steps"] = nlohmann::json::array({step});
    std::ostringstream comment;
    comment << "Generated by kevo from template family 'pool', streaming kernel (space " << id() << ").\n"
            << "Genome: " << g.to_string() << " = blocks of " << warps_w << " x " << bh << " warps (W x H), strips of "
            << strip << " columns";
    if (vec > 1) comment << " (vectors of " << vec << ")";
    comment << ", walks of " << rows << " output rows, " << ahead << " step(s) loaded ahead";
    if (stage) comment << ", stores staged in shared memory";
    if (occupancy) comment << ", registers for " << occupancy << " threads per SM";
    if (rolled) comment << ", the walk's loop rolled";
    comment << ".";
    return candidate_text(task, task.name + "_pool", plan, comment.str(),
                          candidate_templates(manifest()) + "\n" + window_and_body() + k.str());
  }

 private:
  bool vectors_;
};

// Whether the streaming kernel serves the window (its manifest's constraints on the window alone).
bool streams(const Window& w) { return w.sw == 1 && (w.kw - 1) * w.dw <= 32 && w.pw <= (w.kw - 1) * w.dw; }

// The window of a pooling node: torch's attributes, with 1-D windows as height 1.
bool window_of(const Node& n, int nd, Window& w) {
  auto ints = [&](const char* key, int64_t fallback) -> std::vector<int64_t> {
    auto it = n.attrs.find(key);
    if (it == n.attrs.end() || std::holds_alternative<std::monostate>(it->second))
      return std::vector<int64_t>(static_cast<size_t>(nd), fallback);
    if (const auto* l = std::get_if<std::vector<int64_t>>(&it->second)) return *l;
    if (const auto* i = std::get_if<int64_t>(&it->second)) return std::vector<int64_t>(static_cast<size_t>(nd), *i);
    return {};
  };
  std::vector<int64_t> k = ints("kernel_size", 0), s = ints("stride", 0), p = ints("padding", 0), d = ints("dilation", 1);
  if (k.size() != static_cast<size_t>(nd) || s.size() != k.size() || p.size() != k.size() || d.size() != k.size())
    return false;
  if (nd == 1) k.insert(k.begin(), 1), s.insert(s.begin(), 1), p.insert(p.begin(), 0), d.insert(d.begin(), 1);
  w.kh = k[0], w.kw = k[1], w.sh = s[0], w.sw = s[1], w.ph = p[0], w.pw = p[1], w.dh = d[0], w.dw = d[1];
  for (int64_t x : {w.kh, w.kw, w.sh, w.sw, w.dh, w.dw})
    if (x < 1 || x > 1024) return false;
  if (w.ph < 0 || w.pw < 0 || w.ph > 1024 || w.pw > 1024) return false;
  w.average = n.op != "max_pool2d";
  if (w.average) {
    auto cp = n.attrs.find("count_include_pad");
    w.count_pad = cp == n.attrs.end() || !std::holds_alternative<bool>(cp->second) || std::get<bool>(cp->second);
    auto dv = n.attrs.find("divisor_override");
    if (dv != n.attrs.end() && std::holds_alternative<int64_t>(dv->second)) w.divisor = std::get<int64_t>(dv->second);
    if (w.divisor < 0 || w.divisor > (1 << 24)) return false;
  }
  return true;
}

// The mapping through pooling node `n`, or one with node = -1 when the graph does not fit.
PoolMapping map_pool(const TaskGraph& tg, int n) {
  PoolMapping m;
  const Graph& g = tg.graph();
  const Node& node = g.nodes[static_cast<size_t>(n)];
  if (node.inputs.size() != 1 || node.outputs.size() != 1) return m;
  m.nd = node.op == "avg_pool1d" ? 1 : 2;
  if (!window_of(node, m.nd, m.win)) return m;
  const int in = node.inputs[0], out = node.outputs[0];
  const ValueInfo &vin = g.values[static_cast<size_t>(in)], &vout = g.values[static_cast<size_t>(out)];
  if (vin.dtype != DType::Float32 || vout.dtype != DType::Float32 || static_cast<int>(vin.shape.size()) < m.nd + 1)
    return m;
  auto input_of_shape = [&](int v, const Shape& shape) {
    return tg.input_index(v) >= 0 && g.values[static_cast<size_t>(v)].dtype == DType::Float32 &&
           g.values[static_cast<size_t>(v)].shape == shape;
  };
  m.prologue = elementwise_region(g, in, [&](int v) { return tg.input_index(v) >= 0; });
  if (!m.prologue.ok) return m;
  for (int leaf : m.prologue.leaves)
    if (!input_of_shape(leaf, vin.shape)) return m;
  const int o = tg.output();
  if (g.values[static_cast<size_t>(o)].dtype != DType::Float32 || g.values[static_cast<size_t>(o)].shape != vout.shape)
    return m;
  m.epilogue = elementwise_region(g, o, [&](int v) { return v == out || tg.input_index(v) >= 0; });
  if (!m.epilogue.ok || std::find(m.epilogue.leaves.begin(), m.epilogue.leaves.end(), out) == m.epilogue.leaves.end())
    return m;
  for (int leaf : m.epilogue.leaves)
    if (leaf != out && !input_of_shape(leaf, vout.shape)) return m;
  m.inputs = m.prologue.leaves;
  for (int leaf : m.epilogue.leaves)
    if (leaf != out && std::find(m.inputs.begin(), m.inputs.end(), leaf) == m.inputs.end()) m.inputs.push_back(leaf);
  m.in = in;
  m.out = out;
  m.node = n;
  return m;
}

}  // namespace

std::vector<std::unique_ptr<DesignSpace>> lower_pool(const TaskGraphPtr& tgp) {
  std::vector<std::unique_ptr<DesignSpace>> out;
  const TaskGraph& tg = *tgp;
  const Graph& g = tg.graph();
  if (!tg.one_computed_output()) return out;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const std::string& op = g.nodes[n].op;
    if (op != "max_pool2d" && op != "avg_pool2d" && op != "avg_pool1d") continue;
    PoolMapping m = map_pool(tg, static_cast<int>(n));
    if (m.node < 0) continue;
    const int rank = tg.rank(m.in);
    try {  // every size the plan uses must be an expression over the axes
      tg.product(m.in, 0, rank);
      tg.product(m.out, 0, rank);
    } catch (const std::runtime_error&) {
      continue;
    }
    std::vector<Facts> facts;
    for (size_t w = 0; w < tg.workloads(); ++w) {
      const Shape &is = tg.graph(w).values[static_cast<size_t>(m.in)].shape,
                  &os = tg.graph(w).values[static_cast<size_t>(m.out)].shape;
      const size_t r = is.size();
      const Window& win = m.win;
      facts.push_back({{"planes", tg.product_value(w, m.in, 0, rank - m.nd)},
                       {"h", m.nd == 2 ? is[r - 2] : 1},
                       {"w", is[r - 1]},
                       {"oh", m.nd == 2 ? os[r - 2] : 1},
                       {"ow", os[r - 1]},
                       {"kh", win.kh},
                       {"kw", win.kw},
                       {"sh", win.sh},
                       {"sw", win.sw},
                       {"dh", win.dh},
                       {"dw", win.dw},
                       {"ph", win.ph},
                       {"pw", win.pw},
                       {"span_h", (win.kh - 1) * win.dh + 1},  // input rows of one window
                       {"new_rows", std::min(win.sh, (win.kh - 1) * win.dh + 1)},  // rows entering the next window
                       {"one_d", m.nd == 1 ? 1 : 0}});
    }
    // The sizes as the plans spell them; the window's numbers are the op's.
    std::map<std::string, std::string> exprs{{"planes", tg.product(m.in, 0, rank - m.nd)},
                                             {"h", m.nd == 2 ? tg.dim(m.in, rank - 2) : "1"},
                                             {"w", tg.dim(m.in, rank - 1)},
                                             {"oh", m.nd == 2 ? tg.dim(m.out, rank - 2) : "1"},
                                             {"ow", tg.dim(m.out, rank - 1)}};
    for (const auto& [name, value] : facts.front())
      if (!exprs.count(name)) exprs[name] = std::to_string(value);
    const size_t first = out.size();
    out.push_back(std::make_unique<PoolSpace>(tgp, m, facts));
    if (streams(m.win)) {
      // Vectors of 2 or 4 columns need rows whose width 2 divides in every workload.
      const bool even_rows = std::all_of(facts.begin(), facts.end(), [](const Facts& f) { return f.at("w") % 2 == 0; });
      out.push_back(std::make_unique<PoolStreamSpace>(tgp, m, facts, false));
      if (even_rows) out.push_back(std::make_unique<PoolStreamSpace>(tgp, std::move(m), std::move(facts), true));
      if (even_rows) out.back()->assume({"(" + exprs.at("w") + ") % 2", "==", "0", "vectors of 2 or 4 columns need even rows"});
    }
    for (size_t i = first; i < out.size(); ++i)
      for (const auto& [name, expr] : exprs) out[i]->express(name, expr);
  }
  return out;
}

}  // namespace kevo::lower
