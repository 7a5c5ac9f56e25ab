// Exported headers as a user's build sees them: the bundled candidates and a rendered genome of
// every design space of every task compile with nvcc, several tasks' headers in one program and
// in two translation units; the launcher accepts only the validated shapes (checked by a compiled
// program, run here since the guard answers before any CUDA call); the source's extern "C",
// macros and #includes do not leak; the provenance reads as given; the runtime they carry is
// src/runtime/kevo_export/'s.
#include "store/export.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/error.h"
#include "core/task.h"
#include "store/export_runtime.h"
#include "tests/store/exported_headers.h"

namespace kevo::store {
namespace {

using namespace testing;

TEST(Export, BundledCandidatesAndARenderedGenomeOfEverySpaceCompileWithNvcc) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  std::vector<Task> tasks;
  int spaces = 0;
  std::vector<Exported> all = export_all(tasks, &spaces);
  ASSERT_GE(spaces, static_cast<int>(tasks.size())) << "every task has a space";
  std::vector<std::vector<const Exported*>> programs = rounds(all);
  for (size_t r = 0; r < programs.size(); ++r) {
    ASSERT_GE(programs[r].size(), 2u) << "each program holds several tasks' headers";
    compile_program("round" + std::to_string(r), programs[r], r == 0);
  }
  std::printf("compiled %zu exported headers (%d rendered genomes, 2 bundled candidates) in %zu nvcc programs\n",
              all.size(), spaces, programs.size());
}

// The runtime an exported header carries is src/runtime/kevo_export/'s headers (which the worker's
// library steps compile too), from their "// ---- kevo export runtime" line, with the planners
// inlined verbatim: the header ships the planning the search measured. Each block is one guarded
// unit, ending with the #endif that names its guard (what tests/search/replay_golden.sh masks).
TEST(Export, TheRuntimeBlocksAreTheRuntimeHeadersWithTheirPlannersInlined) {
  auto file = [](const std::string& name) {
    std::ifstream in(kRoot + "src/runtime/kevo_export/" + name);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  auto from_marker = [](const std::string& text, const std::string& marker) {
    const size_t at = text.find("\n" + marker);
    return at == std::string::npos ? std::string() : text.substr(at + 1);
  };
  EXPECT_EQ(export_runtime_block("runtime.h"), from_marker(file("runtime.h"), "// ---- kevo export runtime"));
  const std::map<std::string, std::pair<std::string, std::string>> libraries = {
      {"cublaslt.h", {"cublaslt_plan.h", "KEVO_EXPORT_CUBLASLT_V6"}}, {"cudnn.h", {"cudnn_plan.h", "KEVO_EXPORT_CUDNN_V2"}}};
  for (const auto& [name, planner_and_guard] : libraries) {
    const std::string& block = export_runtime_block(name);
    const std::string planner = from_marker(file(planner_and_guard.first), "// ---- ");
    ASSERT_FALSE(planner.empty()) << planner_and_guard.first;
    EXPECT_NE(block.find(planner), std::string::npos) << name << " does not carry " << planner_and_guard.first;
    const std::string include = "#include \"" + planner_and_guard.first + "\"\n";
    std::string expected = from_marker(file(name), "// ---- kevo export runtime");
    ASSERT_NE(expected.find(include), std::string::npos) << name;
    expected.replace(expected.find(include), include.size(), planner);
    EXPECT_EQ(block, expected) << name;
    EXPECT_EQ(block.find("#include"), std::string::npos) << name << " must need no file of kevo's";
    const std::string endif = "#endif  // " + planner_and_guard.second + "\n";
    EXPECT_EQ(block.find("#endif  // KEVO_EXPORT_"), block.size() - endif.size()) << name << ": one guarded unit";
    EXPECT_EQ(block.rfind("// ---- kevo export runtime", 0), 0u) << name;
  }
  EXPECT_THROW(export_runtime_block("cublaslt_plan.h"), std::logic_error);
}

// A relu candidate with a scratch buffer sized by a floor division, in two steps.
const char* kTwoStepRelu = R"src(/* kevo-plan
{
  "name": "relu_two_step",
  "plan": {
    "buffers": {"tmp": {"dtype": "float32", "shape": ["B", "(D + 1023) // 1024", 1024]}},
    "steps": [
      {"kernel": "copy_in", "grid": ["B * ((D + 1023) // 1024)"], "block": [1024],
       "args": ["x", "tmp", {"int64": "B * D"}, {"int": "D"}, {"int": "(D + 1023) // 1024"}]},
      {"kernel": "relu_out", "grid": ["B * ((D + 1023) // 1024)"], "block": [1024],
       "args": ["tmp", "y", {"int": "D"}, {"int": "(D + 1023) // 1024"}, {"float": 0.0}]}
    ]
  }
}
*/
__global__ void copy_in(const float* x, float* tmp, long long n, int d, int chunks) {
  const long long row = blockIdx.x / chunks, col = (blockIdx.x % chunks) * 1024LL + threadIdx.x;
  if (col < d) tmp[blockIdx.x * 1024LL + threadIdx.x] = x[row * d + col];
}
__global__ void relu_out(const float* tmp, float* y, int d, int chunks, float floor) {
  const long long row = blockIdx.x / chunks, col = (blockIdx.x % chunks) * 1024LL + threadIdx.x;
  if (col < d) y[row * d + col] = fmaxf(tmp[blockIdx.x * 1024LL + threadIdx.x], floor);
}
)src";

TEST(Export, TheCompiledLauncherRejectsShapesThatWereNotValidated) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  Task relu = load_task(kRoot + "tasks/01_relu.json");
  Candidate c = parse_candidate(kTwoStepRelu, "relu_two_step.cu", relu);
  ExportProvenance p = provenance(relu, "relu_two_step");
  p.validated_workloads = {1};  // B=16, D=16384 only
  const std::string header = export_header(relu, c, p);
  const Workload& w0 = relu.workloads[0];
  const Workload& w1 = relu.workloads[1];
  const int64_t b1 = w1.axes.at("B"), d1 = w1.axes.at("D");
  const int64_t expected_bytes = (b1 * ((d1 + 1023) / 1024) * 1024 * 4 + 255) / 256 * 256;

