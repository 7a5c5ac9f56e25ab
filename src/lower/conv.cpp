// Family "conv": the graph's conv2d (or conv1d as a conv2d of height 1, or conv3d: the same kernel
// with a third window coordinate) on kevo's implicit-GEMM convolution (templates/conv/), with the
// elementwise rest of the graph generated into its epilogue as a Tail functor that sees each result
// with its index in y and its channel. The plan is the convolution alone, or (kLayout = Nhwc) two
// copies into NHWC (NDHWC) scratch before it. A transposed convolution (conv_transpose1d/2d/3d) is
// the same kernel over the transposed index math (its Geometry says kTransposed), NCHW only, after
// a kernel that rewrites torch's [C, OC/G, k...] weight into scratch as [OC, C/G, k...].
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

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

// How a tail input reaches output element y[n, oc, oh, ow] (torch's broadcasting): at the same
// index, one value per channel, or one value.
struct TailInput {
  enum Kind { Full, PerChannel, Scalar };
  int value = -1;
  std::string buffer;  // the contract name: the plan argument
  std::string name;    // its parameter in the generated code: "in_b"
  Kind kind = Full;
  DType dtype = DType::Float32;
};

// What the op graph fixes about the convolution (the generated Geometry; kd, sd, pd, dd: conv3d's;
// transposed: a conv_transpose, whose output_padding only makes the output larger: the index math
// takes the output's sizes, so it needs no constant of its own).
struct Geometry {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  int64_t kd = 1, sd = 1, pd = 0, dd = 1;
  bool transposed = false;
};

struct Mapping {
  int main = -1, x = -1, w = -1, bias = -1, t = -1;
  int spatial = 2;  // conv2d, conv1d as a conv2d of height 1, or conv3d
  Geometry geo;
  DType elem = DType::Float32, out = DType::Float32;
  Region tail;
  std::vector<TailInput> inputs;  // the conv's bias first
};

