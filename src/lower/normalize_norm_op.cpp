// A norm node of the graph as a row op of the normalize family: softmax and log_softmax (the
// row's max and sum of exponentials), layer, group, instance and batch norm (mean and variance,
// then the affine), with the fused elementwise prologue and epilogue, written as the Norm struct
// the row kernels instantiate.
#include <sstream>

#include "lower/normalize.h"

namespace kevo::lower::normalize {

namespace {

// What one norm op writes into the Norm struct: its parameters and statistics, the normalized value
// of one element, and which dims make a row.
struct NormText {
  std::string stats_fields, stats_body, value, params, per_vector, what;
  int from = 0;  // the norm spans dims [from, rank)
  int64_t groups = 1;
  std::vector<int64_t> vec_unit;  // per workload; 0: the row length
};

// The norm's affine input `idx` (weight or bias) as the kernel's parameter name; "" without one,
// "!" where it is not an fp32 graph input.
std::string affine_param(const TaskGraph& tg, const Node& n, int idx, const std::string& name, RowsOp* op, NormText& t) {
  const Graph& g = tg.graph();
  int v = n.inputs.size() > static_cast<size_t>(idx) ? n.inputs[static_cast<size_t>(idx)] : -1;
  if (v < 0) return std::string();
  if (tg.input_index(v) < 0 || g.values[static_cast<size_t>(v)].dtype != DType::Float32) return std::string("!");
  op->pointers.push_back(tg.task().inputs[static_cast<size_t>(tg.input_index(v))].name);
  t.params += "    const float* __restrict__ " + tensor_param(op->pointers.back()) + ";  // " + name + "\n";
  return tensor_param(op->pointers.back());
}

bool softmax_text(const TaskGraph& tg, const Node& n, int in, RowsOp* op, NormText& t) {
  t.from = static_cast<int>(attr_int(n, "dim"));
  if (!inner_is_one(split(tg, in, t.from, t.from + 1))) return false;  // not the innermost dim: no column softmax yet
  op->inner = split(tg, in, t.from, t.from + 1).inner;
  t.stats_body = "    const kevo::SoftmaxStats s = kevo::softmax_stats<kAlgo>(part, red);\n";
  if (n.op == "softmax") {
    t.stats_fields = "    float max, inv_sum;\n";
    t.stats_body += "    return {s.max, 1.f / s.sum};\n";
    t.value = "expf(v[k] - s.max) * s.inv_sum";
    t.what = "softmax over the row: exp(x - max) / sum(exp(x - max))";
  } else {
    t.stats_fields = "    float shift;  // max + log(sum(exp(x - max)))\n";
    t.stats_body += "    return {s.max + logf(s.sum)};\n";
    t.value = "v[k] - s.shift";
    t.what = "log_softmax over the row: x - max - log(sum(exp(x - max)))";
  }
  return true;
}

// layer_norm, group_norm, instance_norm and batch_norm: mean and variance, then the affine.
bool moments_text(const TaskGraph& tg, const Node& n, int in, RowsOp* op, NormText& t) {
  const int rank = tg.rank(in);
  const double eps = attr_float(n, "eps");
  t.stats_fields = "    float mean, rstd;\n";
  t.stats_body = "    const kevo::MeanVar m = kevo::mean_var<kAlgo>(part, red, n);\n    return {m.mean, rsqrtf(m.var + " +
                 float_literal(eps) + ")};\n";
  if (n.op == "batch_norm" && rank < 3) return false;  // [N, C]: the column kernel (ChannelColumnsSpace)
  const std::string per = n.op == "layer_norm" ? ", one per element of the row" : ", one per channel";
  std::string w = affine_param(tg, n, 1, "weight" + per, op, t), b = affine_param(tg, n, 2, "bias" + per, op, t);
  if (w == "!" || b == "!") return false;
  std::string scale = "(v[k] - s.mean) * s.rstd";
  const std::string per_channel = (w.empty() ? "" : " * p." + w + "[c]") + (b.empty() ? "" : " + p." + b + "[c]");
  if (n.op == "layer_norm") {
    t.from = rank - static_cast<int>(attr_ints(n, "normalized_shape").size());
    if (!w.empty()) t.per_vector += "    float w[kVec];\n    kevo::load_vec<kVec>(w, p." + w + " + col);\n";
    if (!b.empty()) t.per_vector += "    float b[kVec];\n    kevo::load_vec<kVec>(b, p." + b + " + col);\n";
    t.value = scale + (w.empty() ? "" : " * w[k]") + (b.empty() ? "" : " + b[k]");
    t.what = "layer_norm over the row: (x - mean) / sqrt(var + eps)" + std::string(w.empty() ? "" : " * weight") +
             (b.empty() ? "" : " + bias");
  } else if (n.op == "group_norm") {
    if (rank < 2) return false;
    t.groups = attr_int(n, "num_groups");
    t.from = 1;
    // Row r is group r % G of sample r / G; its element col is in channel (r % G) * C/G + col / inner.
    const std::string inner = tg.product(in, 2, rank), per_group = paren(tg.dim(in, 1)) + " // " + std::to_string(t.groups);
    if (!w.empty() || !b.empty()) {
      op->ints = {{"inner", inner}, {"channels_per_group", per_group}};
      t.params += "    int inner, channels_per_group;  // spatial elements per channel, channels per group\n";
      t.per_vector += "    const long long c = (row % " + std::to_string(t.groups) + ") * p.channels_per_group + col / p.inner;\n";
      for (size_t w_ = 0; w_ < tg.workloads(); ++w_) t.vec_unit[w_] = tg.product_value(w_, in, 2, rank);
      op->vec_unit = inner;
    }
    t.value = scale + per_channel;
    t.what = "group_norm with " + std::to_string(t.groups) + " groups: a row is one group of one sample";
  } else if (n.op == "instance_norm") {
    if (rank < 2) return false;
    t.from = 2;
    if (!w.empty() || !b.empty()) {
      op->ints = {{"channels", tg.dim(in, 1)}};
      t.params += "    int channels;\n";
      t.per_vector += "    const long long c = row % p.channels;  // a row is one channel of one sample\n";
    }
    t.value = scale + per_channel;
    t.what = "instance_norm: a row is one channel of one sample";
  } else {  // batch_norm: a row is a channel, whose elements ChannelRows finds
    t.value = scale + (w.empty() ? "" : " * p." + w + "[row]") + (b.empty() ? "" : " + p." + b + "[row]");
    t.what = "batch_norm in training mode: a row is one channel, its N runs of H*W elements (statistics over the "
             "batch and the spatial dims)";
  }
  return true;
}

// The Norm struct: the norm's value, then the fused epilogue (`epi`, from the norm's output `out`).
std::string norm_struct(const Graph& g, const NormText& t, const NormParts& parts, const Region& epi, int out) {
  std::string epi_result;
  std::string epi_code = emit_region(g, epi, [&](int) { return "v" + std::to_string(out); }, "      ", &epi_result);
  std::ostringstream s;
  s << "// " << t.what << ".\nstruct Norm {\n";
  if (t.params.empty()) s << "  struct Params {};\n";
  else s << "  struct Params {\n" << t.params << "  };\n";
  s << "  struct Stats {\n" << t.stats_fields << "  };\n\n" << prologue_function(parts) << "\n";
  s << "  static constexpr int kStatsAlgos = 2;  // two-pass and single-pass statistics\n\n";
  s << "  template <kevo::StatsAlgo kAlgo, class Part, class Reducer>\n"
       "  static __device__ __forceinline__ Stats stats(const Params& p, Part& part, Reducer& red, int n) {\n"
    << t.stats_body << "  }\n\n";
  s << "  // The outputs of the vector v of row `row` starting at column `col`.\n"
       "  template <int kVec>\n"
       "  static __device__ __forceinline__ void apply(const Params& p, const Stats& s, long long row, int col,\n"
       "                                               const float (&v)[kVec], float (&out)[kVec]) {\n"
    << t.per_vector << "#pragma unroll\n    for (int k = 0; k < kVec; ++k) {\n"
    << "      const float v" << out << " = " << t.value << ";\n" << epi_code << "      out[k] = " << epi_result << ";\n    }\n  }\n};\n";
  return s.str();
}

// batch_norm's rows: x viewed as [N, C, S], C rows of N * S elements, vectors inside a run of S.
void channel_rows(const TaskGraph& tg, int in, const std::string& what, int64_t algos, RowsOp* op) {
  const int rank = tg.rank(in);
  const std::string spatial = tg.product(in, 2, rank);
  op->rows = tg.dim(in, 1);
  op->row = tg.dim(in, 0) + " * " + spatial;
  op->channels = true;
  op->vec_unit = spatial;
  op->channel_count = op->rows;
  op->spatial = spatial;
  op->manifest = "normalize/channels.json";
  op->unit = "channel";
  op->id = "normalize_channels/batch_norm";
  op->description = what + "; statistics reduced on chip (a CTA, a cluster, or CTAs meeting in a scratch "
                    "buffer), then every element rewritten";
  for (size_t w = 0; w < tg.workloads(); ++w) {
    const int64_t run = tg.product_value(w, in, 2, rank);
    op->facts.push_back({{"rows", tg.product_value(w, in, 1, 2)},
                         {"row", tg.product_value(w, in, 0, 1) * run},
                         {"vec_unit", run},
                         {"algos", algos}});
  }
}

// The other norms' rows: dims [from, to) of x (group_norm: [N, C, *] is [N * G, C / G * prod(*)]).
void contiguous_rows(const TaskGraph& tg, const Node& n, int in, const NormText& t, int64_t algos, RowsOp* op) {
  const Split sp = split(tg, in, t.from, n.op == "softmax" || n.op == "log_softmax" ? t.from + 1 : tg.rank(in));
  const int64_t groups = t.groups;
  op->rows = sp.outer;
  op->row = sp.reduce;
  if (groups > 1) {
    op->rows = paren(sp.outer) + " * " + std::to_string(groups);
    op->row = "(" + sp.reduce + ") // " + std::to_string(groups);
  }
  for (size_t w = 0; w < tg.workloads(); ++w)
    op->facts.push_back({{"rows", sp.facts[w].at("outer") * groups},
                         {"row", sp.facts[w].at("reduce") / groups},
                         {"vec_unit", t.vec_unit[w] ? t.vec_unit[w] : sp.facts[w].at("reduce") / groups},
                         {"algos", algos}});
}

}  // namespace

bool norm_node_op(const TaskGraphPtr& tgp, int node, RowsOp* op) {
  const TaskGraph& tg = *tgp;
  const Graph& g = tg.graph();
  const Node& n = g.nodes[static_cast<size_t>(node)];
  const int in = n.inputs.empty() ? -1 : n.inputs[0], out = n.outputs.front(), y = tg.output();
  if (in < 0 || g.values[static_cast<size_t>(out)].dtype != DType::Float32) return false;

  // Fused elementwise ops: before the norm on a single input, after it on the norm's output only.
  Region pro;
  const int x = single_input_region(tg, in, &pro);
  if (x < 0) return false;
  Region epi = elementwise_region(g, y, [&](int v) { return v == out; });
  if (!epi.ok || epi.leaves != std::vector<int>{out}) return false;
  if (g.values[static_cast<size_t>(y)].shape != g.values[static_cast<size_t>(out)].shape) return false;
  NormParts parts;
  if (!pro.nodes.empty()) parts.prologue = emit_region(g, pro, [](int) { return std::string("v[k]"); }, "      ", &parts.result);

  // Per op: the rows, the statistics and the normalized value of one element.
  const int64_t algos = 2;
  NormText t;
  t.vec_unit.assign(tg.workloads(), 0);
  const bool softmax = n.op == "softmax" || n.op == "log_softmax";
  const bool moments = n.op == "layer_norm" || n.op == "group_norm" || n.op == "instance_norm" || n.op == "batch_norm";
  if (!(softmax ? softmax_text(tg, n, in, op, t) : moments && moments_text(tg, n, in, op, t))) return false;
  op->id = "normalize_rows/" + n.op;
  op->norm = norm_struct(g, t, parts, epi, out);
  op->x = x;
  op->summary = "The op: " + t.what + ".";
  op->description = t.what + "; rows contiguous, statistics reduced on chip, then every element rewritten";
  if (n.op == "batch_norm") channel_rows(tg, in, t.what, algos, op);
  else contiguous_rows(tg, n, in, t, algos, op);
  return true;
}

}  // namespace kevo::lower::normalize
