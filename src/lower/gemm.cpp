// Family "gemm": the graph's matmul or linear layer on kevo's own tensor-core GEMM
// (templates/gemm/), with the elementwise rest of the graph generated into the GEMM's epilogue
// as a Tail functor (or into the second kernel the genome may place it in).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "lower/canonical.h"
#include "lower/families.h"
#include "lower/mma.h"
#include "lower/precision.h"

namespace kevo::lower {

namespace {

using mma::element_bytes;
using mma::element_type;
using mma::is_float;
using mma::scratch_name;

const ValueInfo& info(const Graph& g, int v) { return g.values[static_cast<size_t>(v)]; }

// How a tail input reaches output element (row, col) of y[M, N] (torch's broadcasting).
struct TailInput {
  enum Kind { Full, PerColumn, PerRow, Scalar };
  int value = -1;
  std::string buffer;  // the contract name: the plan argument
  std::string name;    // its parameter in the generated code: "in_b"
  Kind kind = Full;
  DType dtype = DType::Float32;
};

struct Mapping {
  int main = -1, a = -1, b = -1, bias = -1, t = -1;  // b: the graph input (a transposed b's source)
  bool b_kmajor = false;  // linear, or a batch of transposed b: [N, K]; else b is [K, N]
  // A batch of matrix products (bmm): a [..., M, K], b [..., K, N] or [..., N, K] and y [..., M, N]
  // with the same leading dims, one product per blockIdx.z; else y's leading dims are rows.
  bool batched = false;
  DType elem = DType::Float32, out = DType::Float32;
  Region tail;                    // from t (and the contract's inputs) to the output
  std::vector<TailInput> inputs;  // the tail's inputs other than t; the linear's bias first
  std::string row_stats;          // the plan's buffer of per-(row, N tile) exp statistics, or ""
};

// How many of y's leading dims are the batch (one product each): all but the last two where
// batched, else none. y's dims from there to its last are the rows M.
int batch_dims(const TaskGraph& tg, const Mapping& m) { return m.batched ? tg.rank(tg.output()) - 2 : 0; }
// The rows of one product (M) as a plan expression: y's leading dims, or (batched) the last of them.
std::string rows(const TaskGraph& tg, const Mapping& m) {
  const int y = tg.output();
  return tg.product(y, batch_dims(tg, m), tg.rank(y) - 1);
}
// The products in the batch: y's leading dims before M ("1" unbatched).
std::string batch_count(const TaskGraph& tg, const Mapping& m) { return tg.product(tg.output(), 0, batch_dims(tg, m)); }

class GemmSpace : public DesignSpace {
 public:
  GemmSpace(TaskGraphPtr tg, Mapping m, std::vector<Facts> facts)
      : DesignSpace("gemm/" + tg->graph().nodes[static_cast<size_t>(m.main)].op,
                    "kevo's tensor-core GEMM (mma.sync or wgmma, cp.async or warp-specialised TMA loads; 3xTF32 (promoted to the CUDA cores per k step where K is long for the tolerance), 3xbf16, TF32 or native 16-bit products; split-K), "
                    "the elementwise tail in its epilogue or in a second kernel",
                    "gemm", std::move(facts)),
        tg_(std::move(tg)), m_(std::move(m)) {}

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    const bool serial = v["kSplit"] == 1, second_kernel = v["kEpilogue"] == 2;
    const std::string M = rows(*tg_, m_), N = tg_->dim(tg_->output(), tg_->rank(tg_->output()) - 1);
    const std::string ws = scratch_name(task, "gemm_workspace"), turns = scratch_name(task, "gemm_turns");
    std::string src = config(g, v);
    nlohmann::json args = nlohmann::json::array();
    src += gemm_kernel(v, &args);
    nlohmann::json steps = nlohmann::json::array();
    nlohmann::json plan;
    if (serial) {
      src += "\n// Serial split-K's turn counters start at zero in every run.\n"
             "extern \"C\" __global__ void kevo_gemm_zero_turns(int* turns, int n) { kevo::gemm_zero_flags(turns, n); }\n";
      steps.push_back({{"kernel", "kevo_gemm_zero_turns"},
                       {"grid", {"(" + batched_count(tiles(v)) + " + 255) // 256"}},
                       {"block", {256}},
                       {"args", {turns, {{"int", batched_count(tiles(v))}}}}});
      plan["buffers"][turns] = {{"dtype", "int32"}, {"shape", {batched_count(tiles(v))}}};
    }
    steps.push_back(gemm_step(v, args));
    if (!m_.row_stats.empty())  // an ExpStat (max, sum) per row and N tile
      plan["buffers"][m_.row_stats] = {{"dtype", "float32"},
                                       {"shape", {M, "(" + N + " + " + std::to_string(v["kBN"] - 1) + ") // " + std::to_string(v["kBN"]), "2"}}};
    if (serial || second_kernel) {
      nlohmann::json shape = nlohmann::json::array({batched_count(M), N});
      if (second_kernel) shape.insert(shape.begin(), v["kSplits"]);
      plan["buffers"][ws] = {{"dtype", "float32"}, {"shape", shape}};
    }
    if (second_kernel) src += reduce_kernel(v, steps);
    plan["steps"] = steps;
    return candidate_text(task, task.name + "_gemm", plan, genome_comment(g, v), candidate_templates(manifest()) + "\n" + src);
  }