class ConvSpace : public DesignSpace {
 public:
  ConvSpace(TaskGraphPtr tg, Mapping m, std::vector<Facts> facts, int64_t table_k)
      : DesignSpace("conv/" + tg->graph().nodes[static_cast<size_t>(m.main)].op,
                    "kevo's implicit-GEMM convolution on the tensor cores (mma.sync; 3xTF32, promoted 3xTF32, 3xbf16, TF32 or native "
                    "16-bit products), the elementwise tail in its epilogue",
                    "conv", std::move(facts)),
        tg_(std::move(tg)), m_(std::move(m)), table_k_(table_k) {}

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    const int64_t threads = 32 * v["kWarpsM"] * v["kWarpsN"], bk = v["kBK"];
    const int64_t table = v["kOffsets"] ? (table_k_ + bk - 1) / bk * bk : 0;
    const Sizes z = sizes();
    const std::string tiles = "((" + z.M + " + " + std::to_string(v["kBM"] - 1) + ") // " + std::to_string(v["kBM"]) +
                              ") * ((" + z.OCg + " + " + std::to_string(v["kBN"] - 1) + ") // " +
                              std::to_string(v["kBN"]) + ")";
    std::string src = config(g, v, table);
    nlohmann::json plan, steps = nlohmann::json::array();
    src += rewrite_kernels(v, z, steps, plan);
    nlohmann::json args;
    src += conv_kernel(v, z, &args);
    steps.push_back({{"kernel", "kevo_conv"},
                     {"grid", {tiles, m_.geo.groups}},
                     {"block", {threads}},
                     {"shared_bytes", shared_bytes(v, table)},
                     {"args", args}});
    plan["steps"] = steps;
    return candidate_text(task, task.name + "_conv", plan, genome_comment(g, v), candidate_templates(manifest()) + "\n" + src);
  }

 private:
  // The sizes the kernel takes, as plan expressions (conv1d: H = OH = 1; conv3d adds D and OD);
  // M (the GEMM's rows), OC per group, and K (a weight row's length).
  struct Sizes {
    std::string N, C, H, W, OC, OH, OW, D, OD, M, OCg, K;
  };
  Sizes sizes() const {
    const int o = tg_->output();
    const bool one_d = m_.spatial == 1, three_d = m_.spatial == 3;
    const int last = m_.spatial + 1;
    Sizes z;
    z.N = tg_->dim(m_.x, 0), z.C = tg_->dim(m_.x, 1), z.H = one_d ? "1" : tg_->dim(m_.x, last - 1), z.W = tg_->dim(m_.x, last);
    z.OC = tg_->dim(o, 1), z.OH = one_d ? "1" : tg_->dim(o, last - 1), z.OW = tg_->dim(o, last);
    z.D = three_d ? tg_->dim(m_.x, 2) : "1", z.OD = three_d ? tg_->dim(o, 2) : "1";
    z.M = paren(z.N) + " * " + (three_d ? paren(z.OD) + " * " : "") + paren(z.OH) + " * " + paren(z.OW);
    z.OCg = m_.geo.groups == 1 ? z.OC : paren(z.OC) + " // " + std::to_string(m_.geo.groups);
    const Geometry& ge = m_.geo;
    z.K = paren(z.C) + " // " + std::to_string(ge.groups) + " * " + std::to_string(ge.kd * ge.kh * ge.kw);
    return z;
  }
  std::string input_name(int val) const { return tg_->task().inputs[static_cast<size_t>(tg_->input_index(val))].name; }

  // The graph as a comment, the Geometry, the Tail functor and the ConvConfig the genome instantiates.
  std::string config(const Genome& g, std::map<std::string, int64_t>& v, int64_t table) const {
    std::ostringstream src;
    src << "// The op graph (first workload); the convolution computes conv(" << input_name(m_.x) << ", "
        << input_name(m_.w) << "), Tail::apply the rest from its accumulator:\n";
    std::istringstream ref(tg_->graph().to_string());
    for (std::string line; std::getline(ref, line);) src << "//   " << line << "\n";
    const Geometry& ge = m_.geo;
    src << geometry_struct(ge, m_.spatial == 3);
    if (ge.transposed) src << "// A transposed convolution: x is gathered where (output coordinate + padding - tap shift) divides by the stride.\n";
    src << tail_functor() << "\n";
    src << "using Config = kevo::ConvConfig<" << element_type(m_.elem) << ", " << element_type(m_.out) << ", "
        << enumerator(g, "kPrecision") << ", " << v["kBM"] << ", " << v["kBN"] << ", " << v["kBK"] << ", " << v["kWarpsM"] << ", "
        << v["kWarpsN"] << ", " << v["kStages"] << ", " << enumerator(g, "kRaster") << ", " << v["kGroup"] << ", "
        << enumerator(g, "kOffsets") << ", " << enumerator(g, "kLayout") << ", " << enumerator(g, "kWeightCopy") << ", "
        << enumerator(g, "kEpilogue") << ", " << table << ">;\n";
    src << "static_assert(Config::kSharedBytes == " << shared_bytes(v, table) << ", \"the plan's shared_bytes\");\n\n";
    return src.str();
  }

  // The kernels before the convolution: NHWC copies of x and the weight (kLayout 1), or a
  // transposed convolution's weight rewritten from torch's [C, OC/G, k...] into [OC, C/G, k...].
  std::string rewrite_kernels(std::map<std::string, int64_t>& v, const Sizes& z, nlohmann::json& steps, nlohmann::json& plan) const {
    const Task& task = tg_->task();
    const Geometry& ge = m_.geo;
    const std::string T = element_type(m_.elem), dtype = dtype_name(m_.elem);
    std::ostringstream src;
    if (v["kLayout"] == 1) {
      const std::string xt = scratch_name(task, "conv_x_nhwc"), wt = scratch_name(task, "conv_w_nhwc");
      const bool three_d = m_.spatial == 3;
      const std::string hw = (three_d ? paren(z.D) + " * " : "") + paren(z.H) + " * " + paren(z.W);
      src << "extern \"C\" __global__ void __launch_bounds__(256) kevo_conv_x_nhwc(const " << T << "* x, " << T
          << "* xt, int C, int HW) {\n  kevo::conv_x_to_nhwc<" << T << ">(x, xt, C, HW);\n}\n"
          << "extern \"C\" __global__ void __launch_bounds__(256) kevo_conv_w_nhwc(const " << T << "* w, " << T
          << "* wt, int OC, int Cg) {\n  kevo::conv_w_to_nhwc<" << T << ", Geometry>(w, wt, OC, Cg);\n}\n\n";
      steps.push_back({{"kernel", "kevo_conv_x_nhwc"},
                       {"grid", {"(" + hw + " + 31) // 32", "(" + z.C + " + 31) // 32", z.N}},
                       {"block", {32, 8}},
                       {"args", {input_name(m_.x), xt, {{"int", z.C}}, {{"int", hw}}}}});
      steps.push_back({{"kernel", "kevo_conv_w_nhwc"},
                       {"grid", {"(" + paren(z.OC) + " * " + z.K + " + 255) // 256"}},
                       {"block", {256}},
                       {"args", {input_name(m_.w), wt, {{"int", z.OC}}, {{"int", paren(z.C) + " // " + std::to_string(ge.groups)}}}}});
      plan["buffers"][xt] = {{"dtype", dtype}, {"shape", three_d ? nlohmann::json{z.N, z.D, z.H, z.W, z.C} : nlohmann::json{z.N, z.H, z.W, z.C}}};
      plan["buffers"][wt] = {{"dtype", dtype}, {"shape", {z.OC, z.K}}};
    }
    if (ge.transposed) {
      const std::string wr = scratch_name(task, "conv_w_transposed");
      src << "extern \"C\" __global__ void __launch_bounds__(256) kevo_conv_w_transposed(const " << T << "* w, " << T
          << "* wt, int C, int OC) {\n  kevo::conv_w_transposed<" << T
          << ", Geometry>(w, wt, kevo::ConvShape{1, C, 1, 1, OC, 1, 1});\n}\n\n";
      steps.push_back({{"kernel", "kevo_conv_w_transposed"},
                       {"grid", {"(" + paren(z.OC) + " * " + z.K + " + 255) // 256"}},
                       {"block", {256}},
                       {"args", {input_name(m_.w), wr, {{"int", z.C}}, {{"int", z.OC}}}}});
      plan["buffers"][wr] = {{"dtype", dtype}, {"shape", {z.OC, z.K}}};
    }
    return src.str();
  }

  // The convolution kernel (its arguments into `args`).
  std::string conv_kernel(std::map<std::string, int64_t>& v, const Sizes& z, nlohmann::json* args) const {
    const Task& task = tg_->task();
    const bool nhwc = v["kLayout"] == 1, three_d = m_.spatial == 3;
    const std::string T = element_type(m_.elem), TOut = element_type(m_.out);
    *args = nlohmann::json::array({nhwc ? scratch_name(task, "conv_x_nhwc") : input_name(m_.x),
                                   nhwc            ? scratch_name(task, "conv_w_nhwc")
                                   : m_.geo.transposed ? scratch_name(task, "conv_w_transposed")
                                                       : input_name(m_.w),
                                   task.outputs.front().name});
    std::ostringstream src;
    src << "extern \"C\" __global__ void __launch_bounds__(Config::kThreads, " << v["kMinBlocks"] << ") kevo_conv(const "
        << T << "* x, const " << T << "* w, " << TOut << "* y";
    for (const TailInput& in : m_.inputs) {
      src << ", const " << element_type(in.dtype) << "* " << in.name;
      args->push_back(in.buffer);
    }
    if (three_d)
      src << ", int N, int C, int D, int H, int W, int OC, int OD, int OH, int OW) {\n"
          << "  const kevo::ConvOperands<" << T << ", " << TOut << "> op{x, w, y, {N, C, H, W, OC, OH, OW, D, OD}};\n"
          << "  kevo::conv3d<Config, Geometry, Tail>(op, Tail::Params{";
    else
      src << ", int N, int C, int H, int W, int OC, int OH, int OW) {\n"
          << "  const kevo::ConvOperands<" << T << ", " << TOut << "> op{x, w, y, {N, C, H, W, OC, OH, OW}};\n"
          << "  kevo::conv2d<Config, Geometry, Tail>(op, Tail::Params{";
    for (const TailInput& in : m_.inputs) src << in.name << ", ";
    src << "});\n}\n";
    const std::vector<std::string> sizes = three_d ? std::vector<std::string>{z.N, z.C, z.D, z.H, z.W, z.OC, z.OD, z.OH, z.OW}
                                                   : std::vector<std::string>{z.N, z.C, z.H, z.W, z.OC, z.OH, z.OW};
    for (const std::string& e : sizes) args->push_back({{"int", e}});
    return src.str();
  }

  std::string genome_comment(const Genome& g, std::map<std::string, int64_t>& v) const {
    const bool nhwc = v["kLayout"] == 1, three_d = m_.spatial == 3;
    std::ostringstream knobs;
    for (size_t i = 0; i < this->knobs().size(); ++i)
      knobs << (i ? ", " : "") << this->knobs()[i].name << "=" << g.values[i];
    return "Generated by kevo from template family 'conv' (space " + id() + ").\nGenome: " + knobs.str() + ".\n" +
           (m_.geo.transposed ? "Transposed convolution (weight rewritten to [OC, C/G, k...] first, x gathered where the stride divides), implicit" : "Implicit") +
           " GEMM on mma.sync, " + std::to_string(v["kBM"]) + "x" + std::to_string(v["kBN"]) + "x" + std::to_string(v["kBK"]) +
           " tiles, " + std::to_string(v["kStages"]) + " stages, A gathered from " +
           (nhwc ? (three_d ? "an NDHWC copy of x in 16-byte chunks" : "an NHWC copy of x in 16-byte chunks")
                 : (three_d ? "NCDHW x element by element" : "NCHW x element by element")) +
           ", taps " + (v["kOffsets"] ? "from a shared-memory table" : "computed per tile") + ", tail " +
           (v["kEpilogue"] ? "staged through shared memory" : "from the registers") + ".";
  }

  static std::string dtype_name(DType d) {
    return d == DType::BFloat16 ? "bfloat16" : d == DType::Float16 ? "float16" : "float32";
  }

  // What the graph fixes, as constants of the source (conv3d's adds the depth's, a transposed
  // convolution's kTransposed, which selects its index math).
  static std::string geometry_struct(const Geometry& ge, bool three_d) {
    std::ostringstream s;
    const std::string transposed = ge.transposed ? "  static constexpr bool kTransposed = true;\n" : "";
    if (!three_d) {
      s << "// What the graph fixes: kernel " << ge.kh << "x" << ge.kw << ", stride, padding, dilation, groups.\n"
        << "struct Geometry {\n  static constexpr int KH = " << ge.kh << ", KW = " << ge.kw << ", SH = " << ge.sh
        << ", SW = " << ge.sw << ", PH = " << ge.ph << ", PW = " << ge.pw << ", DH = " << ge.dh << ", DW = " << ge.dw
        << ", G = " << ge.groups << ";\n" << transposed << "};\n";
      return s.str();
    }
    s << "// What the graph fixes: kernel " << ge.kd << "x" << ge.kh << "x" << ge.kw
      << ", stride, padding, dilation (depth, height, width), groups.\n"
      << "struct Geometry {\n  static constexpr int KD = " << ge.kd << ", KH = " << ge.kh << ", KW = " << ge.kw
      << ", SD = " << ge.sd << ", SH = " << ge.sh << ", SW = " << ge.sw << ", PD = " << ge.pd << ", PH = " << ge.ph
      << ", PW = " << ge.pw << ", DD = " << ge.dd << ", DH = " << ge.dh << ", DW = " << ge.dw << ", G = " << ge.groups
      << ";\n" << transposed << "};\n";
    return s.str();
  }

  // Config::kSharedBytes, computed as the template does (the generated static_assert checks it).
  int64_t shared_bytes(std::map<std::string, int64_t>& v, int64_t table) const {
    const int64_t main = v["kStages"] * (v["kBM"] + v["kBN"]) * v["kBK"] * element_bytes(m_.elem);
    const int64_t staged = v["kEpilogue"] ? v["kBN"] * (v["kBM"] + 4) * 4 : 0;
    return std::max(main, staged) + table * 8;
  }

  std::string tail_functor() const {
    std::ostringstream s;
    s << "struct Tail {\n  struct Params {\n";
    for (const TailInput& in : m_.inputs)
      s << "    const " << element_type(in.dtype) << "* __restrict__ " << in.name << ";  // " << in.buffer << ": "
        << (in.kind == TailInput::Full ? "y's shape" : in.kind == TailInput::PerChannel ? "one value per channel" : "one value")
        << "\n";
    s << "  };\n";
    s << "  static __device__ __forceinline__ float apply(const Params& p, float acc, long long idx, int ch) {\n";
    s << "    (void)p, (void)idx, (void)ch;\n";
    std::string start = "acc";
    if (m_.bias >= 0) {
      s << "    const float v" << m_.t << " = acc + kevo::load_float(p." << m_.inputs.front().name << " + ch);  // %" << m_.t
        << " = the convolution with its bias\n";
      start = "v" + std::to_string(m_.t);
    }
    std::string result;
    s << emit_region(tg_->graph(), m_.tail,
                     [&](int leaf) {
                       if (leaf == m_.t) return start;
                       for (const TailInput& in : m_.inputs)
                         if (in.value == leaf)
                           return "kevo::load_float(p." + in.name +
                                  (in.kind == TailInput::Full ? " + idx)" : in.kind == TailInput::PerChannel ? " + ch)" : ")");
                       return std::string("0.f");
                     },
                     "    ", &result)
      << "    return " << result << ";\n  }\n};\n";
    return s.str();
  }

  TaskGraphPtr tg_;
  Mapping m_;
  int64_t table_k_;  // the largest K of the task: the tap table's entries (rounded up to kBK)
};

