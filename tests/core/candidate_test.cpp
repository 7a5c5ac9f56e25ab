// Candidates: the bundled ones load and resolve to the right launches; every malformed plan is one precise line.
#include "core/candidate.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

namespace kevo {
namespace {

const std::string kRoot = KEVO_SOURCE_ROOT;
const std::string kData = kRoot + "/tests/data/candidates/";

const Task& task(const std::string& name) {
  static std::map<std::string, Task> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) it = loaded.emplace(name, load_task(kRoot + "/tasks/" + name + ".json")).first;
  return it->second;
}
const Task& softmax() { return task("03_softmax"); }
const Task& linear() { return task("13_linear_leaky_relu"); }
const Task& conv() { return task("14_conv2d_relu_bias"); }

// `text` with its one occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "test bug: '" << from << "' is not in the text";
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << "test bug: '" << from << "' is ambiguous";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// A valid candidate for task 03 that uses each kind of argument and a scratch buffer. The
// expected messages below count its lines and columns, so keep its layout.
const std::string kSoftmax = R"({
  "name": "softmax_test",
  "task": "softmax",
  "source": "__global__ void k(const float* x, float* y, int d, long long n, float a, double b) {}\ntemplate <int N> __global__ void __launch_bounds__(N) t(float* p) {}\n",
  "plan": {
    "buffers": {"partial": {"dtype": "float32", "shape": ["B", "(D + 1023) // 1024"]}},
    "steps": [
      {"kernel": "t<256>", "grid": ["B", 2], "block": [256], "shared_bytes": "256 * 4",
       "args": ["partial"]},
      {"kernel": "k", "grid": ["B"], "block": [256],
       "args": ["x", "y", {"int": "D"}, {"int64": "B * D"}, {"float": 1.5}, {"double": 0.25}]}
    ]
  }
})";

// Task 13: a cuBLASLt matmul and a kernel.
const std::string kLinear = R"({
  "source": "__global__ void leaky(float* y, const float* b, long long total, int n, float slope) {}\n",
  "plan": {
    "steps": [
      {"library": "cublaslt.matmul", "a": "x", "b": "W", "d": "y", "bias": "b", "transpose_b": true, "alpha": 2.0, "epilogue": "bias"},
      {"kernel": "leaky", "grid": ["(M * N + 255) // 256"], "block": [256], "args": ["y", "b", {"int64": "M * N"}, {"int": "N"}, {"float": 0.1}]}
    ]
  }
})";

// Task 14: a cuDNN convolution with bias and relu, then a kernel adding bias2.
const std::string kConv = R"J({
  "source": "__global__ void add_channel(float* y, const float* b2, long long total, int hw, int c) {}\n",
  "plan": {
    "steps": [
      {"library": "cudnn.conv2d_forward", "x": "x", "w": "weight", "y": "y", "bias": "bias", "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1, "epilogue": "relu"},
      {"kernel": "add_channel", "grid": ["(N * Co * (H - 2) * (W - 2) + 255) // 256"], "block": [256], "args": ["y", "bias2", {"int64": "N * Co * (H - 2) * (W - 2)"}, {"int": "(H - 2) * (W - 2)"}, {"int": "Co"}]}
    ]
  }
})J";

// A .cu candidate for task 03; its plan starts on line 3.
const std::string kCu = R"(// a tiny kernel
__global__ void k(const float* x, float* y) {}
/* kevo-plan {"plan": {
  "steps": [{"kernel": "k", "grid": ["B"], "block": [32], "args": ["x", "y"]}]
}} */
)";

std::string error_of(const std::string& text, const std::string& file, const Task& t) {
  try {
    parse_candidate(text, file, t);
  } catch (const InputError& e) {
    std::string line = e.what();
    EXPECT_EQ(line.find('\n'), std::string::npos) << "not one line: " << line;
    return line;
  }
  return "(no error)";
}

TEST(Candidate, CuFileLoadsAndResolvesBothWorkloads) {
  Candidate c = load_candidate(kData + "softmax.cu", softmax());
  EXPECT_EQ(c.name, "softmax_online_v1");
  EXPECT_EQ(c.source_file, kData + "softmax.cu");
  EXPECT_NE(c.source.find("__global__ void __launch_bounds__(kThreads) softmax_rows("), std::string::npos);
  EXPECT_NE(c.source.find("/* kevo-plan"), std::string::npos);  // the whole file is the source
  EXPECT_EQ(c.kernel_names(), std::vector<std::string>{"softmax_rows<256>"});

  const int64_t rows[] = {4096, 16}, cols[] = {393216, 16384};
  for (size_t w = 0; w < 2; ++w) {
    ResolvedPlan p = resolve_plan(c, softmax(), softmax().workloads[w], DeviceLimits{});
    ASSERT_EQ(p.buffers.size(), 2u);
    EXPECT_EQ(p.buffers[0].name, "x");
    EXPECT_EQ(p.buffers[0].role, ResolvedBuffer::Input);
    EXPECT_EQ(p.buffers[1].role, ResolvedBuffer::Output);
    EXPECT_EQ(p.buffers[1].shape, (Shape{rows[w], cols[w]}));
    EXPECT_EQ(p.buffers[1].bytes, rows[w] * cols[w] * 4);
    ASSERT_EQ(p.steps.size(), 1u);
    const auto& k = std::get<ResolvedKernel>(p.steps[0]);
    EXPECT_EQ(k.kernel, "softmax_rows<256>");
    EXPECT_EQ(k.grid, (std::array<unsigned, 3>{static_cast<unsigned>(rows[w]), 1, 1}));
    EXPECT_EQ(k.block, (std::array<unsigned, 3>{256, 1, 1}));
    EXPECT_EQ(k.shared_bytes, 0u);
    ASSERT_EQ(k.args.size(), 3u);
    EXPECT_EQ(k.args[0].buffer, 0);
    EXPECT_EQ(k.args[1].buffer, 1);
    EXPECT_EQ(k.args[2].kind, ArgKind::Int32);
    EXPECT_EQ(k.args[2].integer, cols[w]);
  }
}