 private:
  std::string input_name(int val) const { return tg_->task().inputs[static_cast<size_t>(tg_->input_index(val))].name; }
  std::string tiles(std::map<std::string, int64_t>& v) const {
    const std::string M = rows(*tg_, m_), N = tg_->dim(tg_->output(), tg_->rank(tg_->output()) - 1);
    return "((" + M + " + " + std::to_string(v["kBM"] - 1) + ") // " + std::to_string(v["kBM"]) + ") * ((" + N + " + " +
           std::to_string(v["kBN"] - 1) + ") // " + std::to_string(v["kBN"]) + ")";
  }

  // The graph as a comment, the Tail functor and the GemmConfig the genome instantiates.
  std::string config(const Genome& g, std::map<std::string, int64_t>& v) const {
    std::ostringstream src;
    src << "// The op graph (first workload); the GEMM computes " << input_name(m_.a) << " @ " << input_name(m_.b)
        << (m_.b_kmajor ? "^T" : "") << (m_.batched ? ", one product of the batch per blockIdx.z" : "")
        << ", Tail::apply the rest from its accumulator:\n";
    std::istringstream ref(tg_->graph().to_string());
    for (std::string line; std::getline(ref, line);) src << "//   " << line << "\n";
    src << tail_functor() << "\n";
    src << "using Config = kevo::GemmConfig<" << enumerator(g, "kPath") << ", " << element_type(m_.elem) << ", "
        << element_type(m_.out) << ", " << enumerator(g, "kPrecision") << ", " << v["kBM"] << ", " << v["kBN"] << ", " << v["kBK"]
        << ", " << v["kWarpsM"] << ", " << v["kWarpsN"] << ", " << v["kStages"] << ", kevo::BLayout::" << (m_.b_kmajor ? "KMajor" : "NMajor")
        << ", " << enumerator(g, "kRaster") << ", " << v["kGroup"] << ", " << enumerator(g, "kSplit") << ", " << v["kSplits"]
        << ", " << enumerator(g, "kEpilogue") << ", " << enumerator(g, "kLoad") << ", " << (v["kPersistent"] == 1 ? "true" : "false")
        << ">;\n";
    src << "static_assert(Config::kSharedBytes == " << shared_bytes(v) << ", \"the plan's shared_bytes\");\n\n";
    return src.str();
  }