// A tail input broadcast onto y (right-aligned): at y's index, per channel (dim 1) or a scalar;
// false for any other broadcast.
bool broadcast_input(const TaskGraph& tg, int v, int out, TailInput& in) {
  const int lrank = tg.rank(v), orank = tg.rank(out);
  if (!is_float(info(tg.graph(), v).dtype) || lrank > orank) return false;
  in.value = v;
  in.buffer = tg.task().inputs[static_cast<size_t>(tg.input_index(v))].name;
  in.name = "in_" + ident(in.buffer);
  in.dtype = info(tg.graph(), v).dtype;
  bool full = lrank == orank, channel = false, other = false;
  for (int d = 0; d < lrank; ++d) {
    const int od = d + orank - lrank;
    for (size_t w = 0; w < tg.workloads(); ++w) {
      const int64_t n = info(tg.graph(w), v).shape[static_cast<size_t>(d)];
      const int64_t on = info(tg.graph(w), out).shape[static_cast<size_t>(od)];
      if (n != on) full = false;
      if (n != 1 && n != on) return false;
      if (n != 1) (od == 1 ? channel : other) = true;
    }
  }
  if (full) in.kind = TailInput::Full;
  else if (other) return false;
  else in.kind = channel ? TailInput::PerChannel : TailInput::Scalar;
  return true;
}