  const std::string dir = make_dir("guard");
  std::ofstream(dir + "relu.cuh") << header;
  const std::string ok = std::to_string(b1) + ", " + std::to_string(d1);
  const std::string bad_w0 = std::to_string(w0.axes.at("B")) + ", " + std::to_string(w0.axes.at("D"));
  const std::string bad = std::to_string(b1 + 1) + ", " + std::to_string(d1);
  std::ofstream(dir + "main.cu")
      << "#include \"relu.cuh\"\n#include <cstdio>\n\n"
      << "static_assert(sizeof kevo_relu::kValidatedWorkloads / sizeof kevo_relu::kValidatedWorkloads[0] == 1, \"\");\n"
      << "static_assert(kevo_relu::validated_workload(" << ok << ") == 0, \"validated\");\n"
      << "static_assert(kevo_relu::validated_workload(" << bad_w0 << ") == -1, \"workload 0 was not validated\");\n"
      << "static_assert(kevo_relu::validated_workload(" << bad << ") == -1, \"not a workload\");\n"
      << "static_assert(kevo_export::floordiv(-7, 2) == -4 && kevo_export::mod(-7, 2) == 1, \"Python's // and %\");\n"
      << "static_assert(kevo_export::floordiv(7, -2) == -4 && kevo_export::mod(7, -2) == -1, \"Python's // and %\");\n"
      << "int main() {\n"
      << "  float* p = reinterpret_cast<float*>(256);  // never dereferenced: each call below stops at its guard\n"
      << "  std::printf(\"bad_shape %d\\n\", static_cast<int>(kevo_relu::run(p, p, " << bad << ", 0)));\n"
      << "  std::printf(\"unvalidated_workload %d\\n\", static_cast<int>(kevo_relu::run(p, p, " << bad_w0 << ", 0)));\n"
      << "  std::printf(\"null_tensor %d\\n\", static_cast<int>(kevo_relu::run(nullptr, p, " << ok << ", 0)));\n"
      << "  std::printf(\"no_workspace %d\\n\", static_cast<int>(kevo_relu::run(p, p, " << ok << ", 0)));\n"
      << "  std::printf(\"small_workspace %d\\n\", static_cast<int>(kevo_relu::run(p, p, " << ok
      << ", 0, p, kevo_relu::workspace_bytes(" << ok << ") - 1)));\n"
      << "  std::printf(\"workspace_bytes %zu\\n\", kevo_relu::workspace_bytes(" << ok << "));\n"
      << "  std::printf(\"workspace_bytes_bad %zu\\n\", kevo_relu::workspace_bytes(" << bad << "));\n"
      << "  std::printf(\"invalid_value %d\\n\", static_cast<int>(cudaErrorInvalidValue));\n"
      << "  return 0;\n}\n";
  int rc = 0;
  std::string cmd = nvcc() + " -std=c++17 -arch=sm_90a " + dir + "main.cu -o " + dir + "guard";
  std::string log = shell(cmd, &rc);
  ASSERT_EQ(rc, 0) << "$ " << cmd << "\n" << log;
  std::string out = shell(dir + "guard", &rc);
  ASSERT_EQ(rc, 0) << out;
  std::map<std::string, std::string> got;
  std::istringstream lines(out);
  for (std::string key, value; lines >> key >> value;) got[key] = value;
  const std::string invalid = got["invalid_value"];
  ASSERT_FALSE(invalid.empty()) << out;
  for (const char* key : {"bad_shape", "unvalidated_workload", "null_tensor", "no_workspace", "small_workspace"})
    EXPECT_EQ(got[key], invalid) << key << "\n" << out;
  EXPECT_EQ(got["workspace_bytes"], std::to_string(expected_bytes)) << out;
  EXPECT_EQ(got["workspace_bytes_bad"], "0") << out;
  // The sizes are Python's floor divisions, translated.
  EXPECT_NE(header.find("kevo_export::floordiv(D + 1023, 1024)"), std::string::npos) << header;
}

