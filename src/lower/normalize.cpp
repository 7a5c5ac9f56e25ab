// Family "normalize": reduce-then-broadcast graphs. softmax, log_softmax, layer_norm, group_norm,
// instance_norm and batch_norm nodes (with elementwise ops fused before and after), and the pattern
// "elementwise -> sum/mean over dims -> elementwise of the input and that statistic" (RMS norm),
// lowered onto the row kernel (the reduced elements contiguous; for batch norm, a channel of
// [N, C, S] read through kevo::ChannelRows), the column kernel (the reduced dims have an inner
// stride) or the channel-column kernel (batch norm of an [N, C] matrix).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <sstream>

#include "lower/normalize.h"

namespace kevo::lower {

namespace normalize {

std::string graph_comment(const Graph& g) {
  std::ostringstream s;
  s << "// The op graph (first workload):\n";
  std::istringstream ref(g.to_string());
  for (std::string line; std::getline(ref, line);) s << "//   " << line << "\n";
  return s.str();
}

// The C++ name of a tensor as a kernel parameter (and Norm::Params field), kept clear of the
// size parameters beside it.
std::string tensor_param(const std::string& name) {
  static const std::set<std::string> taken = {"rows", "n", "inner", "channels", "channels_per_group", "partials",
                                              "outer", "reduce", "p", "spatial", "layout", "cols"};
  std::string n = ident(name);
  return taken.count(n) ? "t_" + n : n;
}

// An elementwise region over exactly one graph input of the target's shape (the prologue before
// a norm, or what a pattern's reduction sums): the input's value id, or -1.
int single_input_region(const TaskGraph& tg, int target, Region* region) {
  const Graph& g = tg.graph();
  *region = elementwise_region(g, target, [&](int v) { return tg.input_index(v) >= 0; });
  if (!region->ok || region->leaves.size() != 1) return -1;
  int x = region->leaves.front();
  const ValueInfo& xv = g.values[static_cast<size_t>(x)];
  if (xv.dtype != DType::Float32 || xv.shape != g.values[static_cast<size_t>(target)].shape) return -1;
  return x;
}

Split split(const TaskGraph& tg, int v, int from, int to) {
  Split s;
  s.outer = tg.product(v, 0, from);
  s.reduce = tg.product(v, from, to);
  s.inner = tg.product(v, to, tg.rank(v));
  for (size_t w = 0; w < tg.workloads(); ++w)
    s.facts.push_back({{"outer", tg.product_value(w, v, 0, from)},
                       {"reduce", tg.product_value(w, v, from, to)},
                       {"inner", tg.product_value(w, v, to, tg.rank(v))}});
  return s;
}

bool inner_is_one(const Split& s) {
  for (const Facts& f : s.facts)
    if (f.at("inner") != 1) return false;
  return true;
}

std::string prologue_function(const NormParts& parts) {
  std::ostringstream s;
  if (parts.prologue.empty()) {
    s << "  // Applied to x as it is loaded: nothing (no elementwise ops before the norm).\n";
    s << "  template <int kVec>\n  static __device__ __forceinline__ void prologue(float (&)[kVec]) {}\n";
    return s.str();
  }
  s << "  // Applied to x as it is loaded: the graph's elementwise ops before the norm.\n";
  s << "  template <int kVec>\n  static __device__ __forceinline__ void prologue(float (&v)[kVec]) {\n";
  s << "#pragma unroll\n    for (int k = 0; k < kVec; ++k) {\n" << parts.prologue << "      v[k] = " << parts.result
    << ";\n    }\n  }\n";
  return s.str();
}

}  // namespace normalize

namespace {

using normalize::graph_comment;
using normalize::inner_is_one;
using normalize::norm_node_op;
using normalize::NormParts;
using normalize::prologue_function;
using normalize::RowsOp;
using normalize::single_input_region;
using normalize::Split;
using normalize::split;
using normalize::tensor_param;

// The C++ name of a graph input inside generated functions, kept clear of their own names.
std::string scalar_name(const Task& task, int input_index) {
  static const std::set<std::string> taken = {"v", "s", "p", "k", "n", "out", "row", "col", "sum", "count", "part", "red"};
  std::string n = ident(task.inputs[static_cast<size_t>(input_index)].name);
  bool generated = n.size() > 1 && n[0] == 'v' && std::all_of(n.begin() + 1, n.end(), ::isdigit);
  return taken.count(n) || generated ? "in_" + n : n;
}

// ---------------------------------------------------------------------------------------------
// The row kernel.

class RowsSpace : public DesignSpace {
 public:
  RowsSpace(TaskGraphPtr tg, RowsOp op)
      : DesignSpace(op.id, op.description, manifest_at(op.manifest), op.facts), tg_(std::move(tg)), op_(std::move(op)) {
    express("rows", op_.rows);
    express("row", op_.row);
    express("vec_unit", op_.vec_unit.empty() ? op_.row : op_.vec_unit);
    express("algos", std::to_string(op_.facts.front().at("algos")));  // of the op
    if (!op_.inner.empty() && op_.inner != "1")
      assume({op_.inner, "==", "1", "rows are contiguous: the dims after the normalised ones are 1 (as in every workload)"});
  }

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    std::string kernels;
    nlohmann::json plan;
    if (v["kSplit"] > 1) kernels = split_kernels(g, v, plan);
    else kernels = row_kernel(g, v, plan);
    std::string source = candidate_templates(manifest()) + "\n" + graph_comment(tg_->graph()) + op_.norm + "\n" + kernels;
    return candidate_text(task, task.name + "_" + id().substr(0, id().find('/')), plan, genome_comment(g, v), source);
  }