TEST(Candidate, JsonFormReadsItsSourceFileAndMatchesTheCuForm) {
  Candidate j = load_candidate(kData + "softmax.json", softmax());
  Candidate cu = load_candidate(kData + "softmax.cu", softmax());
  EXPECT_EQ(j.name, "softmax_online_v1_json");
  EXPECT_EQ(j.source, cu.source);
  EXPECT_EQ(j.source_file, kData + "softmax.cu");
  for (const Workload& w : softmax().workloads) {
    const ResolvedPlan from_json = resolve_plan(j, softmax(), w, {}), from_cu = resolve_plan(cu, softmax(), w, {});
    const auto& a = std::get<ResolvedKernel>(from_json.steps[0]);
    const auto& b = std::get<ResolvedKernel>(from_cu.steps[0]);
    EXPECT_EQ(a.grid, b.grid);
    EXPECT_EQ(a.block, b.block);
    EXPECT_EQ(a.args.size(), b.args.size());
    EXPECT_EQ(a.args[2].integer, b.args[2].integer);
  }
}

TEST(Candidate, CuFormWithoutANameIsNamedAfterItsFile) {
  Candidate c = parse_candidate(kCu, "plans/k.cu", softmax());
  EXPECT_EQ(c.name, "k");
  EXPECT_EQ(c.source, kCu);
  EXPECT_EQ(c.source_file, "plans/k.cu");
  EXPECT_EQ(std::get<ResolvedKernel>(resolve_plan(c, softmax(), softmax().workloads[1], {}).steps[0]).grid[0], 16u);
}

TEST(Candidate, ScratchBuffersAndTypedArgumentsResolve) {
  Candidate c = parse_candidate(kSoftmax, "c.json", softmax());
  EXPECT_EQ(c.name, "softmax_test");
  EXPECT_EQ(c.source_file, "");
  EXPECT_EQ(c.kernel_names(), (std::vector<std::string>{"t<256>", "k"}));
  ResolvedPlan p = resolve_plan(c, softmax(), softmax().workloads[0], {});
  ASSERT_EQ(p.buffers.size(), 3u);
  EXPECT_EQ(p.buffer("partial"), 2);
  EXPECT_EQ(p.buffers[2].role, ResolvedBuffer::Scratch);
  EXPECT_EQ(p.buffers[2].shape, (Shape{4096, 384}));
  EXPECT_EQ(p.buffers[2].bytes, 4096 * 384 * 4);
  const auto& t = std::get<ResolvedKernel>(p.steps[0]);
  EXPECT_EQ(t.grid, (std::array<unsigned, 3>{4096, 2, 1}));
  EXPECT_EQ(t.shared_bytes, 1024u);
  EXPECT_EQ(t.args[0].buffer, 2);
  const auto& k = std::get<ResolvedKernel>(p.steps[1]);
  ASSERT_EQ(k.args.size(), 6u);
  EXPECT_EQ(k.args[3].kind, ArgKind::Int64);
  EXPECT_EQ(k.args[3].integer, 4096LL * 393216);
  EXPECT_EQ(k.args[4].kind, ArgKind::Float32);
  EXPECT_EQ(k.args[4].real, 1.5);
  EXPECT_EQ(k.args[5].kind, ArgKind::Float64);
  EXPECT_EQ(k.args[5].real, 0.25);
  EXPECT_EQ(resolve_plan(c, softmax(), softmax().workloads[1], {}).buffers[2].shape, (Shape{16, 16}));
}

TEST(Candidate, CublasLtPlanForTask13Resolves) {
  Candidate c = load_candidate(kData + "linear_leaky_relu.json", linear());
  EXPECT_EQ(c.kernel_names(), std::vector<std::string>{"add_bias_leaky_relu"});
  const int64_t m[] = {1024, 16}, k[] = {8192, 256}, n[] = {8192, 128};
  for (size_t w = 0; w < 2; ++w) {
    ResolvedPlan p = resolve_plan(c, linear(), linear().workloads[w], {});
    ASSERT_EQ(p.steps.size(), 2u);
    const auto& mm = std::get<ResolvedMatmul>(p.steps[0]);
    EXPECT_EQ(mm.m, m[w]);
    EXPECT_EQ(mm.n, n[w]);
    EXPECT_EQ(mm.k, k[w]);
    EXPECT_EQ(p.buffers[mm.a].name, "x");
    EXPECT_EQ(p.buffers[mm.b].name, "W");
    EXPECT_EQ(p.buffers[mm.d].name, "y");
    EXPECT_EQ(p.buffers[mm.bias].name, "b");
    EXPECT_TRUE(mm.call.transpose_b);
    EXPECT_FALSE(mm.call.transpose_a);
    EXPECT_EQ(mm.call.alpha, 2.0);
    EXPECT_EQ(mm.call.epilogue, Epilogue::Bias);
    EXPECT_EQ(mm.call.algo, 0);  // the heuristic's first choice unless the plan picks another
    const auto& kern = std::get<ResolvedKernel>(p.steps[1]);
    EXPECT_EQ(kern.grid[0], static_cast<unsigned>((m[w] * n[w] + 255) / 256));
    EXPECT_EQ(kern.args[2].integer, m[w] * n[w]);
    EXPECT_EQ(kern.args[3].integer, n[w]);
    EXPECT_FLOAT_EQ(static_cast<float>(kern.args[4].real), 0.1f);
  }
}