// The graph's attribute, one value per spatial dim d (conv1d's single value as the width's; d counts
// from the first spatial dim: height for conv2d, depth for conv3d).
int64_t spatial_attr(const Node& n, const std::string& key, int spatial, int d, int64_t fallback) {
  if (n.attrs.find(key) == n.attrs.end()) return fallback;
  const std::vector<int64_t>& v = attr_ints(n, key);
  if (v.empty()) return fallback;
  if (spatial == 1) return d == 0 ? fallback : v[0];  // conv1d: height 1, no stride or padding along it
  return v[std::min(static_cast<size_t>(d), v.size() - 1)];
}

// Sizes (and a transposed convolution's output coordinates plus padding) must stay below this.
// Im2col's corners plus shifts must stay below its sentinel 2^24 (a far row or tap then fails the
// bounds check, and two far ones still fit an int): sizes below 2^23 keep a corner (at most a size
// plus the padding) and a shift (below 2^15, read_geometry's check) there. The transposed index
// math compares (o + P - shift) against S * size as unsigned, which a far row (-2^24) or a far tap
// (+2^24) makes negative as long as o + P stays below 2^24. KernelBench's conv1d and
// conv_transpose1d lengths of 131072 pass.
int64_t coordinate_limit(const Geometry& ge) { return ge.transposed ? int64_t{1} << 24 : int64_t{1} << 23; }

