// Two plans in sequence: a graph that is a GEMM-led prefix (the matmul or linear and the
// elementwise tail its epilogue takes) followed by a rest no gemm epilogue can take (a softmax, a
// layer norm, a reduction over N) lowers as the gemm family's kernel storing the prefix's value
// into an fp32 scratch buffer, then another family's kernels reading that buffer as an input. A
// convolution-led prefix (conv1d/2d/3d, conv_transpose1d/2d/3d) followed by a pooling, a norm or
// a reduction splits the same way, the conv family's kernel storing the convolution's full shape.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include "lower/families.h"
#include "lower/generic/dims.h"
#include "lower/mma.h"
#include "lower/subgraph.h"

namespace kevo::lower {

namespace {

// The rest's knobs and facts carry this prefix in the combined space, so that neither family's
// names (both have an "n") shadow the other's.
const std::string kRestPrefix = "rest_";

bool is_main_op(const std::string& op) { return op == "matmul" || op == "linear"; }
// The ops whose prefix the conv family lowers (lower_conv refuses the rest of this prefix).
bool is_conv_op(const std::string& op) { return op.rfind("conv", 0) == 0; }

// An expression's text with its names renamed, as written otherwise (shape_conditions() knows
// constraints by their form: "line % kVec").
std::string renamed(const AxisExpr& e, const std::function<std::string(const std::string&)>& name) {
  const std::string& t = e.text();
  std::string out;
  for (size_t i = 0; i < t.size();) {
    if (!std::isalpha(static_cast<unsigned char>(t[i])) && t[i] != '_') {
      out += t[i++];
      continue;
    }
    size_t j = i;
    while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_')) ++j;
    out += name(t.substr(i, j - i));
    i = j;
  }
  return out;
}

// A rendered candidate taken apart: its comment, its plan, the code generated after its templates.
struct Parts {
  std::string comment;
  nlohmann::json plan;
  std::string code;
};

Parts take_apart(const std::string& text, const Manifest& manifest) {
  const std::string open = "/* kevo-plan\n", close = "\n*/\n\n";
  const size_t a = text.find(open), b = text.find(close, a);
  const std::string templates = candidate_templates(manifest) + "\n";
  if (a == std::string::npos || b == std::string::npos || text.compare(b + close.size(), templates.size(), templates) != 0)
    throw std::logic_error("a rendered candidate of family " + manifest.family + " is not laid out as candidate_text() writes it");
  Parts p;
  std::istringstream lines(text.substr(0, a));
  for (std::string line; std::getline(lines, line);) p.comment += (line.rfind("// ", 0) == 0 ? line.substr(3) : line) + "\n";
  p.plan = nlohmann::json::parse(text.substr(a + open.size(), b - a - open.size())).at("plan");
  p.code = text.substr(b + close.size() + templates.size());
  return p;
}

// The combined manifest: the gemm's knobs and constraints as they are, the rest's renamed.
std::shared_ptr<const Manifest> combined_manifest(const Manifest& gemm, const Manifest& rest, const Facts& device,
                                                  bool row_stats) {
  auto m = std::make_shared<Manifest>();
  m->family = gemm.family + "+" + rest.family;
  m->source = gemm.source;
  m->doc = "the " + gemm.family + " family's kernel into a scratch buffer, then " + rest.family + "'s kernels reading it";
  m->knobs = gemm.knobs;
  m->constraints = gemm.constraints;
  auto rename = [&](const std::string& n) { return device.count(n) ? n : kRestPrefix + n; };
  for (Knob k : rest.knobs) {
    k.name = rename(k.name);
    m->knobs.push_back(std::move(k));
  }
  for (const Constraint& c : rest.constraints)
    m->constraints.push_back({AxisExpr::parse(renamed(c.lhs, rename)), AxisExpr::parse(renamed(c.rhs, rename)), c.op, c.why});
  if (row_stats) {  // templates/gemm/epilogue.cuh's static_assert, as constraints
    m->family = gemm.family + "+row_stats";
    m->constraints.push_back({AxisExpr::parse("kSplit"), AxisExpr::parse("0"), "==", "row statistics read the finished tile: no split-K"});
    m->constraints.push_back({AxisExpr::parse("kEpilogue"), AxisExpr::parse("1"), "<=", "row statistics come from the GEMM's own epilogue"});
  }
  return m;
}

std::vector<Facts> combined_facts(const DesignSpace& gemm, const DesignSpace& rest, const Facts& device) {
  std::vector<Facts> facts = gemm.facts();
  for (size_t w = 0; w < facts.size(); ++w)
    for (const auto& [name, value] : rest.facts()[w])
      if (!device.count(name)) facts[w][kRestPrefix + name] = value;
  return facts;
}

// The second plan of the row-statistics variant: templates/gemm/row_stats.cuh's kernel combining
// the partials that the GEMM's epilogue wrote (one per row and N tile of kBN columns).
class RowStatsSpace : public DesignSpace {
 public:
  RowStatsSpace(TaskGraphPtr rest, std::string op, std::string part, std::vector<Facts> facts)
      : DesignSpace("row_stats/" + op,
                    "the row's exp statistics from the GEMM's epilogue combined, then the row normalised in one pass (" + op + ")",
                    manifest_at("gemm/row_stats.json"), std::move(facts)),
        tg_(std::move(rest)), op_(std::move(op)), part_(std::move(part)) {}