 private:
  std::string x_name() const { return tg_->task().inputs[static_cast<size_t>(tg_->input_index(op_.x))].name; }
  std::string y_name() const { return tg_->task().outputs.front().name; }

  // One wrapper per launch: its parameters, Norm::Params from them, the template's call.
  std::string wrapper(std::map<std::string, int64_t>& v, const std::string& name, const std::string& buffers,
                      const std::string& call) const {
    const int64_t block = v["kThreads"] * v["kRows"], cluster = v["kCluster"];
    std::ostringstream k;
    k << "extern \"C\" __global__ void __launch_bounds__(" << block << ") ";
    if (cluster > 1) k << "__cluster_dims__(" << cluster << ", 1, 1) ";
    k << name << "(const float* " << tensor_param(x_name());
    for (const std::string& p : op_.pointers) k << ", const float* " << tensor_param(p);
    k << buffers << ", long long rows, int n";
    for (const auto& [field, expr] : op_.ints) k << ", int " << field;
    if (op_.channels) k << ", int channels, int spatial";
    k << ") {\n  const Norm::Params p{";
    std::vector<std::string> fields;
    for (const std::string& p : op_.pointers) fields.push_back(tensor_param(p));
    for (const auto& [field, expr] : op_.ints) fields.push_back(field);
    for (size_t i = 0; i < fields.size(); ++i) k << (i ? ", " : "") << fields[i];
    k << "};\n";
    if (op_.channels) k << "  const kevo::ChannelRows layout(channels, spatial);  // row c: channel c of [N, C, S]\n";
    k << "  " << call << "\n}\n";
    return k.str();
  }

  // A launch's arguments: x, the Norm's pointers, `buffers`, then the sizes.
  nlohmann::json launch_args(const std::vector<std::string>& buffers) const {
    nlohmann::json a = nlohmann::json::array();
    a.push_back(x_name());
    for (const std::string& p : op_.pointers) a.push_back(p);
    for (const std::string& b : buffers) a.push_back(b);
    a.push_back({{"int64", op_.rows}});
    a.push_back({{"int", op_.row}});
    for (const auto& [field, expr] : op_.ints) a.push_back({{"int", expr}});
    if (op_.channels) {
      a.push_back({{"int", op_.channel_count}});
      a.push_back({{"int", op_.spatial}});
    }
    return a;
  }

