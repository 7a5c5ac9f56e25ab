// Family "normalize", the channel-column kernel: batch norm in training mode of an [N, C] matrix
// (a channel is a column), with elementwise ops fused before and after it.
#include <nlohmann/json.hpp>

#include <sstream>

#include "lower/normalize.h"

namespace kevo::lower::normalize {

namespace {

struct ChannelColumnsOp {
  int x = -1;                         // graph input read
  std::vector<std::string> pointers;  // weight, bias (contract names), those given
  std::string norm, what;             // the generated `struct Norm`; the op in words
};

// The ChannelColumnsOp of a batch_norm node on a rank-2 input, or false.
bool channel_columns_op(const TaskGraph& tg, int node, ChannelColumnsOp* op) {
  const Graph& g = tg.graph();
  const Task& task = tg.task();
  const Node& n = g.nodes[static_cast<size_t>(node)];
  if (n.op != "batch_norm" || n.inputs.empty() || n.inputs[0] < 0) return false;
  const int in = n.inputs[0], out = n.outputs.front(), y = tg.output();
  if (tg.rank(in) != 2 || g.values[static_cast<size_t>(out)].dtype != DType::Float32) return false;
  Region pro;
  const int x = single_input_region(tg, in, &pro);
  if (x < 0) return false;
  Region epi = elementwise_region(g, y, [&](int v) { return v == out; });
  if (!epi.ok || epi.leaves != std::vector<int>{out}) return false;
  if (g.values[static_cast<size_t>(y)].shape != g.values[static_cast<size_t>(out)].shape) return false;

  std::string params, stats_fields = "    float mean, rstd;", stats_values, value = "(x - s.mean) * s.rstd";
  for (int i : {1, 2}) {
    const int v = n.inputs.size() > static_cast<size_t>(i) ? n.inputs[static_cast<size_t>(i)] : -1;
    if (v < 0) continue;
    if (tg.input_index(v) < 0 || g.values[static_cast<size_t>(v)].dtype != DType::Float32) return false;
    op->pointers.push_back(task.inputs[static_cast<size_t>(tg.input_index(v))].name);
    const std::string name = tensor_param(op->pointers.back()), field = i == 1 ? "w" : "b";
    params += "    const float* __restrict__ " + name + ";  // " + (i == 1 ? "weight" : "bias") + ", one per channel\n";
    stats_fields += " float " + field + ";";
    stats_values += ", p." + name + "[c]";
    value += i == 1 ? " * s.w" : " + s.b";
  }
  std::string pro_result = "x", pro_code;
  if (!pro.nodes.empty()) pro_code = emit_region(g, pro, [](int) { return std::string("x"); }, "    ", &pro_result);
  std::string epi_result;
  std::string epi_code = emit_region(g, epi, [&](int) { return "v" + std::to_string(out); }, "    ", &epi_result);
  op->what = "batch_norm in training mode of an [N, C] matrix: statistics of each channel (column) over the N rows";
  std::ostringstream s;
  s << "// " << op->what << ".\nstruct Norm {\n";
  if (params.empty()) s << "  struct Params {};\n";
  else s << "  struct Params {\n" << params << "  };\n";
  s << "  struct Stats {\n" << stats_fields << "\n  };\n\n";
  s << "  // Applied to x as it is loaded: " << (pro.nodes.empty() ? "nothing" : "the graph's elementwise ops before the norm")
    << ".\n  static __device__ __forceinline__ float prologue(float x) {\n" << pro_code << "    return " << pro_result
    << ";\n  }\n\n";
  s << "  static __device__ __forceinline__ Stats stats(const Params& p, float mean, float var, long long c) {\n"
    << (stats_values.empty() ? "    (void)p, (void)c;\n" : "")
    << "    return {mean, rsqrtf(var + " << float_literal(attr_float(n, "eps")) << ")" << stats_values << "};\n  }\n\n";
  s << "  static __device__ __forceinline__ float apply(const Params& p, const Stats& s, float x) {\n"
    << "    (void)p;\n    const float v" << out << " = " << value << ";\n" << epi_code << "    return " << epi_result
    << ";\n  }\n};\n";
  op->norm = s.str();
  op->x = x;
  return true;
}

class ChannelColumnsSpace : public DesignSpace {
 public:
  ChannelColumnsSpace(TaskGraphPtr tg, ChannelColumnsOp op, std::vector<Facts> facts)
      : DesignSpace("normalize_channel_columns/batch_norm",
                    op.what + "; threads along the channels, the rows split over CTAs meeting in a scratch buffer",
                    manifest_at("normalize/channel_columns.json"), std::move(facts)),
        tg_(std::move(tg)), op_(std::move(op)) {}

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    const int64_t bx = v["kBlockX"], by = v["kBlockY"], vec = v["kVec"], items = v["kItems"], split = v["kSplit"],
                  hint = v["kHint"];
    const std::string x_name = task.inputs[static_cast<size_t>(tg_->input_index(op_.x))].name;
    const std::string y_name = task.outputs.front().name;
    const std::string x = tensor_param(x_name), y = tensor_param(y_name);
    const std::string rows = tg_->dim(op_.x, 0), cols = tg_->dim(op_.x, 1);
    static const char* passes[] = {"kevo::ColumnPass::Stats", "kevo::ColumnPass::Apply", "kevo::ColumnPass::Fused"};