  std::string render(const Genome&) const override {
    throw std::logic_error(id() + " renders only with the GEMM's tile width (render_after)");
  }
  // The candidate for partials of kBN columns each.
  std::string render_after(const Genome& g, int64_t kBN) const {
    auto v = values(g);
    const Task& task = tg_->task();
    const int x = tg_->graph().inputs.front();
    const std::string M = tg_->dim(x, 0), N = tg_->dim(x, 1), threads = std::to_string(v["kThreads"] * v["kRows"]);
    const std::string parts = "(" + N + " + " + std::to_string(kBN - 1) + ") // " + std::to_string(kBN);
    const char* op = op_ == "softmax" ? "Softmax" : op_ == "log_softmax" ? "LogSoftmax" : "LogSumExp";
    std::ostringstream src;
    src << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") kevo_row_stats(const float* x, const kevo::ExpStat* part, float* y, int M, int N, int parts) {\n"
        << "  kevo::row_stats_finish<kevo::RowOp::" << op << ", " << v["kThreads"] << ", " << v["kRows"] << ", " << v["kVec"]
        << ">(x, part, y, M, N, parts);\n}\n";
    nlohmann::json plan;
    plan["steps"] = nlohmann::json::array();
    plan["steps"].push_back({{"kernel", "kevo_row_stats"},
                             {"grid", {"(" + M + " + " + std::to_string(v["kRows"] - 1) + ") // " + std::to_string(v["kRows"])}},
                             {"block", {v["kThreads"] * v["kRows"]}},
                             {"args", {task.inputs.back().name, part_, task.outputs.front().name, {{"int", M}}, {{"int", N}}, {{"int", parts}}}}});
    const std::string comment = "The " + op_ + " from the GEMM's row statistics: " + std::to_string(v["kThreads"]) + " threads per row, " +
                                std::to_string(v["kRows"]) + " rows per block, " + std::to_string(v["kVec"]) + " elements per access.";
    return candidate_text(task, task.name + "_row_stats", plan, comment, candidate_templates(manifest()) + "\n" + src.str());
  }