// Two tasks' candidates with the same extern "C" kernel name, the same macros (different values) and
// an #include of a toolkit header, one under #if.
std::string clashing_source(const char* scale) {
  return std::string(R"src(/* kevo-plan
{"plan": {"steps": [{"kernel": "kevo_kernel", "grid": ["(B * D + 255) // 256"], "block": [256],
                     "args": ["x", "y", {"int64": "B * D"}]}]}}
*/
#include <cuda_fp16.h>
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#endif
#define KEVO_SCALE )src") + scale + R"src(
#define KEVO_APPLY(v) ((v) > 0.f ? (v) * KEVO_SCALE : 0.f)
extern "C" {
__device__ float through_half(float v) { return __half2float(__float2half(v)); }
}
extern "C" __device__ float declared_elsewhere(float);  // a declaration: keeps its C linkage
extern "C" __global__ void __launch_bounds__(256) kevo_kernel(const float* x, float* y, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * 256 + threadIdx.x;
  if (i < n) y[i] = KEVO_APPLY(through_half(x[i]));
}
)src";
}

TEST(Export, ExternCKernelsMacrosAndIncludesOfTwoHeadersCoexistInOneProgram) {
  Task relu = load_task(kRoot + "tasks/01_relu.json");
  Task gelu = load_task(kRoot + "tasks/02_gelu.json");
  const std::string h1 = export_header(relu, parse_candidate(clashing_source("1.0f"), "a.cu", relu),
                                       provenance(relu, "a"));
  const std::string h2 = export_header(gelu, parse_candidate(clashing_source("2.0f"), "b.cu", gelu),
                                       provenance(gelu, "b"));
  EXPECT_NE(h1.find("/* extern \"C\" */ __global__"), std::string::npos) << h1;
  EXPECT_NE(h1.find("/* extern \"C\" { (dropped by kevo export) */"), std::string::npos) << h1;
  EXPECT_NE(h1.find("extern \"C\" __device__ float declared_elsewhere"), std::string::npos) << h1;
  EXPECT_NE(h1.find("#pragma push_macro(\"KEVO_SCALE\")"), std::string::npos) << h1;
  EXPECT_NE(h1.find("#pragma pop_macro(\"KEVO_APPLY\")"), std::string::npos) << h1;
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  const std::string dir = make_dir("clash");
  std::ofstream(dir + "relu.cuh") << h1;
  std::ofstream(dir + "gelu.cuh") << h2;
  std::ofstream(dir + "main.cu") << "#define KEVO_SCALE 7  // the user's own macro of the same name\n"
                                 << "#include \"relu.cuh\"\n#include \"gelu.cuh\"\n"
                                 << "#if KEVO_SCALE != 7\n#error the header changed the user's macro\n#endif\n"
                                 << "#ifdef KEVO_APPLY\n#error the source's macro leaked\n#endif\n"
                                 << "int main() {\n"
                                 << "  float* p = nullptr;\n"
                                 << "  return kevo_relu::run(p, p, 16, 16384, 0) == cudaSuccess &&\n"
                                 << "         kevo_gelu::run(p, p, 16, 16384, 0) == cudaSuccess;\n}\n";
  int rc = 0;
  std::string cmd = nvcc() + " -std=c++17 -arch=sm_90a -c " + dir + "main.cu -o " + dir + "main.o";
  std::string log = shell(cmd, &rc);
  EXPECT_EQ(rc, 0) << "$ " << cmd << "\n" << log;
}