  // kSplit > 1: a row's statistics from kSplit CTAs into a scratch buffer, then the apply launch.
  std::string split_kernels(const Genome& g, std::map<std::string, int64_t>& v, nlohmann::json& plan) const {
    const int64_t block = v["kThreads"] * v["kRows"], split = v["kSplit"], waves = v["kWaves"];
    const std::string x = tensor_param(x_name()), y = tensor_param(y_name()), layout = op_.channels ? ", layout" : "";
    const std::string tail = std::to_string(v["kThreads"]) + ", " + std::to_string(split) + ", " + std::to_string(v["kVec"]) +
                             ", " + std::to_string(v["kItems"]) + ", " + enumerator(g, "kHint") + ", " + enumerator(g, "kAlgo") +
                             ", Norm>";
    const std::string kernels =
        wrapper(v, "kevo_normalize_rows_stats", ", float4* partials",
                "kevo::normalize_rows_split_stats<" + tail + "(p, " + x + ", partials, rows, n" + layout + ");") +
        "\n" +
        wrapper(v, "kevo_normalize_rows_apply", ", const float4* partials, float* " + y,
                "kevo::normalize_rows_split_apply<" + tail + "(p, " + x + ", partials, " + y + ", rows, n" + layout + ");");
    const std::string grid = waves == 0 ? paren(op_.rows) + " * " + std::to_string(split) : std::to_string(waves) + " * num_sms";
    nlohmann::json partials = {{"dtype", "float32"}};
    partials["shape"] = nlohmann::json::array({op_.rows, std::to_string(split * 4)});
    plan["buffers"]["partials"] = partials;
    nlohmann::json stats = {{"kernel", "kevo_normalize_rows_stats"}, {"grid", {grid}}, {"block", {block}}};
    stats["args"] = launch_args({"partials"});
    nlohmann::json apply = {{"kernel", "kevo_normalize_rows_apply"}, {"grid", {grid}}, {"block", {block}}};
    apply["args"] = launch_args({"partials", y_name()});
    plan["steps"] = nlohmann::json::array({stats, apply});
    return kernels;
  }

  // kSplit 1: one launch, kRows rows per CTA (a row over a cluster of kCluster CTAs).
  std::string row_kernel(const Genome& g, std::map<std::string, int64_t>& v, nlohmann::json& plan) const {
    const int64_t threads = v["kThreads"], rows = v["kRows"], cluster = v["kCluster"], vec = v["kVec"], waves = v["kWaves"];
    const int64_t block = threads * rows;
    const std::string x = tensor_param(x_name()), y = tensor_param(y_name()), layout = op_.channels ? ", layout" : "";
    const std::string kernels =
        wrapper(v, "kevo_normalize_rows", ", float* " + y,
                "kevo::normalize_rows<" + std::to_string(threads) + ", " + std::to_string(rows) + ", " + std::to_string(cluster) +
                    ", " + std::to_string(vec) + ", " + std::to_string(v["kItems"]) + ", " + enumerator(g, "kCache") + ", " +
                    enumerator(g, "kHint") + ", " + enumerator(g, "kAlgo") + ", Norm>(p, " + x + ", " + y + ", rows, n" +
                    layout + ");");
    std::string grid;
    if (waves == 0) {
      grid = rows == 1 ? op_.rows : "(" + op_.rows + " + " + std::to_string(rows - 1) + ") // " + std::to_string(rows);
      if (cluster > 1) grid = paren(grid) + " * " + std::to_string(cluster);
    } else {
      grid = cluster > 1 ? "(" + std::to_string(waves) + " * num_sms // " + std::to_string(cluster) + ") * " + std::to_string(cluster)
                         : std::to_string(waves) + " * num_sms";
    }
    nlohmann::json step = {{"kernel", "kevo_normalize_rows"}, {"grid", {grid}}, {"block", {block}}};
    if (v["kCache"] == 1) {
      const int64_t span = cluster * vec;
      std::string chunk = span == 1 ? paren(op_.row)
                                    : "((" + op_.row + " + " + std::to_string(span - 1) + ") // " + std::to_string(span) +
                                          " * " + std::to_string(vec) + ")";
      step["shared_bytes"] = std::to_string(rows * 4) + " * " + chunk;
    }
    step["args"] = launch_args({y_name()});
    plan["steps"] = nlohmann::json::array({step});
    return kernels;
  }