  // The GEMM kernel: operands, scratch, tail inputs, sizes (their arguments into `args`).
  std::string gemm_kernel(std::map<std::string, int64_t>& v, nlohmann::json* args) const {
    const Task& task = tg_->task();
    const bool serial = v["kSplit"] == 1, second_kernel = v["kEpilogue"] == 2, tma = v["kLoad"] == 1;
    const std::string M = rows(*tg_, m_), N = tg_->dim(tg_->output(), tg_->rank(tg_->output()) - 1),
                      K = tg_->dim(m_.a, tg_->rank(m_.a) - 1);
    const std::string T = element_type(m_.elem), TOut = element_type(m_.out);
    std::ostringstream src;
    src << "extern \"C\" __global__ void __launch_bounds__(Config::kThreads, " << v["kMinBlocks"] << ") kevo_gemm(";
    if (tma) {
      // TMA boxes of the block tile, 128-byte swizzled (a K tile is 128 bytes): A as [K, M], B as [K, N].
      src << "const __grid_constant__ kevo::TensorMap tma_a, const __grid_constant__ kevo::TensorMap tma_b, ";
      args->push_back({{"tensor_map", {{"buffer", input_name(m_.a)}, {"dims", {K, M}}, {"box", {v["kBK"], v["kBM"]}}, {"swizzle", 128}}}});
      args->push_back({{"tensor_map", {{"buffer", input_name(m_.b)}, {"dims", {K, N}}, {"box", {v["kBK"], v["kBN"]}}, {"swizzle", 128}}}});
    }
    for (const std::string& name : {input_name(m_.a), input_name(m_.b), task.outputs.front().name}) args->push_back(name);
    src << "const " << T << "* a, const " << T << "* b, " << TOut << "* y";
    if (serial || second_kernel) {
      src << ", float* ws";
      args->push_back(scratch_name(task, "gemm_workspace"));
    }
    if (serial) {
      src << ", int* turns";
      args->push_back(scratch_name(task, "gemm_turns"));
    }
    const bool stats = !m_.row_stats.empty();
    if (stats) {
      src << ", kevo::ExpStat* row_part";
      args->push_back(m_.row_stats);
    }
    src << tail_parameters(*args) << ", int M, int N, int K) {\n";
    if (m_.batched) src << batch_offsets(serial);
    src << "  const kevo::GemmOperands<" << T << ", " << TOut << "> op{a, b, y, " << (serial || second_kernel ? "ws" : "nullptr")
        << ", " << (serial ? "turns" : "nullptr") << ", M, N, K};\n";
    const std::string with_stats = stats ? ", kevo::RowExpStats>" : ">", stats_init = stats ? ", kevo::RowExpStats::Params{row_part}" : "";
    if (tma)
      src << "  kevo::gemm_tma<Config, Tail" << with_stats << "(op, tma_a, tma_b, " << tail_params_init() << stats_init << ");\n}\n";
    else
      src << "  kevo::gemm<Config, Tail" << with_stats << "(op, " << tail_params_init() << stats_init << ");\n}\n";
    args->push_back({{"int", M}});
    args->push_back({{"int", N}});
    args->push_back({{"int", K}});
    return src.str();
  }

  nlohmann::json gemm_step(std::map<std::string, int64_t>& v, const nlohmann::json& args) const {
    const bool tma = v["kLoad"] == 1, persistent = v["kPersistent"] == 1;
    const int64_t splits = v["kSplits"], threads = (v["kPath"] ? 128 : 32) * v["kWarpsM"] * v["kWarpsN"] + (tma ? 128 : 0);
    return {{"kernel", "kevo_gemm"},
            {"grid", m_.batched ? nlohmann::json{tiles(v), splits, batch_count(*tg_, m_)}
                                : nlohmann::json{persistent ? std::string("num_sms") : tiles(v), splits}},
            {"block", {threads}},
            {"shared_bytes", shared_bytes(v)},
            {"args", args}};
  }

  // The second kernel: the partial sums in split order, then the tail (its step into `steps`).
  std::string reduce_kernel(std::map<std::string, int64_t>& v, nlohmann::json& steps) const {
    const Task& task = tg_->task();
    const std::string M = rows(*tg_, m_), N = tg_->dim(tg_->output(), tg_->rank(tg_->output()) - 1);
    nlohmann::json rargs = nlohmann::json::array({scratch_name(task, "gemm_workspace"), task.outputs.front().name});
    std::ostringstream src;
    src << "\n// The second kernel: the partial sums in split order, then the tail.\n"
        << "extern \"C\" __global__ void __launch_bounds__(256) kevo_gemm_reduce(const float* ws, " << element_type(m_.out) << "* y"
        << tail_parameters(rargs) << ", int M, int N, int splits) {\n"
        << "  kevo::gemm_reduce<" << element_type(m_.out) << ", Tail>(ws, y, M, N, splits, " << tail_params_init() << ");\n}\n";
    rargs.push_back({{"int", M}});
    rargs.push_back({{"int", N}});
    rargs.push_back({{"int", v["kSplits"]}});
    steps.push_back({{"kernel", "kevo_gemm_reduce"},
                     {"grid", {"(" + paren(M) + " * " + paren(N) + " // 2 + 255) // 256"}},
                     {"block", {256}},
                     {"args", rargs}});
    return src.str();
  }