 private:
  TaskGraphPtr tg_;
  std::string op_, part_;
};

class SplitSpace : public DesignSpace {
 public:
  SplitSpace(TaskGraphPtr tg, std::unique_ptr<DesignSpace> gemm, std::unique_ptr<DesignSpace> rest, std::string scratch,
             std::vector<std::string> scratch_shape, std::shared_ptr<const Manifest> manifest)
      : DesignSpace(gemm->id() + "+" + rest->id(),
                    "two plans in sequence: " + gemm->description() + ", storing its result (fp32) into a scratch buffer; then " +
                        rest->description() + ", reading it",
                    *manifest, combined_facts(*gemm, *rest, device_facts())),
        tg_(std::move(tg)), gemm_(std::move(gemm)), rest_(std::move(rest)), manifest_owned_(std::move(manifest)),
        scratch_(std::move(scratch)), scratch_shape_(std::move(scratch_shape)),
        stats_(dynamic_cast<const RowStatsSpace*>(rest_.get())),
        first_(gemm_->manifest().family == "conv" ? "the convolution" : "the GEMM") {
    const Facts device = device_facts();
    auto rename = [&](const std::string& n) { return device.count(n) ? n : kRestPrefix + n; };
    for (const auto& [fact, expr] : gemm_->fact_exprs()) express(fact, expr);
    for (const auto& [fact, expr] : rest_->fact_exprs()) express(rename(fact), expr);
    for (const auto& [fact, exprs] : gemm_->fact_maxima()) express_max(fact, exprs);
    for (const auto& [fact, exprs] : rest_->fact_maxima()) express_max(rename(fact), exprs);
    for (const auto& [fact, exprs] : gemm_->fact_gcds()) express_gcd(fact, exprs);
    for (const auto& [fact, exprs] : rest_->fact_gcds()) express_gcd(rename(fact), exprs);
    for (const DesignSpace* s : {gemm_.get(), rest_.get()})
      for (const ShapeCondition& c : s->assumptions()) assume(c);
  }

  // Each part's legal genomes are a small share of its own domain, so the joined space's share is
  // their product (1 in 1,500 for a linear + softmax): uniform draws over the whole domain would
  // rarely meet one. Drawing each part among its own legal genomes and keeping the pairs legal
  // together (the architecture, the constraints that join them) is uniform over the joined space's
  // legal genomes all the same.
  Genome random_genome(std::mt19937_64& rng) const override {
    for (int attempt = 0; attempt < 10000; ++attempt)
      if (Genome g = joined(gemm_->random_genome(rng), rest_->random_genome(rng)); legal(g)) return g;
    throw std::runtime_error("space " + id() + " has no legal genome in 10000 draws of its parts");
  }
  double legal_estimate(int draws) const override {
    const double parts = gemm_->legal_estimate(draws) * rest_->legal_estimate(draws);
    if (parts == 0) return 0;  // a part without a legal genome in its draws (none to join)
    // The share of joined pairs legal together (the architecture; constraints across the parts)
    // is large: a few hundred pairs measure it, each drawn by rejection in its part.
    const int pairs = std::min(draws, 400);
    std::mt19937_64 rng(7);
    int found = 0;
    try {
      for (int d = 0; d < pairs; ++d) found += legal(joined(gemm_->random_genome(rng), rest_->random_genome(rng)));
    } catch (const std::runtime_error&) {
      return 0;  // a part whose legal genomes rejection could not find
    }
    return parts * found / pairs;
  }