// "algo": "auto" resolves to kAutotunedAlgo on every workload: the choice is made on the GPU, per shape.
TEST(Candidate, AutotunedCublasLtAlgorithmResolvesOnEveryWorkload) {
  Candidate c = parse_candidate(replaced(kLinear, R"("alpha": 2.0)", R"("alpha": 2.0, "algo": "auto")"), "auto.json",
                                linear());
  for (const Workload& w : linear().workloads)
    EXPECT_EQ(std::get<ResolvedMatmul>(resolve_plan(c, linear(), w, {}).steps[0]).call.algo, kAutotunedAlgo);
}

// "emulation" (cuBLASLt's bf16x9 fp32 emulation) resolves where the GPU is sm_100a or sm_103a, or
// not known; on any other architecture the plan is refused in one line naming the field.
TEST(Candidate, EmulatedCublasLtMatmulResolvesOnlyOnSm100aAndSm103a) {
  const std::string text = replaced(kLinear, R"("alpha": 2.0)", R"("alpha": 2.0, "emulation": "eager")");
  Candidate c = parse_candidate(text, "emul.json", linear());
  EXPECT_EQ(std::get<MatmulStep>(c.plan.steps[0].op).emulation, Emulation::Eager);
  for (const char* arch : {"", "sm_100a", "sm_103a"}) {
    DeviceLimits on;
    on.arch = arch;
    for (const Workload& w : linear().workloads)
      EXPECT_EQ(std::get<ResolvedMatmul>(resolve_plan(c, linear(), w, on).steps[0]).call.emulation, Emulation::Eager)
          << arch;
  }
  EXPECT_EQ(std::get<MatmulStep>(parse_candidate(kLinear, "plain.json", linear()).plan.steps[0].op).emulation,
            Emulation::Off);
  const std::string performant = replaced(kLinear, R"("alpha": 2.0)", R"("alpha": 2.0, "emulation": "performant")");
  for (const char* arch : {"sm_90a", "sm_120a"}) {
    DeviceLimits on;
    on.arch = arch;
    try {
      parse_candidate(performant, "emul.json", linear(), on);
      ADD_FAILURE() << "an emulated matmul was accepted on " << arch;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("emul.json:5:7: plan.steps[0].emulation: \"performant\": cuBLASLt's bf16x9 fp32 emulation "
                            "runs on sm_100a and sm_103a only, not on ") + arch + " (use \"off\")");
    }
  }
  DeviceLimits hopper;
  hopper.arch = "sm_90a";
  const std::string off = replaced(kLinear, R"("alpha": 2.0)", R"("alpha": 2.0, "emulation": "off")");
  EXPECT_NO_THROW(parse_candidate(off, "off.json", linear(), hopper));
}

// A plan of one cuBLASLt step, `fields` its operands and flags.
std::string matmul_plan(const std::string& fields) {
  return R"({"source": "__global__ void unused() {}\n", "plan": {"steps": [{"library": "cublaslt.matmul", )" + fields +
         "}]}}";
}

// A contract of inputs a and b, output y, with these shapes (JSON arrays over the axes B, M, K, N).
Task matmul_task(const std::string& a, const std::string& b, const std::string& y, const std::string& body) {
  return parse_task(R"({"name": "mm", "axes": {"B": {"type": "var"}, "M": {"type": "var"}, "K": {"type": "var"},
    "N": {"type": "var"}}, "inputs": {"a": {"shape": )" + a + R"(, "dtype": "float32"}, "b": {"shape": )" + b +
                        R"(, "dtype": "float32"}}, "outputs": {"y": {"shape": )" + y + R"(, "dtype": "float32"}},
    "reference": "import torch\ndef run(a, b):\n    return )" + body + R"(\n",
    "workloads": [{"B": 6, "M": 40, "K": 24, "N": 72}]})",
                    "mm.json");
}

// torch.bmm(q, k^T): a strided batch of B products, each operand a matrix apart, d m*n apart (the
// resolver's word for what cuBLASLt runs). A matrix operand is shared by every product (stride 0);
// an operand batched over other dims is refused in one line.
TEST(Candidate, BatchedCublasLtMatmulResolvesToAStridedBatch) {
  const Task bmm = load_task(kRoot + "/tests/data/tasks/bmm_transposed_b_bias_relu.json");
  Candidate c = parse_candidate(
      matmul_plan(R"("a": "q", "b": "k", "d": "y", "bias": "bias", "transpose_b": true, "epilogue": "bias_relu")"),
      "bmm.json", bmm);
  const int64_t batch[] = {16, 3}, s[] = {256, 5}, t[] = {384, 7}, d[] = {64, 16};
  for (size_t w = 0; w < 2; ++w) {
    const ResolvedPlan plan = resolve_plan(c, bmm, bmm.workloads[w], {});
    const auto& mm = std::get<ResolvedMatmul>(plan.steps[0]);
    EXPECT_EQ(mm.batch, batch[w]);
    EXPECT_EQ(mm.m, s[w]);
    EXPECT_EQ(mm.n, t[w]);
    EXPECT_EQ(mm.k, d[w]);
    EXPECT_EQ(mm.stride_a, s[w] * d[w]);
    EXPECT_EQ(mm.stride_b, t[w] * d[w]);
  }
  // a^T of a batch times one matrix: the matrix is every product's b.
  const Task shared = matmul_task(R"(["B", "K", "M"])", R"(["K", "N"])", R"(["B", "M", "N"])",
                                  "torch.matmul(a.transpose(1, 2), b)");
  const ResolvedPlan shared_plan =
      resolve_plan(parse_candidate(matmul_plan(R"("a": "a", "b": "b", "d": "y", "transpose_a": true)"), "t.json", shared),
                   shared, shared.workloads[0], {});
  const auto& mm = std::get<ResolvedMatmul>(shared_plan.steps[0]);
  EXPECT_EQ(mm.batch, 6);
  EXPECT_EQ(mm.m, 40);
  EXPECT_EQ(mm.k, 24);
  EXPECT_EQ(mm.stride_a, 40 * 24);
  EXPECT_EQ(mm.stride_b, 0);
  // An untransposed batch times a matrix stays a batch of rows: one product of 6 * 40 rows.
  const Task rows = matmul_task(R"(["B", "M", "K"])", R"(["K", "N"])", R"(["B", "M", "N"])", "torch.matmul(a, b)");
  const ResolvedPlan rows_plan = resolve_plan(parse_candidate(matmul_plan(R"("a": "a", "b": "b", "d": "y")"), "r.json", rows),
                                              rows, rows.workloads[0], {});
  const auto& r = std::get<ResolvedMatmul>(rows_plan.steps[0]);
  EXPECT_EQ(r.batch, 1);
  EXPECT_EQ(r.m, 6 * 40);
  const Task other = matmul_task(R"(["B", "M", "K"])", R"(["N", "K", "N"])", R"(["B", "M", "N"])",
                                 "torch.matmul(a, b.sum(0))");
  try {
    parse_candidate(matmul_plan(R"("a": "a", "b": "b", "d": "y")"), "o.json", other);
    ADD_FAILURE() << "operands batched over different dims were accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "o.json:1:64: plan.steps[0]: a strided batch of products [72]: 'a' is [6, 40, 24], neither a matrix "
              "nor a batch of those dims (workload 0)");
  }
}