  std::string genome_comment(const Genome& g, std::map<std::string, int64_t>& v) const {
    const int64_t threads = v["kThreads"], rows = v["kRows"], cluster = v["kCluster"], split = v["kSplit"], vec = v["kVec"],
                  items = v["kItems"], cache = v["kCache"], algo = v["kAlgo"], hint = v["kHint"], waves = v["kWaves"];
    static const char* cache_words[] = {"the row re-read from global memory between passes",
                                        "the row chunk kept in shared memory", "the row chunk kept in registers"};
    static const char* hint_words[] = {"no L2 hints", "streaming L2 hints on the last read and the store",
                                       "evict-last L2 hint on the first reads, streaming on the last read and the store"};
    auto plural = [](int64_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); };
    const std::string& unit = op_.unit;
    std::string sharing = "no cluster";
    if (cluster > 1) sharing = "each " + unit + " split over a cluster of " + std::to_string(cluster) + " CTAs";
    if (split > 1)
      sharing = "each " + unit + " split over " + std::to_string(split) +
                " CTAs meeting through a scratch buffer (two launches)";
    std::ostringstream c;
    c << "Generated by kevo from template family 'normalize' (space " << id() << ").\n" << op_.summary << "\n";
    c << "Genome: " << g.to_string() << " = " << plural(threads, "thread") << " per " << unit << ", " << plural(rows, unit)
      << " per CTA, " << sharing << ", " << (vec == 1 ? std::string("scalar") : "float" + std::to_string(vec))
      << " accesses, " << plural(items, "vector") << " per thread per tile, " << cache_words[cache] << ", "
      << (op_.facts.front().at("algos") == 1 ? "one sum" : algo == 0 ? "two-pass statistics" : "single-pass statistics")
      << ", " << hint_words[hint] << ", "
      << (waves == 0 ? "one CTA per " + unit + " tile" : plural(waves, "CTA") + " per SM striding over the " + unit + "s")
      << ".";
    return c.str();
  }

  TaskGraphPtr tg_;
  RowsOp op_;
};

// ---------------------------------------------------------------------------------------------
// The pattern: y = E(x, s) where s = sum or mean over dims [from, to) of P(x), P and E elementwise.

struct Pattern {
  int x = -1, reduction = -1, stat = -1;  // the input, the reduction node, its output value
  int from = 0, to = 0;
  Region term;                            // P, over x
  Region per_column, per_element;         // E split: what depends on s only, and the rest
  std::vector<int> frontier;              // values of per_column that per_element reads
};