// The facts as expressions over the axes, and what the checks below demand of every workload as
// conditions, so that an exported kernel runs on every shape they admit (docs/export.md).
void express_conv_facts(const TaskGraph& tg, int x, int w, int y, int sp, const Geometry& ge, bool fp32,
                        int64_t kmax, DesignSpace& s) {
  const int rank = sp + 2;
  const std::string G = std::to_string(ge.groups), C = tg.dim(x, 1), OC = tg.dim(y, 1);
  const std::string H = sp == 1 ? "1" : tg.dim(x, rank - 2), W = tg.dim(x, rank - 1);
  const std::string M = paren(tg.dim(y, 0)) + (sp == 3 ? " * " + paren(tg.dim(y, 2)) : "") +
                        (sp == 1 ? "" : " * " + paren(tg.dim(y, rank - 2))) + " * " + paren(tg.dim(y, rank - 1));
  const std::string K = paren(C) + " // " + G + " * " + std::to_string(ge.kd * ge.kh * ge.kw);
  s.express("m", M);
  s.express("n", paren(OC) + " // " + G);
  s.express("k", K);
  s.express("cg", paren(C) + " // " + G);
  s.express("kmax", std::to_string(kmax));
  for (const char* flag : {"fp32", "elem_bytes", "transposed"})  // of the dtypes and the op
    s.express(flag, std::to_string(s.facts().front().at(flag)));
  s.express("tf32_ok", tf32_admitted_expr(tg.task(), fp32, K));
  s.express("tf32x3_ok", tf32x3_admitted_expr(tg.task(), fp32, K));
  s.express("bf16x3_ok", bf16x3_admitted_expr(tg.task(), fp32, K));
  if (sp == 3) s.assume({tg.dim(w, 2), "==", std::to_string(ge.kd), "the kernel's depth is a constant of the source"});
  if (sp >= 2) s.assume({tg.dim(w, rank - 2), "==", std::to_string(ge.kh), "the kernel's height is a constant of the source"});
  s.assume({tg.dim(w, rank - 1), "==", std::to_string(ge.kw), "the kernel's width is a constant of the source"});
  s.assume({paren(C) + " % " + G, "==", "0", "channels split evenly into groups"});
  s.assume({paren(OC) + " % " + G, "==", "0", "output channels split evenly into groups"});
  s.assume({K, "<=", std::to_string(kmax), "the tap table holds the largest K measured"});
  const std::string limit = std::to_string(coordinate_limit(ge));
  s.assume({H, "<", limit, "coordinates below the gather's sentinel"});
  s.assume({W, "<", limit, "coordinates below the gather's sentinel"});
  s.assume({M, "<", "2147483648", "32-bit pixel offsets"});
  if (sp == 3) {
    const std::string D = tg.dim(x, 2);
    s.assume({D, "<", limit, "coordinates below the gather's sentinel"});
    s.assume({paren(C) + " * " + paren(D) + " * " + paren(H) + " * " + paren(W), "<", "2147483648",
              "32-bit offsets into a volume"});
  } else {
    s.assume({paren(C) + " * " + paren(H) + " * " + paren(W), "<", "2147483648", "32-bit offsets into an image"});
  }
  if (s.facts().front().at("elem_bytes") == 2) s.assume({K + " % 2", "==", "0", "16-bit weights copied 4 bytes at a time"});
  if (ge.transposed) {  // output coordinates (plus padding) below the sentinel; stride times size within 32 bits
    const std::vector<std::pair<std::string, int64_t>> out = {
        {sp == 3 ? tg.dim(y, 2) : "1", sp == 3 ? ge.pd : 0}, {sp == 1 ? "1" : tg.dim(y, rank - 2), ge.ph},
        {tg.dim(y, rank - 1), ge.pw}};
    for (const auto& [size, pad] : out)
      s.assume({paren(size) + " + " + std::to_string(pad), "<", limit, "output coordinates below the gather's sentinel"});
    const std::vector<std::pair<std::string, int64_t>> in = {
        {sp == 3 ? tg.dim(x, 2) : "1", ge.sd}, {H, ge.sh}, {W, ge.sw}};
    for (const auto& [size, stride] : in)
      s.assume({paren(size) + " * " + std::to_string(stride), "<", "2147483648", "a stride's multiples of a size in 32 bits"});
  }
}