TEST(Candidate, CudnnConvPlanForTask14Resolves) {
  Candidate c = parse_candidate(kConv, "conv.json", conv());
  ResolvedPlan p = resolve_plan(c, conv(), conv().workloads[1], {});
  const auto& cv = std::get<ResolvedConv2d>(p.steps[0]);
  EXPECT_EQ(p.buffers[cv.x].shape, (Shape{2, 8, 16, 16}));
  EXPECT_EQ(p.buffers[cv.w].shape, (Shape{16, 8, 3, 3}));
  EXPECT_EQ(p.buffers[cv.y].shape, (Shape{2, 16, 14, 14}));
  EXPECT_EQ(p.buffers[cv.bias].name, "bias");
  EXPECT_EQ(cv.call.epilogue, Epilogue::Relu);
  EXPECT_EQ(std::get<ResolvedKernel>(p.steps[1]).args[3].integer, 14 * 14);
}

TEST(Candidate, DeviceLimitsFromTheRunnerApply) {
  Candidate c = parse_candidate(kSoftmax, "c.json", softmax());
  DeviceLimits small;
  small.max_shared_bytes = 512;
  try {
    resolve_plan(c, softmax(), softmax().workloads[1], small);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "c.json:8:78: plan.steps[0].shared_bytes: '256 * 4' = 1024 is over the device's limit of 512 bytes of "
              "dynamic shared memory per block (workload 1)");
  }
}

TEST(Candidate, AWorkloadOutsideTheTaskIsNamedByItsAxes) {
  Candidate c = parse_candidate(kSoftmax, "c.json", softmax());
  Workload held_back;
  held_back.axes = {{"B", 70000}, {"D", 8}};
  ResolvedPlan p = resolve_plan(c, softmax(), held_back, {});
  EXPECT_EQ(std::get<ResolvedKernel>(p.steps[1]).grid[0], 70000u);
  Workload too_wide;
  too_wide.axes = {{"B", 8}, {"D", 3000000000}};
  try {
    resolve_plan(c, softmax(), too_wide, {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "c.json:11:35: plan.steps[1].args[2].int: 'D' = 3000000000 does not fit a 32-bit int (use {\"int64\": ...}) "
        "(workload B=8, D=3000000000)");
  }
}

TEST(Candidate, MissingFileIsAnInputError) {
  try {
    load_candidate(kData + "absent.cu", softmax());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), kData + "absent.cu: cannot read the file");
  }
}

TEST(Candidate, KernelNamesMayBeQualifiedTemplatesBehindAttributes) {
  std::string source = R"(namespace ns {
template <typename T>
__global__ void __launch_bounds__(128, 2) scale(T* p) {}
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) plain(float* p) {}
)";
  std::string text = R"({"source": )" + nlohmann::json(source).dump() + R"(, "plan": {"steps": [
    {"kernel": "ns::scale<float>", "grid": ["B"], "block": [128], "args": ["y"]},
    {"kernel": " ns :: scale < double > ", "grid": [1], "block": [32], "args": ["y"]},
    {"kernel": "plain", "grid": [1], "block": [32], "args": ["y"]},
    {"kernel": "ns::scale<float>", "grid": [1], "block": [32], "args": ["y"]}]}})";
  Candidate c = parse_candidate(text, "q.json", softmax());
  EXPECT_EQ(c.kernel_names(), (std::vector<std::string>{"ns::scale<float>", " ns :: scale < double > ", "plain"}));
}

// Whatever a user or a policy writes, loading fails with an InputError or succeeds: no crash and
// no other exception. Every prefix of each valid candidate is a malformed one.
TEST(Candidate, EveryTruncationIsAnInputErrorOrLoads) {
  for (const auto& [text, file, t] : {std::tuple{kSoftmax, "c.json", &softmax()},
                                      {kCu, "k.cu", &softmax()},
                                      {kLinear, "l.json", &linear()},
                                      {kConv, "v.json", &conv()}}) {
    for (size_t n = 0; n <= text.size(); ++n) {
      try {
        parse_candidate(text.substr(0, n), file, *t);
      } catch (const InputError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << file << " cut at " << n << ": " << e.what();
      }
    }
  }
}