  std::string genome_comment(const Genome& g, std::map<std::string, int64_t>& v) const {
    const bool serial = v["kSplit"] == 1, second_kernel = v["kEpilogue"] == 2, tma = v["kLoad"] == 1;
    const bool persistent = v["kPersistent"] == 1;
    const int64_t splits = v["kSplits"];
    std::ostringstream knobs;
    for (size_t i = 0; i < this->knobs().size(); ++i)
      knobs << (i ? ", " : "") << this->knobs()[i].name << "=" << g.values[i];
    return "Generated by kevo from template family 'gemm' (space " + id() + ").\nGenome: " + knobs.str() + ".\n" +
           (v["kPath"] ? (tma ? std::string("wgmma fed by TMA, warp-specialised") + (persistent ? ", persistent" : "") + " (sm_90a)" : "wgmma (sm_90a)") : "mma.sync") + ", " + std::to_string(v["kBM"]) + "x" + std::to_string(v["kBN"]) + "x" +
           std::to_string(v["kBK"]) + " tiles, " + std::to_string(v["kStages"]) + " stages, " +
           (splits > 1 ? std::to_string(splits) + " K splits (" + (serial ? "serial" : "parallel") + "), " : "") + "tail " +
           (second_kernel ? "in a second kernel" : v["kEpilogue"] == 1 ? "in the epilogue, staged through shared memory"
                                                                        : "in the epilogue, from registers") +
           ".";
  }

  // `per_product` elements for each product of the batch.
  std::string batched_count(const std::string& per_product) const {
    return m_.batched ? paren(batch_count(*tg_, m_)) + " * " + paren(per_product) : per_product;
  }

  // The kernel's pointers moved to product blockIdx.z (every operand and tail input contiguous,
  // the batch its leading dims): a by M * K, b by K * N, y, a [M, N] tail input and a serial
  // split-K's workspace by M * N, a per-row input by M, the turn counters by the tiles.
  std::string batch_offsets(bool serial) const {
    std::string s = "  const long long z = blockIdx.z, mn = (long long)M * N;  // this product of the batch\n"
                    "  a += z * M * K;\n  b += z * K * N;\n  y += z * mn;\n";
    if (serial)
      s += "  ws += z * mn;\n  turns += z * ((M + Config::kBM - 1) / Config::kBM) * ((N + Config::kBN - 1) / Config::kBN);\n";
    for (const TailInput& in : m_.inputs)
      if (in.kind == TailInput::Full || in.kind == TailInput::PerRow)
        s += "  " + in.name + " += z * " + (in.kind == TailInput::Full ? "mn" : "M") + ";\n";
    return s;
  }

  // Config::kSharedBytes, computed as the template does (the generated static_assert checks it).
  int64_t shared_bytes(std::map<std::string, int64_t>& v) const {
    const int64_t e = element_bytes(m_.elem);
    int64_t main = v["kStages"] * (v["kBM"] + v["kBN"]) * v["kBK"] * e;
    const bool fp32 = m_.elem == DType::Float32, bf16x3 = v["kPrecision"] == 3;
    if (v["kPath"] == 1 && fp32 && !bf16x3 && !(v["kPrecision"] == 1 && m_.b_kmajor)) main += 2 * v["kBN"] * v["kBK"] * 4;
    if (v["kPath"] == 1 && bf16x3) main += 2 * 2 * (v["kBM"] + v["kBN"]) * v["kBK"] * 2;  // two sets of bf16 parts
    if (v["kLoad"] == 1) main += 2 * 8 * v["kStages"];  // the TMA ring's full and empty mbarriers
    const int64_t staged = v["kEpilogue"] == 1 ? v["kBM"] * (v["kBN"] + 4) * 4 : 0;
    return v["kPersistent"] == 1 ? main + staged : std::max(main, staged);  // persistent: the ring stays busy
  }