// Contract names that are also the launcher's parameters (stream) or C++ keywords (int) are renamed;
// the launcher's locals (i, at, offsets, err) make way for contract names; the header compiles
// without warnings, shadowing included.
TEST(Export, ContractNamesThatClashWithTheLaunchersAreRenamed) {
  Task t = parse_task(R"src({
  "name": "clash-names.v2",
  "axes": {"i": {"type": "var"}, "at": {"type": "var"}, "K": {"type": "const", "value": 4}},
  "inputs": {"stream": {"shape": ["i", "at"], "dtype": "float32"},
             "int": {"shape": ["at"], "dtype": "float32"}},
  "outputs": {"offsets": {"shape": ["i", "at"], "dtype": "float32"}},
  "reference": "def run(stream, int):\n    return stream + int\n",
  "workloads": [{"i": 3, "at": 1000}, {"i": 5, "at": 7}]
})src", "clash.json");
  std::string src = R"src(/* kevo-plan
{"plan": {"buffers": {"err": {"dtype": "float32", "shape": ["i * K", "at"]}},
          "steps": [{"kernel": "add", "grid": ["i", "(at + 127) // 128"], "block": [128],
                     "args": ["stream", "int", "err", {"int": "at"}, {"int": "K"}]},
                    {"kernel": "copy", "grid": ["i"], "block": [128], "args": ["err", "offsets", {"int": "at"}]}]}}
*/
__global__ void add(const float* a, const float* b, float* tmp, int n, int k) {
  const int col = blockIdx.y * 128 + threadIdx.x;
  if (col < n) tmp[blockIdx.x * n + col] = a[blockIdx.x * n + col] + b[col] + 0 * k;
}
__global__ void copy(const float* tmp, float* out, int n) {
  for (int col = threadIdx.x; col < n; col += 128) out[blockIdx.x * n + col] = tmp[blockIdx.x * n + col];
}
)src";
  Candidate c = parse_candidate(src, "clash.cu", t);
  const std::string h = export_header(t, c, provenance(t, "clash"));
  EXPECT_EQ(export_namespace(t), "kevo_clash_names_v2");
  for (const char* want : {"namespace kevo_clash_names_v2 {", "inline cudaError_t run(const float* stream_,",
                           "const float* int_,", "float* offsets,", "int64_t i,", "int64_t at,",
                           "constexpr int64_t K = 4;", "void* err_ = static_cast<char*>(workspace)"})
    EXPECT_NE(h.find(want), std::string::npos) << want << "\n" << h;
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  const std::string dir = make_dir("names");
  std::ofstream(dir + "clash.cuh") << h;
  std::ofstream(dir + "main.cu") << "#include \"clash.cuh\"\n"
                                 << "static_assert(kevo_clash_names_v2::validated_workload(5, 7) == 1, \"\");\n"
                                 << "int main() {\n  float* p = nullptr;\n"
                                 << "  return kevo_clash_names_v2::run(p, p, p, 5, 7, 0, nullptr,\n"
                                 << "      kevo_clash_names_v2::workspace_bytes(5, 7)) == cudaSuccess;\n}\n";
  int rc = 0;
  std::string cmd = nvcc() + " -std=c++17 -arch=sm_90a -Xcompiler -Wall,-Wextra,-Wshadow -c " + dir + "main.cu -o " +
                    dir + "main.o";
  std::string log = shell(cmd, &rc);
  EXPECT_EQ(rc, 0) << "$ " << cmd << "\n" << log << "\n" << h;
  EXPECT_EQ(log.find("clash.cuh"), std::string::npos) << "warnings in the header:\n" << log;
}