bool find_pattern(const TaskGraph& tg, Pattern* pt) {
  const Graph& g = tg.graph();
  const int y = tg.output();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if ((n.op != "sum" && n.op != "mean") || n.inputs.size() != 1 || n.outputs.size() != 1) continue;
    Pattern p;
    p.reduction = static_cast<int>(i);
    p.stat = n.outputs.front();
    if (g.values[static_cast<size_t>(p.stat)].dtype != DType::Float32) continue;
    std::vector<int64_t> dims = attr_ints(n, "dim");
    std::sort(dims.begin(), dims.end());
    if (dims.empty() || dims.back() - dims.front() + 1 != static_cast<int64_t>(dims.size())) continue;  // contiguous
    p.from = static_cast<int>(dims.front());
    p.to = static_cast<int>(dims.back()) + 1;
    if (!attr_bool(n, "keepdim") && p.from != 0) continue;  // then s would broadcast along the wrong dims
    p.x = single_input_region(tg, n.inputs[0], &p.term);
    if (p.x < 0) continue;
    const Shape& xs = g.values[static_cast<size_t>(p.x)].shape;
    if (g.values[static_cast<size_t>(y)].shape != xs) continue;
    Region e = elementwise_region(g, y, [&](int v) { return v == p.x || v == p.stat; });
    if (!e.ok || std::find(e.leaves.begin(), e.leaves.end(), p.stat) == e.leaves.end()) continue;
    // Values of E that depend on s (and constants) only are computed once per row (column).
    std::set<int> only_stat = {p.stat};
    for (int node : e.nodes) {
      const Node& m = g.nodes[static_cast<size_t>(node)];
      bool all = true;
      for (int in : m.inputs) all = all && only_stat.count(in);
      if (all) only_stat.insert(m.outputs.front());
    }
    if (only_stat.count(y)) continue;
    p.per_column = Region{true, p.stat, {}, {p.stat}};
    p.per_element = Region{true, y, {}, {p.x}};
    std::set<int> frontier;
    auto is_constant = [&](int v) {
      int producer = g.values[static_cast<size_t>(v)].producer;
      return producer >= 0 && is_literal_node(g.nodes[static_cast<size_t>(producer)]);
    };
    for (int node : e.nodes) {
      const Node& m = g.nodes[static_cast<size_t>(node)];
      const bool column = only_stat.count(m.outputs.front()) > 0;
      if (column) p.per_column.nodes.push_back(node);
      if (!column || is_literal_node(m)) p.per_element.nodes.push_back(node);
      if (column) continue;
      for (int in : m.inputs)  // what an element reads of the per-column values goes into Stats
        if (only_stat.count(in) && !is_constant(in)) frontier.insert(in);
    }
    p.frontier.assign(frontier.begin(), frontier.end());
    for (int v : p.frontier) p.per_element.leaves.push_back(v);
    *pt = std::move(p);
    return true;
  }
  return false;
}

// term(x) and finish(sum, count), shared by both kernels' Norms.
std::string pattern_common(const TaskGraph& tg, const Pattern& pt, const std::string& xs) {
  const Graph& g = tg.graph();
  std::ostringstream s;
  std::string term;
  std::string code = emit_region(g, pt.term, [&](int) { return xs; }, "    ", &term);
  s << "  struct Stats {\n   ";
  for (int v : pt.frontier) s << " float v" << v << ";";
  s << "\n  };\n\n";
  s << "  // What the reduction adds up, per element.\n";
  s << "  static __device__ __forceinline__ float term(float " << xs << ") {\n" << code << "    return " << term << ";\n  }\n\n";
  const bool mean = g.nodes[static_cast<size_t>(pt.reduction)].op == "mean";
  s << "  // From the sum over `count` elements to what the outputs need.\n";
  s << "  static __device__ __forceinline__ Stats finish(float sum, int count) {\n";
  s << "    const float v" << pt.stat << " = " << (mean ? "sum / count;  // the mean\n" : "sum;\n");
  std::string last;
  Region col = pt.per_column;
  s << emit_region(g, col, [&](int) { return "v" + std::to_string(pt.stat); }, "    ", &last);
  s << "    return {";
  for (size_t i = 0; i < pt.frontier.size(); ++i) s << (i ? ", " : "") << "v" << pt.frontier[i];
  s << "};\n  }\n";
  return s.str();
}

std::string pattern_element(const TaskGraph& tg, const Pattern& pt, const std::string& xs, const std::string& indent,
                            std::string* result) {
  return emit_region(tg.graph(), pt.per_element,
                     [&](int v) { return v == pt.x ? xs : "s.v" + std::to_string(v); }, indent, result);
}

std::string pattern_what(const TaskGraph& tg, const Pattern& pt) {
  const Node& n = tg.graph().nodes[static_cast<size_t>(pt.reduction)];
  std::string dims = pt.to - pt.from == 1 ? "dim " + std::to_string(pt.from)
                                          : "dims " + std::to_string(pt.from) + ".." + std::to_string(pt.to - 1);
  return "y = f(x, s) where s = " + n.op + " over " + dims + " of g(x), f and g elementwise (e.g. RMS norm)";
}