  std::string render(const Genome& g) const override {
    const auto split = g.values.begin() + static_cast<std::ptrdiff_t>(gemm_->knobs().size());
    const Genome first{gemm_->id(), std::vector<int64_t>(g.values.begin(), split)};
    const Genome second{rest_->id(), std::vector<int64_t>(split, g.values.end())};
    const Parts a = take_apart(gemm_->render(first), gemm_->manifest());
    const Parts b = take_apart(stats_ ? stats_->render_after(second, values(g)["kBN"]) : rest_->render(second), rest_->manifest());

    nlohmann::json plan;
    plan["buffers"] = nlohmann::json::object();
    plan["buffers"][scratch_] = {{"dtype", "float32"}, {"shape", scratch_shape_}};
    plan["steps"] = nlohmann::json::array();
    std::set<std::string> kernels;
    std::string exports;
    for (const Parts* p : {&a, &b}) {
      if (p->plan.contains("buffers"))
        for (const auto& [name, buffer] : p->plan.at("buffers").items()) {
          if (plan["buffers"].contains(name)) throw std::logic_error(id() + ": both plans name a scratch buffer " + name);
          plan["buffers"][name] = buffer;
        }
      for (const auto& step : p->plan.at("steps")) {
        plan["steps"].push_back(step);
        if (!step.contains("kernel")) continue;
        const std::string k = step.at("kernel").get<std::string>();
        if (!kernels.insert(k).second) throw std::logic_error(id() + ": both plans launch a kernel named " + k);
        if (p == &a) exports += "using kevo_first::" + k + ";\n";
      }
    }
    // The GEMM's generated code in a namespace of its own (its Tail and Config stay out of the
    // rest's way; the generic family's code refers to its own ::Params, so the rest stays at
    // global scope); its entry points are extern "C", and using-declarations give them their
    // plain names for the plan.
    std::ostringstream src;
    src << template_includes({"common.cuh", gemm_->manifest().source, rest_->manifest().source}) << "\n"
        << "// The first plan: " << first_ << " and its epilogue, storing " << scratch_ << ".\n"
        << "namespace kevo_first {\n" << a.code << "}  // namespace kevo_first\n\n" << exports << "\n"
        << "// The second plan: the rest of the graph, reading " << scratch_ << " as an input.\n" << b.code;
    const std::string comment = "Two plans in sequence (space " + id() + "), through the fp32 scratch buffer " + scratch_ +
                                ".\n\nFirst plan:\n" + a.comment + "\nSecond plan:\n" + b.comment;
    return candidate_text(tg_->task(), tg_->task().name + "_split", plan, comment, src.str());
  }