TEST(Export, AnIncludeInsideABlockCannotBeExported) {
  Task relu = load_task(kRoot + "tasks/01_relu.json");
  std::string src = R"src(/* kevo-plan
{"plan": {"steps": [{"kernel": "k", "grid": ["B"], "block": [256], "args": ["x", "y"]}]}}
*/
namespace inner {
#include <cuda_fp16.h>
}
__global__ void k(const float* x, float* y) {}
)src";
  Candidate c = parse_candidate(src, "inc.cu", relu);
  try {
    export_header(relu, c, provenance(relu, "inc"));
    ADD_FAILURE() << "exported an #include inside a namespace block";
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("#include inside a block"), std::string::npos) << what;
    EXPECT_NE(what.find("source line 5"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(Export, ProvenanceWorkloadsAndLibrariesReadAsGiven) {
  Task softmax = load_task(kRoot + "tasks/03_softmax.json");
  Candidate c = load_candidate(kRoot + "tests/data/candidates/softmax.cu", softmax);
  ExportProvenance p = provenance(softmax, "variant 42");
  std::string h = export_header(softmax, c, p);
  for (const char* want :
       {"// softmax.cuh: the kernel kevo found for task 'softmax'", "// Candidate     softmax_online_v1, variant variant 42",
        "// Speedup       2.50x over PyTorch eager, 1.20x over torch.compile", "GPU NVIDIA H200, date 2026-11-30",
        "// kevo          0.1.0, commit 0123abc", "// Campaign      test-campaign", "//   workload 0: B=4096, D=393216",
        "//   workload 1: B=16, D=16384", "namespace kevo_softmax {", "namespace source {",
        "inline cudaError_t run(const float* x,", "float* y,", "int64_t B,", "cudaStream_t stream,",
        "void* workspace = nullptr,", "size_t workspace_bytes = 0)", "inline size_t workspace_bytes(",
        "Libraries: none beyond the CUDA runtime", "return reinterpret_cast<const void*>(&softmax_rows<256>);",
        "template <int kThreads>\n__global__ void __launch_bounds__(kThreads) softmax_rows("})
    EXPECT_NE(h.find(want), std::string::npos) << want << "\n" << h;
  EXPECT_NE(h.find("    {16, 16384},  // workload 1"), std::string::npos) << h;
  EXPECT_EQ(h.find("cublasLt.h"), std::string::npos);

  p.speedup_compile = 0;
  p.gpu.clear();
  h = export_header(softmax, c, p);
  EXPECT_NE(h.find("// Speedup       2.50x over PyTorch eager\n"), std::string::npos) << h;
  EXPECT_NE(h.find("GPU unknown"), std::string::npos) << h;

  Task linear = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  Candidate lc = load_candidate(kRoot + "tests/data/candidates/linear_leaky_relu.json", linear);
  std::string lh = export_header(linear, lc, provenance(linear, "l"));
  for (const char* want : {"#include <cublasLt.h>", "link -lcublasLt", "kevo_export::cublaslt_matmul(",
                           "kevo_export::MatmulShape{M, N, K, false, true, 2.0f, CUBLASLT_EPILOGUE_BIAS, 0}",
                           "CUBLAS_COMPUTE_32F", "kevo_export::kLibraryWorkspaceBytes",
                           "dim3(unsigned(kevo_export::floordiv(M * N + 255, 256)))", "float arg4 = 0.1f;"})
    EXPECT_NE(lh.find(want), std::string::npos) << want << "\n" << lh;
  EXPECT_EQ(lh.find("cudnn.h"), std::string::npos);

  for (const std::vector<int>& bad : {std::vector<int>{}, std::vector<int>{2}, std::vector<int>{-1}}) {
    p.validated_workloads = bad;
    try {
      export_header(softmax, c, p);
      ADD_FAILURE() << "exported with validated workloads of size " << bad.size();
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("validated workload"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(export_file_name(softmax), "softmax.cuh");
  EXPECT_EQ(export_namespace(softmax), "kevo_softmax");
}

}  // namespace
}  // namespace kevo::store