  // ", const float* in_b" per tail input; their buffers appended to `args`.
  std::string tail_parameters(nlohmann::json& args) const {
    std::string s;
    for (const TailInput& in : m_.inputs) {
      s += std::string(", const ") + element_type(in.dtype) + "* " + in.name;
      args.push_back(in.buffer);
    }
    return s;
  }
  std::string tail_params_init() const {
    std::string s = "Tail::Params{";
    for (const TailInput& in : m_.inputs) s += in.name + ", ";
    return s + "N}";
  }

  std::string tail_functor() const {
    const Graph& gr = tg_->graph();
    std::ostringstream s;
    s << "struct Tail {\n  struct Params {\n";
    for (const TailInput& in : m_.inputs) {
      const char* how = in.kind == TailInput::Full        ? "[M, N]"
                        : in.kind == TailInput::PerColumn ? "one value per column"
                        : in.kind == TailInput::PerRow    ? "one value per row"
                                                          : "one value";
      s << "    const " << element_type(in.dtype) << "* __restrict__ " << in.name << ";  // " << in.buffer << ": " << how << "\n";
    }
    s << "    long long n;  // N, the row length of [M, N] inputs\n  };\n";
    s << "  static __device__ __forceinline__ float apply(const Params& p, float acc, long long row, long long col) {\n";
    s << "    (void)p, (void)row, (void)col;\n";
    std::string start = "acc";
    if (m_.bias >= 0) {
      const TailInput& b = m_.inputs.front();
      s << "    const float v" << m_.t << " = acc + kevo::load_float(" << b.name << "_at(p, row, col));  // %" << m_.t
        << " = the linear layer with its bias\n";
      start = "v" + std::to_string(m_.t);
    }
    std::string result;
    const std::string body = emit_region(gr, m_.tail,
                                         [&](int leaf) {
                                           if (leaf == m_.t) return start;
                                           for (const TailInput& in : m_.inputs)
                                             if (in.value == leaf) return "kevo::load_float(" + in.name + "_at(p, row, col))";
                                           return std::string("0.f");
                                         },
                                         "    ", &result);
    s << body << "    return " << result << ";\n  }\n";
    // Where each input's element for (row, col) lies.
    for (const TailInput& in : m_.inputs) {
      const std::string at = in.kind == TailInput::Full        ? "row * p.n + col"
                             : in.kind == TailInput::PerColumn ? "col"
                             : in.kind == TailInput::PerRow    ? "row"
                                                               : "0";
      s << "  static __device__ __forceinline__ const " << element_type(in.dtype) << "* " << in.name
        << "_at(const Params& p, long long row, long long col) {\n    (void)row, (void)col;\n    return p." << in.name << " + "
        << at << ";\n  }\n";
    }
    s << "};\n";
    return s.str();
  }