struct Malformed {
  const char* what;
  const Task& (*task)();
  std::string file;
  std::string text;
  std::string expected;  // the whole line
};

class MalformedCandidate : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedCandidate, GivesOneLineWithPlaceAndReason) {
  const Malformed& m = GetParam();
  std::string got = error_of(m.text, m.file, m.task());
  // nlohmann-json words its syntax errors differently across versions: the place and "invalid JSON" are ours.
  if (m.expected.find("invalid JSON: syntax error") != std::string::npos)
    EXPECT_EQ(got.substr(0, got.find(" syntax error")), m.expected.substr(0, m.expected.find(" syntax error")));
  else
    EXPECT_EQ(got, m.expected);
}

Malformed sm(const char* what, const std::string& from, const std::string& to, const std::string& expected) {
  return {what, softmax, "c.json", replaced(kSoftmax, from, to), expected};
}
Malformed lin(const char* what, const std::string& from, const std::string& to, const std::string& expected) {
  return {what, linear, "l.json", replaced(kLinear, from, to), expected};
}
Malformed cv(const char* what, const std::string& from, const std::string& to, const std::string& expected) {
  return {what, conv, "v.json", replaced(kConv, from, to), expected};
}
Malformed cu(const char* what, const std::string& from, const std::string& to, const std::string& expected) {
  return {what, softmax, "k.cu", replaced(kCu, from, to), expected};
}