// What the graph's node makes of the conv family: 1, 2 or 3 spatial dims, transposed or not; 0 for
// another op.
int conv_spatial(const std::string& op, bool& transposed) {
  transposed = op.rfind("conv_transpose", 0) == 0;
  const std::string d = transposed ? op.substr(14) : op.rfind("conv", 0) == 0 ? op.substr(4) : "";
  return d == "1d" ? 1 : d == "2d" ? 2 : d == "3d" ? 3 : 0;
}

// The main op: the graph's only convolution or transposed convolution (and no matmul), batched
// NCHW (NCL, NCDHW) on graph inputs, its result mapped onto the output 1:1.
bool find_conv(const TaskGraph& tg, Mapping& m) {
  const Graph& g = tg.graph();
  const int o = tg.output();
  bool transposed = false;
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    const std::string& op = g.nodes[p].op;
    if (op == "linear" || op == "matmul" || op.rfind("conv", 0) == 0) {
      if (m.main >= 0 || conv_spatial(op, transposed) == 0) return false;
      m.main = static_cast<int>(p);
    }
  }
  if (m.main < 0) return false;
  const Node& main = g.nodes[static_cast<size_t>(m.main)];
  m.spatial = conv_spatial(main.op, m.geo.transposed);
  m.x = main.inputs[0];
  m.w = main.inputs[1];
  m.bias = main.inputs.size() > 2 ? main.inputs[2] : -1;
  m.t = main.outputs.front();
  m.elem = info(g, m.x).dtype;
  m.out = info(g, o).dtype;
  const int rank = m.spatial + 2;
  if (!is_float(m.elem) || info(g, m.w).dtype != m.elem || tg.input_index(m.x) < 0 || tg.input_index(m.w) < 0) return false;
  if (tg.rank(m.x) != rank || tg.rank(m.w) != rank || tg.rank(m.t) != rank || tg.rank(o) != rank) return false;
  if (m.out != DType::Float32 && m.out != m.elem) return false;
  for (size_t w = 0; w < tg.workloads(); ++w)
    if (info(tg.graph(w), m.t).shape != info(tg.graph(w), o).shape) return false;  // the tail maps y 1:1
  return true;
}