  TaskGraphPtr tg_;
  Mapping m_;
};

// A tail input broadcast onto y (right-aligned, as torch broadcasts), y seen as [M, N]: its last
// dim the columns, its leading dims the rows. False when a dim neither is 1 nor matches the
// output's in every workload, or when the input varies along some row dims but not all of them.
bool broadcast_input(const TaskGraph& tg, int v, int out, TailInput& in) {
  const int lrank = tg.rank(v), orank = tg.rank(out), offset = orank - lrank;
  if (!is_float(info(tg.graph(), v).dtype) || lrank > orank) return false;
  in.value = v;
  in.buffer = tg.task().inputs[static_cast<size_t>(tg.input_index(v))].name;
  in.name = "in_" + ident(in.buffer);
  in.dtype = info(tg.graph(), v).dtype;
  bool rows_vary = false, cols_vary = false, rows_full = true;
  for (int od = 0; od < orank; ++od) {
    bool varies = false, matches = true, out_one = true;
    for (size_t w = 0; w < tg.workloads(); ++w) {
      const int64_t o = info(tg.graph(w), out).shape[static_cast<size_t>(od)];
      const int64_t n = od >= offset ? info(tg.graph(w), v).shape[static_cast<size_t>(od - offset)] : 1;
      varies = varies || n != 1;
      matches = matches && n == o;
      out_one = out_one && o == 1;
    }
    if (varies && !matches) return false;
    if (od == orank - 1) {
      cols_vary = varies;
    } else {
      rows_vary = rows_vary || varies;
      rows_full = rows_full && (matches || out_one);
    }
  }
  if (rows_vary && !rows_full) return false;
  in.kind = rows_vary && cols_vary ? TailInput::Full
            : cols_vary            ? TailInput::PerColumn
            : rows_vary            ? TailInput::PerRow
                                   : TailInput::Scalar;
  return true;
}

// The products of a batched GEMM are blockIdx.z: at most gridDim.z's limit.
constexpr int64_t kMaxGridZ = 65535;

// a, b and y of a batched product have the same leading (batch) dims at every workload: no
// batch broadcast against another (b [1, K, N]: the generic family's).
bool same_batch(const TaskGraph& tg, const Mapping& m, int y) {
  const int batch_dims = tg.rank(y) - 2;
  for (size_t w = 0; w < tg.workloads(); ++w) {
    const Shape &ys = info(tg.graph(w), y).shape, &as = info(tg.graph(w), m.a).shape, &bs = info(tg.graph(w), m.b).shape;
    if (!std::equal(ys.begin(), ys.begin() + batch_dims, as.begin()) || !std::equal(ys.begin(), ys.begin() + batch_dims, bs.begin()))
      return false;
  }
  return true;
}

}  // namespace

std::vector<std::unique_ptr<DesignSpace>> lower_gemm(const TaskGraphPtr& tgp) { return lower_gemm_with_row_stats(tgp, ""); }