bool pattern_rows_op(const TaskGraphPtr& tgp, const Pattern& pt, RowsOp* op) {
  const TaskGraph& tg = *tgp;
  const Split sp = split(tg, pt.x, pt.from, pt.to);
  if (!inner_is_one(sp)) return false;
  op->inner = sp.inner;
  const std::string xs = scalar_name(tg.task(), tg.input_index(pt.x));
  std::string result;
  std::string element = pattern_element(tg, pt, xs, "      ", &result);
  std::ostringstream s;
  s << "// " << pattern_what(tg, pt) << ".\nstruct Norm {\n  struct Params {};\n";
  s << pattern_common(tg, pt, xs) << "\n" << prologue_function(NormParts{}) << "\n";
  s << "  static constexpr int kStatsAlgos = 1;  // a plain sum: one algorithm\n\n";
  s << "  template <kevo::StatsAlgo kAlgo, class Part, class Reducer>\n"
       "  static __device__ __forceinline__ Stats stats(const Params&, Part& part, Reducer& red, int n) {\n"
       "    return finish(kevo::row_sum(part, red, [](float v) { return term(v); }), n);\n  }\n\n";
  s << "  template <int kVec>\n"
       "  static __device__ __forceinline__ void apply(const Params&, const Stats& s, long long, int, const float (&v)[kVec],\n"
       "                                               float (&out)[kVec]) {\n"
       "#pragma unroll\n    for (int k = 0; k < kVec; ++k) {\n      const float "
    << xs << " = v[k];\n" << element << "      out[k] = " << result << ";\n    }\n  }\n};\n";
  op->id = "normalize_rows/" + tg.graph().nodes[static_cast<size_t>(pt.reduction)].op;
  op->description = pattern_what(tg, pt) + "; rows contiguous";
  op->summary = "The op: " + pattern_what(tg, pt) + ".";
  op->norm = s.str();
  op->x = pt.x;
  op->rows = sp.outer;
  op->row = sp.reduce;
  for (const Facts& f : sp.facts)
    op->facts.push_back({{"rows", f.at("outer")}, {"row", f.at("reduce")}, {"vec_unit", f.at("reduce")}, {"algos", 1}});
  return true;
}

// ---------------------------------------------------------------------------------------------
// The column kernel (the pattern with an inner stride).

class ColumnsSpace : public DesignSpace {
 public:
  ColumnsSpace(TaskGraphPtr tg, Pattern pt, Split sp)
      : DesignSpace("normalize_columns/" + tg->graph().nodes[static_cast<size_t>(pt.reduction)].op,
                    pattern_what(*tg, pt) + "; the reduced dims strided: a thread owns columns, reads them twice",
                    manifest_at("normalize/columns.json"), sp.facts),  // the family's second kernel, its own knobs
        tg_(std::move(tg)), pt_(std::move(pt)), sp_(std::move(sp)) {
    express("outer", sp_.outer);
    express("reduce", sp_.reduce);
    express("inner", sp_.inner);
  }

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    const int64_t bx = v["kBlockX"], by = v["kBlockY"], vec = v["kVec"], items = v["kItems"], cache = v["kCache"],
                  hint = v["kHint"], waves = v["kWaves"];
    const std::string x = tensor_param(task.inputs[static_cast<size_t>(tg_->input_index(pt_.x))].name);
    const std::string y = tensor_param(task.outputs.front().name);
    const std::string xs = scalar_name(task, tg_->input_index(pt_.x));

    std::string result;
    std::string element = pattern_element(*tg_, pt_, xs, "    ", &result);
    std::ostringstream s;
    s << "// " << pattern_what(*tg_, pt_) << ".\nstruct Norm {\n  struct Params {};\n" << pattern_common(*tg_, pt_, xs) << "\n";
    s << "  static __device__ __forceinline__ float apply(const Params&, const Stats& s, float " << xs << ") {\n"
      << element << "    return " << result << ";\n  }\n};\n";

    std::ostringstream k;
    k << "extern \"C\" __global__ void __launch_bounds__(" << bx * by << ") kevo_normalize_columns(const float* " << x
      << ", float* " << y << ", long long outer, int reduce, long long inner) {\n  const Norm::Params p{};\n"
      << "  kevo::normalize_columns<" << bx << ", " << by << ", " << vec << ", " << items << ", "
      << enumerator(g, "kCache") << ", " << enumerator(g, "kHint") << ", Norm>(p, " << x << ", " << y
      << ", outer, reduce, inner);\n}\n";