// Stride, padding, dilation, groups and the kernel's size; false where the tap table cannot hold them.
bool read_geometry(const TaskGraph& tg, Mapping& m) {
  const Node& main = tg.graph().nodes[static_cast<size_t>(m.main)];
  Geometry& ge = m.geo;
  ge.groups = main.attrs.count("groups") ? attr_int(main, "groups") : 1;
  const int sp = m.spatial, h = sp == 3 ? 1 : 0, rank = sp + 2;  // h: the height's spatial dim
  ge.sh = spatial_attr(main, "stride", sp, h, 1), ge.sw = spatial_attr(main, "stride", sp, h + 1, 1);
  ge.ph = spatial_attr(main, "padding", sp, h, 0), ge.pw = spatial_attr(main, "padding", sp, h + 1, 0);
  ge.dh = spatial_attr(main, "dilation", sp, h, 1), ge.dw = spatial_attr(main, "dilation", sp, h + 1, 1);
  const auto& ws0 = info(tg.graph(), m.w).shape;
  ge.kh = sp == 1 ? 1 : ws0[rank - 2], ge.kw = ws0[rank - 1];
  if (sp == 3) {
    ge.sd = spatial_attr(main, "stride", sp, 0, 1), ge.pd = spatial_attr(main, "padding", sp, 0, 0);
    ge.dd = spatial_attr(main, "dilation", sp, 0, 1), ge.kd = ws0[2];
    // The tap table packs conv3d's three window shifts into 32 bits (Im2col3d::pack).
    if (ge.dd * (ge.kd - 1) >= 1023 || ge.dh * (ge.kh - 1) >= 2047 || ge.dw * (ge.kw - 1) >= 2047) return false;
  }
  // A conv2d's table entry packs its two shifts into 15 bits each (Im2col::pack): here they must fit.
  if (ge.dh * (ge.kh - 1) >= 0x7fff || ge.dw * (ge.kw - 1) >= 0x7fff) return false;
  return ge.groups >= 1;
}

// The elementwise tail after the convolution, and its inputs: the conv's bias first.
bool map_tail(const TaskGraph& tg, Mapping& m) {
  const Graph& g = tg.graph();
  m.tail = elementwise_region(g, tg.output(), [&](int v) { return v == m.t || tg.input_index(v) >= 0; }, m.elem != DType::Float32);
  if (!m.tail.ok) return false;
  if (m.bias >= 0) {
    TailInput b;
    if (tg.input_index(m.bias) < 0 || tg.rank(m.bias) != 1 || !is_float(info(g, m.bias).dtype)) return false;
    b.value = m.bias;
    b.buffer = tg.task().inputs[static_cast<size_t>(tg.input_index(m.bias))].name;
    b.name = "in_" + ident(b.buffer) + "_bias";  // the conv's own bias, apart from any use in the tail
    b.kind = TailInput::PerChannel;
    b.dtype = info(g, m.bias).dtype;
    m.inputs.push_back(b);
  }
  for (int leaf : m.tail.leaves) {
    if (leaf == m.t) continue;
    TailInput in;
    if (!broadcast_input(tg, leaf, tg.output(), in)) return false;
    m.inputs.push_back(in);
  }
  return true;
}