std::vector<Malformed> malformed_cases() {
  std::string many_args = "[";
  for (int i = 0; i < 4096; ++i) many_args += std::string(i ? ", " : "") + "\"partial\"";
  many_args += "]";
  return {
      // buffers and axes
      sm("unknown buffer", R"("args": ["partial"])", R"("args": ["partia"])",
         "c.json:9:17: plan.steps[0].args[0]: unknown buffer 'partia' (known: x, y, partial)"),
      sm("unknown axis in a grid", R"("grid": ["B"], "block": [256],)", R"("grid": ["Q"], "block": [256],)",
         "c.json:10:32: plan.steps[1].grid[0]: unknown axis 'Q' (the task's axes: B, D; and num_sms, the GPU's SM count)"),
      sm("unknown axis in a scratch shape", R"("(D + 1023) // 1024")", R"("(E + 1023) // 1024")",
         "c.json:6:64: plan.buffers.partial.shape[1]: unknown axis 'E' (the task's axes: B, D; and num_sms, the GPU's SM count)"),
      sm("unknown axis in an argument", R"({"int64": "B * D"})", R"({"int64": "B * DD"})",
         "c.json:11:51: plan.steps[1].args[3].int64: unknown axis 'DD' (the task's axes: B, D; and num_sms, the GPU's SM count)"),
      sm("scratch shadows an input", R"("buffers": {"partial")", R"("buffers": {"x")",
         "c.json:6:17: plan.buffers.x: the scratch buffer 'x' shadows the task's input"),
      sm("scratch declared twice",
         R"("buffers": {"partial": {"dtype": "float32", "shape": ["B", "(D + 1023) // 1024"]}},)",
         R"("buffers": {"partial": {"dtype": "float32", "shape": ["B"]}, "partial": {"dtype": "float32", "shape": ["B"]}},)",
         "c.json:6:66: plan.buffers.partial: the buffer 'partial' is declared twice"),
      sm("scratch name not an identifier", R"("buffers": {"partial")", R"("buffers": {"part-ial")",
         "c.json:6:17: plan.buffers.part-ial: 'part-ial' is not an identifier"),
      sm("scratch dtype unknown", R"("dtype": "float32")", R"("dtype": "float8")",
         "c.json:6:38: plan.buffers.partial.dtype: unsupported dtype 'float8' (supported: float32,"
         " float64, float16, bfloat16, int64, int32, bool)"),
      sm("scratch size zero in one workload", R"("(D + 1023) // 1024")", R"("(D - 16384) // 1024")",
         "c.json:6:64: plan.buffers.partial.shape[1]: '(D - 16384) // 1024' = 0: sizes must be positive"
         " (workload 1)"),
      sm("scratch size negative literal", R"("shape": ["B", "(D + 1023) // 1024"])", R"("shape": ["B", -3])",
         "c.json:6:64: plan.buffers.partial.shape[1]: -3: sizes must be positive (workload 0)"),
      // launch geometry
      sm("zero grid in workload 1", R"("grid": ["B"], "block": [256],)", R"("grid": ["B - 16"], "block": [256],)",
         "c.json:10:32: plan.steps[1].grid[0]: 'B - 16' = 0: a grid needs at least one block in each"
         " dimension (workload 1)"),
      sm("block dimension over the limit", R"("grid": ["B"], "block": [256],)", R"("grid": ["B"], "block": [2048],)",
         "c.json:10:48: plan.steps[1].block[0]: 2048 is over the device's limit of 1024 for block"
         " dimension 0 (workload 0)"),
      sm("block z over the limit", R"("grid": ["B"], "block": [256],)", R"("grid": ["B"], "block": [1, 1, 128],)",
         "c.json:10:54: plan.steps[1].block[2]: 128 is over the device's limit of 64 for block"
         " dimension 2 (workload 0)"),
      sm("too many threads per block", R"("grid": ["B"], "block": [256],)", R"("grid": ["B"], "block": [64, 32],)",
         "c.json:10:48: plan.steps[1].block: a block of 2048 threads is over the device's limit of 1024"
         " (workload 0)"),
      sm("grid y over the limit", R"("grid": ["B", 2])", R"("grid": ["B", "D"])",
         "c.json:8:42: plan.steps[0].grid[1]: 'D' = 393216 is over the device's limit of 65535 for grid"
         " dimension 1 (workload 0)"),
      sm("zero block", R"("grid": ["B"], "block": [256],)", R"("grid": ["B"], "block": [0],)",
         "c.json:10:48: plan.steps[1].block[0]: 0: a block needs at least one thread in each dimension"
         " (workload 0)"),
      sm("shared memory over the limit", R"("shared_bytes": "256 * 4")", R"("shared_bytes": "D")",
         "c.json:8:78: plan.steps[0].shared_bytes: 'D' = 393216 is over the device's limit of 232448"
         " bytes of dynamic shared memory per block (workload 0)"),
      sm("negative shared memory", R"("shared_bytes": "256 * 4")", R"("shared_bytes": -4)",
         "c.json:8:78: plan.steps[0].shared_bytes: -4: a byte count cannot be negative (workload 0)"),
      sm("empty grid", R"("grid": ["B", 2])", R"("grid": [])",
         "c.json:8:36: plan.steps[0].grid: must be an array of 1 to 3 sizes"),
      sm("four grid dims", R"("grid": ["B", 2])", R"("grid": ["B", 2, 1, 1])",
         "c.json:8:36: plan.steps[0].grid: must be an array of 1 to 3 sizes"),
      sm("grid not an array", R"("grid": ["B", 2])", R"("grid": "B")",
         "c.json:8:36: plan.steps[0].grid: must be an array of 1 to 3 sizes"),
      sm("fractional block", R"("grid": ["B"], "block": [256],)", R"("grid": ["B"], "block": [256.5],)",
         "c.json:10:48: plan.steps[1].block[0]: must be an axis expression (a string) or an integer,"
         " got 256.5"),
      sm("boolean block", R"("grid": ["B"], "block": [256],)", R"("grid": ["B"], "block": [true],)",
         "c.json:10:48: plan.steps[1].block[0]: must be an axis expression (a string) or an integer,"
         " got a boolean"),
      sm("bad expression", R"("grid": ["B", 2])", R"("grid": ["B +", 2])",
         "c.json:8:37: plan.steps[0].grid[0]: bad expression in 'B +' at offset 3: expression ends early"),
      // kernels
      sm("kernel not in the source", R"("kernel": "t<256>")", R"("kernel": "u<256>")",
         "c.json:8:18: plan.steps[0].kernel: the source defines no __global__ function 'u' (it defines:"
         " k, t)"),
      {"kernel named only in a comment", softmax, "c.json",
       replaced(replaced(kSoftmax, R"(\ntemplate <int N>)", R"(\n// __global__ void u(float* p) {}\ntemplate <int N>)"),
                R"("kernel": "t<256>")", R"("kernel": "u<256>")"),
       "c.json:8:18: plan.steps[0].kernel: the source defines no __global__ function 'u' (it defines:"
       " k, t)"},
      sm("kernel name malformed", R"("kernel": "t<256>")", R"("kernel": "t<256")",
         "c.json:8:18: plan.steps[0].kernel: 't<256' is not a kernel name or a template instantiation"
         " such as k<256, 4>"),
      // arguments
      sm("bare number argument", R"({"float": 1.5})", "1.5",
         "c.json:11:61: plan.steps[1].args[4]: give scalar arguments a type: {\"int\": ...},"
         " {\"int64\": ...}, {\"float\": ...} or {\"double\": ...}"),
      sm("unknown scalar type", R"({"float": 1.5})", R"({"half": 1.5})",
         "c.json:11:62: plan.steps[1].args[4].half: unknown field 'half' (expected one of: int, int64,"
         " float, double, tensor_map)"),
      sm("two scalar types", R"({"float": 1.5})", R"({"float": 1.5, "double": 1.5})",
         "c.json:11:61: plan.steps[1].args[4]: a typed argument has exactly one key: int, int64, float, double"
         " or tensor_map"),
      sm("float out of range", R"({"float": 1.5})", R"({"float": 1e39})",
         "c.json:11:71: plan.steps[1].args[4].float: 1e+39 does not fit a float32 (use {\"double\": ...})"),
      sm("float given a string", R"({"float": 1.5})", R"({"float": "1.5"})",
         "c.json:11:71: plan.steps[1].args[4].float: must be a number, got a string"),
      sm("int overflows 32 bits", R"({"int": "D"})", R"({"int": "B * D * 2"})",
         "c.json:11:35: plan.steps[1].args[2].int: 'B * D * 2' = 3221225472 does not fit a 32-bit int"
         " (use {\"int64\": ...}) (workload 0)"),
      sm("expression overflows 64 bits", R"({"int64": "B * D"})", R"({"int64": "B * D * 100000000000"})",
         "c.json:11:51: plan.steps[1].args[3].int64: 'B * D * 100000000000' overflows 64 bits (workload 0)"),
      sm("too many arguments", R"("args": ["partial"])", "\"args\": " + many_args,
         "c.json:9:16: plan.steps[0].args: 4096 arguments; a kernel takes at most 4095"),
      sm("argument of the wrong type", R"("args": ["partial"])", R"("args": [["partial"]])",
         "c.json:9:17: plan.steps[0].args[0]: must be a buffer name or a typed scalar such as {\"int\":"
         " \"D\"}, got an array"),
      // writes
      sm("output never written", R"("args": ["x", "y",)", R"("args": ["x", "x",)",
         "c.json:7:14: plan.steps: no step writes the task's output 'y' (pass it to a kernel or make it"
         " a library step's output)"),
      sm("input written by a library",
         R"({"kernel": "t<256>", "grid": ["B", 2], "block": [256], "shared_bytes": "256 * 4",)",
         R"({"library": "cublaslt.matmul", "a": "y", "b": "y", "d": "x"}, {"kernel": "t<256>", "grid": ["B", 2], "block": [256], "shared_bytes": "256 * 4",)",
         "c.json:8:63: plan.steps[0].d: 'x' is an input of the task; no step may write it"),
      // document structure
      sm("bad JSON", R"("task": "softmax",)", R"("task": "softmax")",
         "c.json:4:10: invalid JSON: syntax error while parsing object - unexpected string literal; expected '}'"),
      sm("unknown top-level field", R"("name": "softmax_test")", R"("nmae": "softmax_test")",
         "c.json:2:3: nmae: unknown field 'nmae' (expected one of: name, plan, task, source, source_file)"),
      sm("unknown step field", R"("shared_bytes": "256 * 4")", R"("shared_byte": "256 * 4")",
         "c.json:8:62: plan.steps[0].shared_byte: unknown field 'shared_byte' (expected one of: kernel,"
         " grid, block, shared_bytes, args)"),
      sm("field given twice", R"("task": "softmax",)", R"("task": "softmax", "task": "softmax",)",
         "c.json:3:22: task: the field 'task' is given twice"),
      sm("wrong task", R"("task": "softmax")", R"("task": "softmax_rows")",
         "c.json:3:11: task: the candidate is for task 'softmax_rows' but the task is 'softmax'"),
      {"empty steps", softmax, "c.json",
       kSoftmax.substr(0, kSoftmax.find(R"("steps": [)") + 10) + kSoftmax.substr(kSoftmax.find("    ]\n  }")),
       "c.json:7:14: plan.steps: a plan needs at least one step"},
      sm("step without kernel or library", R"({"kernel": "k", )", R"({"kernal": "k", )",
         "c.json:10:7: plan.steps[1]: a step needs 'kernel' (a launch) or 'library' (a library call)"),
      sm("step with kernel and library", R"({"kernel": "k", )", R"({"kernel": "k", "library": "cublaslt.matmul", )",
         "c.json:10:7: plan.steps[1]: a step is a 'kernel' or a 'library' call, not both"),
      sm("unknown library", R"({"kernel": "k", "grid": ["B"], "block": [256],)",
         R"({"library": "cublas.gemm", "grid": ["B"], "block": [256],)",
         "c.json:10:19: plan.steps[1].library: unknown library 'cublas.gemm' (known: cublaslt.matmul,"
         " cudnn.conv2d_forward)"),
      sm("missing source",
         R"(  "source": "__global__ void k(const float* x, float* y, int d, long long n, float a, double b) {}\ntemplate <int N> __global__ void __launch_bounds__(N) t(float* p) {}\n",
)",
         "", "c.json:1:1: missing 'source' (the CUDA C++ text) or 'source_file' (a path)"),
      sm("empty source",
         R"("source": "__global__ void k(const float* x, float* y, int d, long long n, float a, double b) {}\ntemplate <int N> __global__ void __launch_bounds__(N) t(float* p) {}\n")",
         R"("source": " \n")", "c.json:4:13: source: the source is empty"),
      sm("source and source_file", R"("task": "softmax",)", R"("task": "softmax", "source_file": "softmax.cu",)",
         "c.json:3:22: source_file: give 'source' or 'source_file', not both"),
      {"source_file unreadable", softmax, kData + "c.json",
       replaced(
           kSoftmax,
           R"("source": "__global__ void k(const float* x, float* y, int d, long long n, float a, double b) {}\ntemplate <int N> __global__ void __launch_bounds__(N) t(float* p) {}\n")",
           R"("source_file": "absent.cu")"),
       kData + "c.json:4:18: source_file: cannot read 'absent.cu' (looked at " + kData + "absent.cu)"},
      // library steps
      lin("inner dims differ in workload 1", R"("transpose_b": true, )", "",
          "l.json:5:7: plan.steps[0]: op(a) = x is [16, 256] but op(b) = W is [128, 256]: the inner dims"
          " differ (workload 1)"),
      lin("bias of the wrong shape", R"("bias": "b")", R"("bias": "W")",
          "l.json:5:7: plan.steps[0]: the bias 'W' is [8192, 8192] but must be [8192] (workload 0)"),
      lin("bias epilogue without a bias", R"("bias": "b", )", "",
          "l.json:5:115: plan.steps[0].epilogue: epilogue 'bias' needs a 'bias' buffer"),
      lin("bias without a bias epilogue", R"("epilogue": "bias")", R"("epilogue": "relu")",
          "l.json:5:76: plan.steps[0].bias: epilogue 'relu' adds no bias (use bias, bias_relu or bias_gelu)"),
      lin("unknown epilogue", R"("epilogue": "bias")", R"("epilogue": "silu")",
          "l.json:5:128: plan.steps[0].epilogue: unknown epilogue 'silu' (expected none, relu, gelu,"
          " bias, bias_relu, bias_gelu)"),
      lin("output aliases an operand", R"("a": "x")", R"("a": "y")",
          "l.json:5:63: plan.steps[0].d: 'y' is both an operand and the output of this step"),
      lin("operand not a matrix", R"("a": "x")", R"("a": "b")",
          "l.json:5:7: plan.steps[0]: cublaslt.matmul takes matrices; 'b' is [8192] (workload 0)"),
      lin("alpha as a string", R"("alpha": 2.0)", R"("alpha": "2")",
          "l.json:5:111: plan.steps[0].alpha: must be a number, got a string"),
      lin("unknown matmul field", R"("alpha": 2.0)", R"("beta": 2.0)",
          "l.json:5:102: plan.steps[0].beta: unknown field 'beta' (expected one of: library, a, b, d,"
          " bias, transpose_a, transpose_b, alpha, epilogue, algo, emulation)"),
      lin("emulation misspelt", R"("alpha": 2.0)", R"("alpha": 2.0, "emulation": "Eager")",
          "l.json:5:129: plan.steps[0].emulation: must be \"off\", or cuBLASLt's bf16x9 fp32 emulation with cuBLAS's"
          " strategy \"performant\" or \"eager\" (sm_100a and sm_103a only); got \"Eager\""),
      lin("emulation as a boolean", R"("alpha": 2.0)", R"("alpha": 2.0, "emulation": true)",
          "l.json:5:129: plan.steps[0].emulation: must be \"off\", or cuBLASLt's bf16x9 fp32 emulation with cuBLAS's"
          " strategy \"performant\" or \"eager\" (sm_100a and sm_103a only); got true"),
      lin("cuBLASLt algorithm from the heuristic list", R"("alpha": 2.0)", R"("alpha": 2.0, "algo": 3)", "(no error)"),
      lin("autotuned cuBLASLt algorithm", R"("alpha": 2.0)", R"("alpha": 2.0, "algo": "auto")", "(no error)"),
      // The knob's -1 is spelled "auto" in a plan; -1 itself is not a plan value.
      lin("negative cuBLASLt algorithm", R"("alpha": 2.0)", R"("alpha": 2.0, "algo": -1)",
          "l.json:5:124: plan.steps[0].algo: must be a non-negative integer, an index into cuBLASLt's heuristic"
          " list (0: its first choice), or \"auto\" (the fastest of its first 8, timed at first use); got -1"),
      lin("fractional cuBLASLt algorithm", R"("alpha": 2.0)", R"("alpha": 2.0, "algo": 1.5)",
          "l.json:5:124: plan.steps[0].algo: must be a non-negative integer, an index into cuBLASLt's heuristic"
          " list (0: its first choice), or \"auto\" (the fastest of its first 8, timed at first use); got 1.5"),
      lin("cuBLASLt algorithm as a string", R"("alpha": 2.0)", R"("alpha": 2.0, "algo": "1")",
          "l.json:5:124: plan.steps[0].algo: must be a non-negative integer, an index into cuBLASLt's heuristic"
          " list (0: its first choice), or \"auto\" (the fastest of its first 8, timed at first use); got \"1\""),
      lin("cuBLASLt algorithm misspelt", R"("alpha": 2.0)", R"("alpha": 2.0, "algo": "Auto")",
          "l.json:5:124: plan.steps[0].algo: must be a non-negative integer, an index into cuBLASLt's heuristic"
          " list (0: its first choice), or \"auto\" (the fastest of its first 8, timed at first use); got \"Auto\""),
      cv("conv output shape differs", R"("padding": [0, 0])", R"("padding": [1, 1])",
         "v.json:5:7: plan.steps[0]: 'y' is [128, 128, 126, 126] but the convolution gives [128, 128,"
         " 128, 128] (workload 0)"),
      cv("conv epilogue not supported", R"("epilogue": "relu")", R"("epilogue": "gelu")",
         "v.json:5:176: plan.steps[0].epilogue: unknown epilogue 'gelu' (expected none, relu)"),
      cv("conv stride zero", R"("stride": [1, 1])", R"("stride": [0, 1])",
         "v.json:5:105: plan.steps[0].stride[0]: must be an integer from 1 to 2147483647, got 0"),
      cv("conv groups do not fit", R"("groups": 1)", R"("groups": 2)",
         "v.json:5:7: plan.steps[0]: 'weight' [128, 64, 3, 3] does not fit 'x' [128, 64, 128, 128] with"
         " groups=2: need w[1] * groups == x[1] and w[0] % groups == 0 (workload 0)"),
      // .cu files
      cu("no plan comment", "/* kevo-plan", "/* plan",
         "k.cu:1:1: no /* kevo-plan ... */ comment: a .cu candidate carries its launch plan in one"),
      cu("two plan comments", "// a tiny kernel", "/* kevo-plan {} */",
         "k.cu:3:1: a second kevo-plan comment; a .cu candidate has exactly one"),
      cu("plan comment only mentioned in a line comment", "// a tiny kernel", "// see /* kevo-plan */", "(no error)"),
      cu("error inside the embedded plan", R"("block": [32])", R"("block": [32], "blok": 1)",
         "k.cu:4:59: plan.steps[0].blok: unknown field 'blok' (expected one of: kernel, grid, block,"
         " shared_bytes, args)"),
      cu("error on the embedded plan's first line", R"({"plan": {)", R"({"plan": {"buffers": 3,)",
         "k.cu:3:35: plan.buffers: must be an object, got a number"),
      cu("bad JSON in the embedded plan", R"(}} */)", R"(} */)",
         "k.cu:5:3: invalid JSON: syntax error while parsing object - unexpected end of input; expected '}'"),
      cu("plan comment never closed", "}} */", "}}", "k.cu:3:1: the kevo-plan comment is never closed"),
      cu("an empty comment before a tag is not a plan", "/* kevo-plan", "/**/kevo-plan /* nothing",
         "k.cu:1:1: no /* kevo-plan ... */ comment: a .cu candidate carries its launch plan in one"),
      cu("source field in a .cu plan", R"({"plan": {)", R"({"source": "", "plan": {)",
         "k.cu:3:15: source: unknown field 'source' (expected one of: name, plan, task)"),
      {"no code besides the plan", softmax, "k.cu", "/* kevo-plan {\"plan\": {\"steps\": []}} */\n",
       "k.cu:1:14: the file holds no code besides its plan"},
  };
}

INSTANTIATE_TEST_SUITE_P(Plans, MalformedCandidate, ::testing::ValuesIn(malformed_cases()),
                         [](const ::testing::TestParamInfo<Malformed>& info) {
                           std::string name;
                           for (char c : std::string(info.param.what))
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace kevo