    auto wrapper = [&](const std::string& name, int pass) {
      std::ostringstream k;
      k << "extern \"C\" __global__ void __launch_bounds__(" << bx * by << ") " << name << "(const float* " << x;
      for (const std::string& p : op_.pointers) k << ", const float* " << tensor_param(p);
      if (pass != 2) k << ", float4* partials";
      if (pass != 0) k << ", float* " << y;
      k << ", int rows, long long cols) {\n  const Norm::Params p{";
      for (size_t i = 0; i < op_.pointers.size(); ++i) k << (i ? ", " : "") << tensor_param(op_.pointers[i]);
      k << "};\n  kevo::normalize_channel_columns<" << bx << ", " << by << ", " << vec << ", " << items << ", " << split
        << ", " << enumerator(g, "kHint") << ", " << passes[pass] << ", Norm>(p, " << x << ", "
        << (pass == 2 ? "nullptr" : "partials") << ", "
        << (pass == 0 ? "nullptr" : y) << ", rows, cols);\n}\n";
      return k.str();
    };
    auto args = [&](int pass) {
      nlohmann::json a = nlohmann::json::array();
      a.push_back(x_name);
      for (const std::string& p : op_.pointers) a.push_back(p);
      if (pass != 2) a.push_back("partials");
      if (pass != 0) a.push_back(y_name);
      a.push_back({{"int", rows}});
      a.push_back({{"int64", cols}});
      return a;
    };
    const int64_t width = bx * vec;
    std::string grid = "(" + cols + " + " + std::to_string(width - 1) + ") // " + std::to_string(width);
    if (split > 1) grid = "(" + grid + ") * " + std::to_string(split);
    nlohmann::json plan;
    std::string kernels;
    auto step = [&](const std::string& name, int pass) {
      nlohmann::json st = {{"kernel", name}, {"grid", {grid}}, {"block", {bx * by}}};
      st["args"] = args(pass);
      return st;
    };
    if (split == 1) {
      kernels = wrapper("kevo_normalize_channel_columns", 2);
      plan["steps"] = nlohmann::json::array({step("kevo_normalize_channel_columns", 2)});
    } else {
      kernels = wrapper("kevo_normalize_channel_columns_stats", 0) + "\n" +
                wrapper("kevo_normalize_channel_columns_apply", 1);
      plan["buffers"]["partials"] = {{"dtype", "float32"},
                                     {"shape", nlohmann::json::array({std::to_string(split), cols, "4"})}};
      plan["steps"] = nlohmann::json::array(
          {step("kevo_normalize_channel_columns_stats", 0), step("kevo_normalize_channel_columns_apply", 1)});
    }

    std::ostringstream c;
    c << "Generated by kevo from template family 'normalize' (space " << id() << ").\nThe op: " << op_.what
      << ",\nx = [" << rows << ", " << cols << "].\n";
    c << "Genome: " << g.to_string() << " = tiles of " << bx << " x " << vec << " channels, " << by << " thread"
      << (by > 1 ? "s" : "") << " per channel in a CTA, " << items << " row" << (items > 1 ? "s" : "")
      << " per thread per step, "
      << (split == 1 ? std::string("one CTA per tile holding whole channels (one launch, each chunk read twice)")
                     : "the rows split over " + std::to_string(split) +
                           " CTAs meeting through a scratch buffer (two launches)")
      << ", " << (hint ? "streaming L2 hints on the last read and the store" : "no L2 hints") << ".";
    std::string source = candidate_templates(manifest()) + "\n" + graph_comment(tg_->graph()) +
                         op_.norm + "\n" + kernels;
    return candidate_text(task, task.name + "_normalize_channel_columns", plan, c.str(), source);
  }

 private:
  TaskGraphPtr tg_;
  ChannelColumnsOp op_;
};

}  // namespace

std::unique_ptr<DesignSpace> channel_columns_space(const TaskGraphPtr& tgp, int node) {
  const TaskGraph& tg = *tgp;
  ChannelColumnsOp cols;
  if (!channel_columns_op(tg, node, &cols)) return nullptr;
  std::vector<Facts> facts;
  for (size_t w = 0; w < tg.workloads(); ++w)
    facts.push_back({{"rows", tg.product_value(w, cols.x, 0, 1)}, {"cols", tg.product_value(w, cols.x, 1, 2)}});
  const std::string rows = tg.product(cols.x, 0, 1), columns = tg.product(cols.x, 1, 2);
  auto s = std::make_unique<ChannelColumnsSpace>(tgp, std::move(cols), std::move(facts));
  s->express("rows", rows);
  s->express("cols", columns);
  return s;
}

}  // namespace kevo::lower::normalize