// Whether workload w's sizes fit the kernel's index math: the weight's kernel size fixed, 32-bit
// pixel and tap offsets, coordinates below the gather's sentinel (im2col.cuh).
bool sizes_fit(const TaskGraph& tg, const Mapping& m, size_t w) {
  const Geometry& ge = m.geo;
  const int sp = m.spatial, rank = sp + 2;
  const auto &xs = info(tg.graph(w), m.x).shape, &wsh = info(tg.graph(w), m.w).shape, &ys = info(tg.graph(w), tg.output()).shape;
  if ((sp == 3 && wsh[2] != ge.kd) || (sp >= 2 && wsh[rank - 2] != ge.kh) || wsh[rank - 1] != ge.kw) return false;
  const int64_t C = xs[1], D = sp == 3 ? xs[2] : 1, H = sp == 1 ? 1 : xs[rank - 2], W = xs[rank - 1], OC = ys[1];
  const int64_t M = ys[0] * (sp == 3 ? ys[2] : 1) * (sp == 1 ? 1 : ys[rank - 2]) * ys[rank - 1],
                K = C / ge.groups * ge.kd * ge.kh * ge.kw;
  const int64_t limit = coordinate_limit(ge);
  if (C % ge.groups || OC % ge.groups || D >= limit || H >= limit || W >= limit || M >= (int64_t{1} << 31) ||
      C * D * H * W >= (int64_t{1} << 31) || K >= (int64_t{1} << 24))
    return false;
  if (ge.transposed) {  // Im2colTransposed: (o + P) below the sentinel, S * size an int
    const int64_t OD = sp == 3 ? ys[2] : 1, OH = sp == 1 ? 1 : ys[rank - 2], OW = ys[rank - 1];
    if (OD + ge.pd >= limit || OH + ge.ph >= limit || OW + ge.pw >= limit || ge.sd * D >= (int64_t{1} << 31) ||
        ge.sh * H >= (int64_t{1} << 31) || ge.sw * W >= (int64_t{1} << 31))
      return false;
  }
  return !(element_bytes(m.elem) == 2 && K % 2);  // 16-bit weights are copied 4 bytes at a time at least
}

// The facts per workload (empty where a workload does not fit); the longest K in `kmax`.
std::vector<Facts> conv_facts(const TaskGraph& tg, const Mapping& m, int64_t* kmax) {
  const Geometry& ge = m.geo;
  const int sp = m.spatial, rank = sp + 2;
  std::vector<Facts> facts;
  bool tf32 = m.elem == DType::Float32;
  for (size_t w = 0; w < tg.workloads(); ++w) {
    if (!sizes_fit(tg, m, w)) return {};
    const auto &xs = info(tg.graph(w), m.x).shape, &ys = info(tg.graph(w), tg.output()).shape;
    const int64_t C = xs[1], OC = ys[1];
    const int64_t M = ys[0] * (sp == 3 ? ys[2] : 1) * (sp == 1 ? 1 : ys[rank - 2]) * ys[rank - 1],
                  K = C / ge.groups * ge.kd * ge.kh * ge.kw;
    tf32 = tf32 && tf32_admitted(tg.task(), K);
    *kmax = std::max(*kmax, K);
    const bool fp32 = m.elem == DType::Float32;
    facts.push_back({{"m", M}, {"n", OC / ge.groups}, {"k", K}, {"cg", C / ge.groups}, {"fp32", fp32},
                     {"elem_bytes", element_bytes(m.elem)}, {"transposed", ge.transposed},
                     {"tf32x3_ok", fp32 && tf32x3_admitted(tg.task(), K)}, {"bf16x3_ok", fp32 && bf16x3_admitted(tg.task(), K)}});
  }
  for (Facts& f : facts) {
    f["kmax"] = *kmax;
    f["tf32_ok"] = tf32;
  }
  return facts;
}

}  // namespace

std::vector<std::unique_ptr<DesignSpace>> lower_conv(const TaskGraphPtr& tgp) {
  std::vector<std::unique_ptr<DesignSpace>> none;
  const TaskGraph& tg = *tgp;
  if (!tg.one_computed_output()) return none;
  Mapping m;
  if (!find_conv(tg, m) || !read_geometry(tg, m) || !map_tail(tg, m)) return none;
  int64_t kmax = 0;
  std::vector<Facts> facts = conv_facts(tg, m, &kmax);
  if (facts.empty()) return none;
  // fp32 operands always have promoted 3xTF32 (fp32-level error at any K), where the tolerance
  // leaves the faster precisions out.
  std::vector<std::unique_ptr<DesignSpace>> out;
  const int x = m.x, wt = m.w, sp = m.spatial;
  const Geometry ge = m.geo;
  const bool fp32 = m.elem == DType::Float32;
  out.push_back(std::make_unique<ConvSpace>(tgp, std::move(m), std::move(facts), kmax));
  express_conv_facts(tg, x, wt, tg.output(), sp, ge, fp32, kmax, *out.back());
  return out;
}

}  // namespace kevo::lower