std::vector<std::unique_ptr<DesignSpace>> lower_gemm_with_row_stats(const TaskGraphPtr& tgp, const std::string& row_stats) {
  std::vector<std::unique_ptr<DesignSpace>> none;
  const TaskGraph& tg = *tgp;
  const Graph& g = tg.graph();
  if (g.outputs.size() != 1) return none;
  const int o = tg.output();
  // y is [M, N], or (a batch of rows) [..., N] with M the product of its leading dims.
  if (tg.input_index(o) >= 0 || tg.rank(o) < 2) return none;

  // The main op: the graph's only matmul or linear (and no convolution), on graph inputs.
  Mapping m;
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    const std::string& op = g.nodes[p].op;
    if (op == "conv2d") return none;
    if (op != "linear" && op != "matmul") continue;
    if (m.main >= 0) return none;
    m.main = static_cast<int>(p);
  }
  if (m.main < 0) return none;
  const Node& main = g.nodes[static_cast<size_t>(m.main)];
  m.a = main.inputs[0];
  m.b = main.inputs[1];
  m.bias = main.op == "linear" && main.inputs.size() > 2 ? main.inputs[2] : -1;
  m.b_kmajor = main.op == "linear";
  m.t = main.outputs.front();
  m.row_stats = row_stats;
  if (!row_stats.empty() && info(g, o).dtype != DType::Float32) return none;  // the statistics read fp32 results
  m.elem = info(g, m.a).dtype;
  m.out = info(g, o).dtype;
  const int rank = tg.rank(o);
  if (main.op == "matmul" && tg.input_index(m.b) < 0 && rank >= 3) {
    const int source = transposed_source(g, m.b);  // a batch of b^T: [..., N, K]
    if (source >= 0) {
      m.b = source;
      m.b_kmajor = true;
    }
  }
  m.batched = main.op == "matmul" && rank >= 3 && tg.rank(m.b) == rank;
  if (!is_float(m.elem) || info(g, m.b).dtype != m.elem || tg.input_index(m.a) < 0 || tg.input_index(m.b) < 0) return none;
  if (tg.rank(m.a) != rank || (tg.rank(m.b) != 2 && !m.batched) || tg.rank(m.t) != rank) return none;
  if (m.batched && (!row_stats.empty() || !same_batch(tg, m, o))) return none;
  if (m.out != DType::Float32 && m.out != m.elem) return none;  // fp32 results, or results of the operands' type
  for (size_t w = 0; w < tg.workloads(); ++w)
    if (info(tg.graph(w), m.t).shape != info(tg.graph(w), o).shape) return none;  // the tail maps y 1:1

  // The tail: the output from t and the contract's inputs, elementwise (in float).
  m.tail = elementwise_region(g, o, [&](int v) { return v == m.t || tg.input_index(v) >= 0; }, m.elem != DType::Float32);
  if (!m.tail.ok) return none;
  if (m.bias >= 0) {
    TailInput b;
    if (tg.input_index(m.bias) < 0 || tg.rank(m.bias) != 1 || !broadcast_input(tg, m.bias, o, b)) return none;
    b.kind = TailInput::PerColumn;
    b.name += "_bias";  // the linear's own bias, apart from any use of the same input in the tail
    m.inputs.push_back(b);
  }
  for (int leaf : m.tail.leaves) {
    if (leaf == m.t) continue;
    TailInput in;
    if (!broadcast_input(tg, leaf, o, in)) return none;
    m.inputs.push_back(in);
  }

  // Sizes the loads and stores need at every workload (16-byte chunks along K, and along N for a
  // b stored [K, N]; pairs of columns per store); where they fail, the family does not serve the task.
  const int e = element_bytes(m.elem);
  std::vector<Facts> facts;
  bool tf32 = m.elem == DType::Float32;
  const int rows_from = batch_dims(tg, m);
  for (size_t w = 0; w < tg.workloads(); ++w) {
    const int64_t M = tg.product_value(w, o, rows_from, rank - 1), N = info(tg.graph(w), o).shape.back(),
                  K = info(tg.graph(w), m.a).shape.back(), batch = tg.product_value(w, o, 0, rows_from);
    if (K % (16 / e) != 0 || N % 2 != 0 || (!m.b_kmajor && N % (16 / e) != 0) || batch > kMaxGridZ) return none;
    tf32 = tf32 && tf32_admitted(tg.task(), K);
    facts.push_back({{"m", M}, {"n", N}, {"k", K}, {"batch", batch}, {"batched", m.batched}, {"fp32", m.elem == DType::Float32}, {"elem_bytes", e},
                     {"b_kmajor", m.b_kmajor}, {"tf32x3_ok", m.elem == DType::Float32 && tf32x3_admitted(tg.task(), K)},
                     {"bf16x3_ok", m.elem == DType::Float32 && bf16x3_admitted(tg.task(), K)}});
  }
  for (Facts& f : facts) f["tf32_ok"] = tf32;
  std::vector<std::unique_ptr<DesignSpace>> out;
  const std::string M = rows(tg, m), N = tg.dim(o, rank - 1), K = tg.dim(m.a, rank - 1), batch = batch_count(tg, m);
  const bool b_kmajor = m.b_kmajor;
  out.push_back(std::make_unique<GemmSpace>(tgp, std::move(m), std::move(facts)));
  DesignSpace& s = *out.back();
  s.express("m", M);
  s.express("n", N);
  s.express("k", K);
  s.express("batch", batch);
  for (const char* flag : {"batched", "fp32", "elem_bytes", "b_kmajor"})  // of the dtypes and the graph
    s.express(flag, std::to_string(s.facts().front().at(flag)));
  const bool fp32 = s.facts().front().at("fp32") == 1;
  s.express("tf32_ok", tf32_admitted_expr(tg.task(), fp32, K));
  s.express("tf32x3_ok", tf32x3_admitted_expr(tg.task(), fp32, K));
  s.express("bf16x3_ok", bf16x3_admitted_expr(tg.task(), fp32, K));
  // The loads' and stores' sizes checked above for every workload, for every shape.
  s.assume({"(" + K + ") % " + std::to_string(16 / e), "==", "0", "16-byte loads along K"});
  s.assume({"(" + N + ") % 2", "==", "0", "stores write pairs of columns"});
  if (!b_kmajor) s.assume({"(" + N + ") % " + std::to_string(16 / e), "==", "0", "16-byte loads of b along N"});
  if (batch != "1") s.assume({batch, "<=", std::to_string(kMaxGridZ), "one product of the batch per blockIdx.z"});
  return out;
}

}  // namespace kevo::lower