 private:
  Genome joined(const Genome& first, const Genome& second) const {
    Genome g{id(), first.values};
    g.values.insert(g.values.end(), second.values.begin(), second.values.end());
    return g;
  }
  TaskGraphPtr tg_;
  std::unique_ptr<DesignSpace> gemm_, rest_;
  std::shared_ptr<const Manifest> manifest_owned_;
  std::string scratch_;
  std::vector<std::string> scratch_shape_;
  const RowStatsSpace* stats_;  // rest_, when the second plan combines the epilogue's row statistics
  std::string first_;           // what the first plan computes, for the source's comment
};

// "softmax", "log_softmax" or "logsumexp" where the rest is that op alone over dim 1 of the
// scratch [M, N] (fp32 out), else "".
std::string row_stats_op(const TaskGraph& rest) {
  const Graph& g = rest.graph();
  if (g.nodes.size() != 1 || g.outputs.size() != 1 || g.values[static_cast<size_t>(g.outputs[0])].dtype != DType::Float32)
    return "";
  const Node& n = g.nodes.front();
  if (n.inputs.size() != 1 || n.inputs[0] != g.inputs.back() || n.outputs.front() != g.outputs[0]) return "";
  if ((n.op == "softmax" || n.op == "log_softmax") && attr_int(n, "dim") == 1) return n.op;
  if (n.op == "logsumexp" && attr_ints(n, "dim") == std::vector<int64_t>{1}) return n.op;
  return "";
}

// The value the prefix ends at: the GEMM's result, then as far down the chain of elementwise ops
// that read only it (and graph inputs or constants) as the value has one reader of its own shape.
int chain_end(const TaskGraph& tg, int t) {
  const Graph& g = tg.graph();
  int v = t;
  for (;;) {
    if (tg.uses(v) != 1) return v;
    const Node* user = nullptr;
    for (const Node& n : g.nodes)
      for (int in : n.inputs)
        if (in == v) user = &n;
    if (!user || !is_elementwise(*user)) return v;
    const int next = user->outputs.front();
    for (size_t w = 0; w < tg.workloads(); ++w)
      if (tg.graph(w).values[static_cast<size_t>(next)].shape != tg.graph(w).values[static_cast<size_t>(v)].shape) return v;
    v = next;
  }
}

// A rest that normalises by statistics of the GEMM's own values (a layer or group norm, x / ||x||,
// a standard deviation) turns the GEMM's rounding error, which is relative to the row's scale,
// into an absolute error of outputs of order one: on the H200, 3xbf16 products before a layer norm
// at 1e-4 left a few elements at twice the tolerance on the correctness checks' shifted and
// scaled inputs. Before such a rest the GEMM's precision is admitted against a 16th of the task's
// rtol (plain TF32 and 3xbf16 drop out at 1e-4; 3xbf16 stays at KernelBench's 1e-2).
constexpr double kNormalisedRtolShare = 1.0 / 16;

bool normalises(const Graph& rest) {
  static const std::set<std::string> ops = {"layer_norm", "group_norm",        "batch_norm", "instance_norm", "norm",
                                            "normalize",  "cosine_similarity", "std",        "var"};
  return std::any_of(rest.nodes.begin(), rest.nodes.end(), [](const Node& n) { return ops.count(n.op) > 0; });
}

// Whether value v is never negative: made by an op whose outputs are not (a sum of such values
// cannot cancel, and keeps the relative error of its terms). A graph input of the rest (the
// prefix's result, whose tail may end in such an op) is as `input_non_negative` says.
bool non_negative(const Graph& g, int v, bool input_non_negative) {
  static const std::set<std::string> ops = {"sigmoid", "relu", "exp", "softmax", "abs", "softplus", "hardsigmoid"};
  const int producer = g.values[static_cast<size_t>(v)].producer;
  if (producer < 0) return input_non_negative;
  return ops.count(g.nodes[static_cast<size_t>(producer)].op) > 0;
}

// A rest that sums n of the prefix's values adds their rounding errors, about sqrt(n) times one
// value's, into a result that the tolerance may judge by its atol alone (a sum of both signs near
// zero): on an H100, 3xbf16 products summed over N = 8192 (KernelBench level 2 #18, F.linear then a
// sum over the features) came out 5.5e-4 off at 1e-4. The largest such n of the rest's sums of
// values that may be negative, over the workloads; 1 without one (a sum of sigmoids, as level 2
// #65's, passed with 3xbf16 convolutions).
int64_t summed_terms(const std::vector<Graph>& rest, bool prefix_non_negative) {
  int64_t most = 1;
  for (const Graph& g : rest)
    for (const Node& n : g.nodes)
      if (n.op == "sum" && !n.inputs.empty() && !n.outputs.empty() && !non_negative(g, n.inputs[0], prefix_non_negative)) {
        const int64_t in = numel(g.values[static_cast<size_t>(n.inputs[0])].shape),
                      out = numel(g.values[static_cast<size_t>(n.outputs[0])].shape);
        if (out > 0) most = std::max(most, in / out);
      }
  return most;
}

// The share of the task's rtol the prefix's products are admitted against (the precision gates
// in gemm.cpp): a 16th before a normalising rest, 1 / sqrt(n) before one that sums n values
// of both signs. `prefix_non_negative`: the prefix's result is never negative.
double prefix_rtol_share(const std::vector<Graph>& rest, bool prefix_non_negative) {
  const double share = normalises(rest.front()) ? kNormalisedRtolShare : 1.0;
  return std::min(share, 1.0 / std::sqrt(static_cast<double>(summed_terms(rest, prefix_non_negative))));
}

// The spaces of splitting the graph at value v, or none; `conv`: the prefix is a convolution's
// (the conv family's, its scratch of the output's full shape), else a GEMM's.
std::vector<std::unique_ptr<DesignSpace>> split_at(const TaskGraphPtr& tgp, int v, bool conv) {
  std::vector<std::unique_ptr<DesignSpace>> none;
  const TaskGraph& tg = *tgp;
  const Task& task = tg.task();
  const int rank = tg.rank(v);
  if (conv ? rank < 3 || rank > 5 : rank != 2) return none;
  const std::string scratch = mma::scratch_name(task, conv ? "conv_result" : "gemm_result");
  TensorDecl decl;
  decl.name = scratch;
  decl.dtype = DType::Float32;
  decl.description = conv ? "the convolution-led prefix's result" : "the GEMM-led prefix's result";
  // A convolution's output dims are rarely a declared tensor's (a pooling or a mean follows it):
  // the generic family's sizes give them by the convolution's formula where no contract dim does.
  std::vector<std::string> shape, conv_dims;
  if (conv) conv_dims = generic::Dims(tg).of(v);
  for (int d = 0; d < rank; ++d) {
    shape.push_back(conv ? conv_dims[static_cast<size_t>(d)] : tg.dim(v, d));
    Dim dim;
    if (shape.back().find_first_not_of("0123456789") == std::string::npos)
      dim.size = std::stoll(shape.back());
    else
      dim.expr = shape.back();
    decl.shape.push_back(dim);
  }

  // One derived task and graph per side; the split value is fp32 on both (the scratch buffer's type).
  auto prefix_task = std::make_shared<Task>(task), rest_task = std::make_shared<Task>(task);
  prefix_task->inputs.clear();
  prefix_task->outputs = {decl};
  rest_task->inputs.clear();
  std::vector<Graph> prefix_graphs, rest_graphs;
  for (size_t w = 0; w < tg.workloads(); ++w) {
    Graph g = tg.graph(w);
    g.values[static_cast<size_t>(v)].dtype = DType::Float32;
    // A cast of v to fp32 (`F.linear(x, W, b).float()` of 16-bit operands) is the identity on
    // the fp32 scratch: its readers read v.
    for (const Node& n : g.nodes)
      if (n.op == "cast" && n.inputs.size() == 1 && n.inputs[0] == v && g.values[static_cast<size_t>(n.outputs[0])].dtype == DType::Float32)
        for (Node& reader : g.nodes)
          std::replace(reader.inputs.begin(), reader.inputs.end(), n.outputs[0], v);
    std::vector<int> ins = g.inputs, rest_ins = g.inputs;
    rest_ins.push_back(v);
    Graph prefix, rest;
    std::vector<size_t> prefix_reached, rest_reached;
    if (!extract(g, ins, {v}, &prefix, &prefix_reached) || !extract(g, rest_ins, g.outputs, &rest, &rest_reached))
      return none;
    for (const Node& n : rest.nodes)
      if (is_main_op(n.op) || (conv && is_conv_op(n.op))) return none;  // the rest reads the main op's value other than through v
    if (w == 0) {
      for (size_t i : prefix_reached) prefix_task->inputs.push_back(task.inputs[i]);
      for (size_t i : rest_reached) rest_task->inputs.push_back(i < task.inputs.size() ? task.inputs[i] : decl);
    }
    prefix_graphs.push_back(std::move(prefix));
    rest_graphs.push_back(std::move(rest));
  }
  prefix_task->tolerance.rtol *= prefix_rtol_share(rest_graphs, non_negative(tg.graph(0), v, false));
  auto prefix_tg = std::make_shared<const TaskGraph>(prefix_task, std::move(prefix_graphs));
  auto rest_tg = std::make_shared<const TaskGraph>(rest_task, std::move(rest_graphs));

  // A prefix its family refuses (a geometry the conv family does not take): no split.
  const auto lower_prefix = [&] { return conv ? lower_conv(prefix_tg) : lower_gemm(prefix_tg); };
  if (lower_prefix().empty()) return none;
  // The rest on the specialised families that serve it (normalize for a softmax or a layer norm,
  // reduce for a sum over N, ...), else on the generic one.
  std::vector<std::unique_ptr<DesignSpace>> rests, generic;
  for (const auto& family : {lower_elementwise, lower_reduce, lower_normalize, lower_scan, lower_reduce_scalar, lower_pool})
    for (auto& s : family(rest_tg)) rests.push_back(std::move(s));
  if (rests.empty()) rests = lower_generic(rest_tg);

  std::vector<std::unique_ptr<DesignSpace>> out;
  const Facts device = device_facts();
  for (auto& rest : rests) {
    std::unique_ptr<DesignSpace> gemm = std::move(lower_prefix().front());
    auto manifest = combined_manifest(gemm->manifest(), rest->manifest(), device, false);
    out.push_back(std::make_unique<SplitSpace>(tgp, std::move(gemm), std::move(rest), scratch, shape, std::move(manifest)));
  }
  // Beside it, where the rest is a softmax, log_softmax or logsumexp over N: the epilogue's row
  // statistics and the light kernel that combines them.
  if (std::string op = conv ? "" : row_stats_op(*rest_tg); !op.empty()) {
    const std::string part = mma::scratch_name(task, "gemm_row_stats");
    auto gemm = lower_gemm_with_row_stats(prefix_tg, part);
    if (!gemm.empty()) {
      std::vector<Facts> facts;
      for (size_t w = 0; w < tg.workloads(); ++w)
        facts.push_back({{"n", tg.graph(w).values[static_cast<size_t>(v)].shape[1]}, {"rows", tg.graph(w).values[static_cast<size_t>(v)].shape[0]}});
      auto rest = std::make_unique<RowStatsSpace>(rest_tg, op, part, std::move(facts));
      rest->express("n", shape[1]);
      rest->express("rows", shape[0]);
      auto manifest = combined_manifest(gemm.front()->manifest(), rest->manifest(), device, true);
      out.push_back(std::make_unique<SplitSpace>(tgp, std::move(gemm.front()), std::move(rest), scratch, shape, std::move(manifest)));
    }
  }
  return out;
}

}  // namespace

std::vector<std::unique_ptr<DesignSpace>> lower_split(const TaskGraphPtr& tgp) {
  std::vector<std::unique_ptr<DesignSpace>> none;
  const TaskGraph& tg = *tgp;
  const Graph& g = tg.graph();
  if (g.outputs.size() != 1) return none;
  // The graph's one matmul or linear; else (no GEMM in the graph) its one convolution.
  int main = -1;
  bool conv = false;
  for (bool convs : {false, true}) {
    for (size_t p = 0; p < g.nodes.size(); ++p) {
      if (!(convs ? is_conv_op(g.nodes[p].op) : is_main_op(g.nodes[p].op))) continue;
      if (main >= 0) return none;
      main = static_cast<int>(p);
    }
    conv = convs;
    if (main >= 0) break;
  }
  if (main < 0) return none;
  const int t = g.nodes[static_cast<size_t>(main)].outputs.front(), end = chain_end(tg, t);
  if (end == tg.output()) return none;  // the gemm (conv) family takes the whole graph
  // A graph the conv family takes whole although its chain stops early (a residual of the
  // convolution's value) keeps the spaces it had: no slower split beside them.
  if (conv && !lower_conv(tgp).empty()) return none;
  // The longest prefix first; where its tail does not fit the gemm epilogue, the bare GEMM.
  for (int v : {end, t}) {
    try {
      auto out = split_at(tgp, v, conv);
      if (!out.empty()) return out;
    } catch (const std::exception&) {
      // A side the families cannot lower (a size no axis expression matches): no split here, and
      // the task keeps the spaces it had.
    }
    if (v == t) break;
  }
  return none;
}

}  // namespace kevo::lower