    const int64_t width = bx * vec;
    std::string grid = waves == 0 ? paren(sp_.outer) + " * ((" + sp_.inner + " + " + std::to_string(width - 1) + ") // " +
                                        std::to_string(width) + ")"
                                  : std::to_string(waves) + " * num_sms";
    nlohmann::json args = {task.inputs[static_cast<size_t>(tg_->input_index(pt_.x))].name, task.outputs.front().name,
                           {{"int64", sp_.outer}}, {{"int", sp_.reduce}}, {{"int64", sp_.inner}}};
    nlohmann::json step = {{"kernel", "kevo_normalize_columns"}, {"grid", {grid}}, {"block", {bx * by}}};
    if (cache == 1) step["shared_bytes"] = std::to_string(width * 4) + " * " + paren(sp_.reduce);
    step["args"] = args;
    nlohmann::json plan = {{"steps", nlohmann::json::array({step})}};

    static const char* cache_words[] = {"columns re-read from global memory for the outputs",
                                        "columns kept in shared memory", "columns kept in registers"};
    static const char* hint_words[] = {"no L2 hints", "streaming L2 hints on the last read and the store",
                                       "evict-last L2 hint on the first read, streaming on the last read and the store"};
    std::ostringstream c;
    c << "Generated by kevo from template family 'normalize' (space " << id() << ").\nThe op: " << pattern_what(*tg_, pt_)
      << ",\nx viewed as [outer, reduce, inner] = [" << sp_.outer << ", " << sp_.reduce << ", " << sp_.inner << "].\n";
    c << "Genome: " << g.to_string() << " = tiles of " << bx << " x " << vec << " columns, " << by
      << " thread" << (by > 1 ? "s" : "") << " per column, " << items << " reduce index" << (items > 1 ? "es" : "")
      << " per thread per step, " << cache_words[cache] << ", " << hint_words[hint] << ", "
      << (waves == 0 ? std::string("one CTA per tile")
                     : std::to_string(waves) + (waves == 1 ? " CTA" : " CTAs") + " per SM striding over the tiles")
      << ".";
    std::string source = candidate_templates(manifest()) + "\n" + graph_comment(tg_->graph()) +
                         s.str() + "\n" + k.str();
    return candidate_text(task, task.name + "_normalize_columns", plan, c.str(), source);
  }

 private:
  TaskGraphPtr tg_;
  Pattern pt_;
  Split sp_;
};


// ---------------------------------------------------------------------------------------------
// Batch norm of an [N, C] matrix: the channel's elements are a column, so threads run along C
// (coalesced) and the N rows are split over CTAs (normalize_channel_columns).

}  // namespace

std::vector<std::unique_ptr<DesignSpace>> lower_normalize(const TaskGraphPtr& tgp) {
  std::vector<std::unique_ptr<DesignSpace>> out;
  const TaskGraph& tg = *tgp;
  const Graph& g = tg.graph();
  if (g.outputs.size() != 1 || g.values[static_cast<size_t>(tg.output())].dtype != DType::Float32) return out;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    RowsOp op;
    if (norm_node_op(tgp, static_cast<int>(i), &op)) {
      out.push_back(std::make_unique<RowsSpace>(tgp, std::move(op)));
      return out;
    }
    if (auto columns = normalize::channel_columns_space(tgp, static_cast<int>(i))) {
      out.push_back(std::move(columns));
      return out;
    }
  }
  Pattern pt;
  if (!find_pattern(tg, &pt)) return out;
  RowsOp op;
  if (pattern_rows_op(tgp, pt, &op)) {
    out.push_back(std::make_unique<RowsSpace>(tgp, std::move(op)));
  } else {
    Split sp = split(tg, pt.x, pt.from, pt.to);
    out.push_back(std::make_unique<ColumnsSpace>(tgp, std::move(pt), std::move(sp)));
  }
  return out;
}

}  // namespace kevo::lower
