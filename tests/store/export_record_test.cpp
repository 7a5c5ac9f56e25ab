// What an exported launcher asks for, recorded: each header compiled against a stand-in runtime
// (its guard macros predefined) and run on the CPU for every validated workload; every launch's
// grid, block, shared memory and argument bytes, every scratch address and library call must be
// what resolve_plan resolves, for every workload of every header.
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

// ---- what the launcher asks for, recorded: its runtime replaced by a stand-in --------------------

// Defines the runtime's guard macros first, so the headers take these definitions: each launch and
// library call prints what it was given (argument bytes decoded by the plan's kinds), nothing runs.
const char* kRecordingRuntime = R"src(#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cublasLt.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
#define KEVO_EXPORT_RUNTIME_V1
#define KEVO_EXPORT_CUBLASLT_V6
#define KEVO_EXPORT_CUDNN_V2
const char* const* g_kinds = nullptr;  // per kernel launch of the run: 'B'uffer, 'I'nt32, 'L' int64, 'F'loat, 'D'ouble
int g_launch = 0;
const void* const* g_kernels = nullptr;
int g_kernel_count = 0;
namespace kevo_export {
inline namespace v1 {
constexpr int64_t floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0 && ((a % b < 0) != (b < 0))) ? 1 : 0); }
constexpr int64_t mod(int64_t a, int64_t b) { return a % b + ((a % b != 0 && ((a % b < 0) != (b < 0))) ? b : 0); }
constexpr size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }
constexpr size_t kLibraryWorkspaceBytes = size_t{32} << 20;
inline cudaError_t num_sms(int64_t* out) { *out = 132; return cudaSuccess; }
inline unsigned long long address(const void* p) { return static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)); }
inline cudaError_t launch(const void* kernel, dim3 grid, dim3 block, size_t shared_bytes, void** args, cudaStream_t stream) {
  int k = -1;
  for (int i = 0; i < g_kernel_count; ++i)
    if (g_kernels[i] == kernel) k = i;
  std::printf("launch k=%d grid=%u,%u,%u block=%u,%u,%u smem=%zu stream=%llx args=", k, grid.x, grid.y, grid.z, block.x,
              block.y, block.z, shared_bytes, address(stream));
  const char* kinds = g_kinds[g_launch++];
  for (int i = 0; kinds[i]; ++i) {
    if (kinds[i] == 'B') { void* v; std::memcpy(&v, args[i], sizeof v); std::printf(" p%llx", address(v)); }
    if (kinds[i] == 'I') { int32_t v; std::memcpy(&v, args[i], sizeof v); std::printf(" i%d", v); }
    if (kinds[i] == 'L') { long long v; std::memcpy(&v, args[i], sizeof v); std::printf(" l%lld", v); }
    if (kinds[i] == 'F') { uint32_t v; std::memcpy(&v, args[i], sizeof v); std::printf(" f%08x", v); }
    if (kinds[i] == 'D') { unsigned long long v; std::memcpy(&v, args[i], sizeof v); std::printf(" d%016llx", v); }
  }
  std::printf("\n");
  return cudaSuccess;
}
struct MatmulShape {
  int64_t m, n, k;
  bool transpose_a, transpose_b;
  float alpha;
  cublasLtEpilogue_t epilogue;
  int algo;
  int emulation = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0;
};
inline const char* epilogue_text(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: return "none";
    case CUBLASLT_EPILOGUE_RELU: return "relu";
    case CUBLASLT_EPILOGUE_GELU: return "gelu";
    case CUBLASLT_EPILOGUE_BIAS: return "bias";
    case CUBLASLT_EPILOGUE_RELU_BIAS: return "bias_relu";
    case CUBLASLT_EPILOGUE_GELU_BIAS: return "bias_gelu";
    default: return "?";
  }
}
inline cudaError_t cublaslt_matmul(const void* a, const void* b, void* d, const void* bias, const MatmulShape& s,
                                   void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  uint32_t alpha;
  std::memcpy(&alpha, &s.alpha, sizeof alpha);
  std::printf("matmul a=%llx b=%llx d=%llx bias=%llx m=%lld n=%lld k=%lld ta=%d tb=%d alpha=%08x epilogue=%s algo=%d "
              "emulation=%d batch=%lld strides=%lld,%lld ws=%llx bytes=%zu stream=%llx\n", address(a), address(b),
              address(d), address(bias), (long long)s.m, (long long)s.n, (long long)s.k, (int)s.transpose_a,
              (int)s.transpose_b, alpha, epilogue_text(s.epilogue), s.algo, s.emulation, (long long)s.batch,
              (long long)s.stride_a, (long long)s.stride_b, address(workspace), workspace_bytes, address(stream));
  return cudaSuccess;
}
struct Conv2dShape {
  int64_t x[4], w[4], y[4];
  int64_t stride[2], padding[2], dilation[2];
  int64_t groups;
  bool relu;
};
inline cudaError_t cudnn_conv2d_forward(const void* x, const void* w, void* y, const void* bias, const Conv2dShape& s,
                                        void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  std::printf("conv x=%llx w=%llx y=%llx bias=%llx", address(x), address(w), address(y), address(bias));
  for (const int64_t* v : {s.x, s.w, s.y}) std::printf(" [%lld,%lld,%lld,%lld]", (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3]);
  std::printf(" stride=%lld,%lld pad=%lld,%lld dil=%lld,%lld groups=%lld relu=%d ws=%llx bytes=%zu stream=%llx\n",
              (long long)s.stride[0], (long long)s.stride[1], (long long)s.padding[0], (long long)s.padding[1],
              (long long)s.dilation[0], (long long)s.dilation[1], (long long)s.groups, (int)s.relu,
              address(workspace), workspace_bytes, address(stream));
  return cudaSuccess;
}
}  // namespace v1
}  // namespace kevo_export
)src";

constexpr uint64_t kWorkspaceAddress = 0x40000000, kStreamAddress = 0x5;
uint64_t tensor_address(size_t i) { return 0x1000000ull * (i + 1); }

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// What the recording runtime prints for one run of the plan, from the engine's own resolution of it.
std::string expected_record(const Task& t, const Candidate& c, int wi) {
  DeviceLimits limits;
  limits.num_sms = 132;
  ResolvedPlan rp = resolve_plan(c, t, t.workloads[static_cast<size_t>(wi)], limits);
  std::vector<uint64_t> ptr(rp.buffers.size());
  uint64_t at = 0;
  auto align = [](uint64_t b) { return (b + 255) / 256 * 256; };
  for (size_t i = 0; i < rp.buffers.size(); ++i) {
    if (rp.buffers[i].role != ResolvedBuffer::Scratch) {
      ptr[i] = tensor_address(i);
    } else {
      ptr[i] = kWorkspaceAddress + at;
      at = align(at + static_cast<uint64_t>(rp.buffers[i].bytes));
    }
  }
  const uint64_t library = kWorkspaceAddress + at;
  bool has_library = false;
  for (const ResolvedStep& s : rp.steps) has_library |= !std::holds_alternative<ResolvedKernel>(s);
  if (has_library) at = align(at + (32ull << 20));
  const std::vector<std::string> kernels = c.kernel_names();
  auto p = [&](int b) { return b < 0 ? std::string("0") : hex(ptr[static_cast<size_t>(b)]); };
  std::ostringstream out;
  out << "run " << export_namespace(t) << " " << wi << "\n";
  for (const ResolvedStep& s : rp.steps) {
    if (const auto* k = std::get_if<ResolvedKernel>(&s)) {
      out << "launch k=" << std::find(kernels.begin(), kernels.end(), k->kernel) - kernels.begin() << " grid=" << k->grid[0]
          << "," << k->grid[1] << "," << k->grid[2] << " block=" << k->block[0] << "," << k->block[1] << ","
          << k->block[2] << " smem=" << k->shared_bytes << " stream=" << hex(kStreamAddress) << " args=";
      for (const ResolvedArg& a : k->args) {
        char buf[40];
        switch (a.kind) {
          case ArgKind::Buffer: out << " p" << p(a.buffer); break;
          case ArgKind::Int32: out << " i" << a.integer; break;
          case ArgKind::Int64: out << " l" << a.integer; break;
          case ArgKind::Float32: {
            float f = static_cast<float>(a.real);
            uint32_t bits;
            std::memcpy(&bits, &f, sizeof bits);
            std::snprintf(buf, sizeof buf, " f%08x", bits);
            out << buf;
            break;
          }
          case ArgKind::Float64: {
            unsigned long long bits;
            std::memcpy(&bits, &a.real, sizeof bits);
            std::snprintf(buf, sizeof buf, " d%016llx", bits);
            out << buf;
            break;
          }
          case ArgKind::TensorMap: out << " t" << p(a.buffer); break;  // the recording shim sees no tensor maps yet
        }
      }
      out << "\n";
    } else if (const auto* m = std::get_if<ResolvedMatmul>(&s)) {
      float alpha = static_cast<float>(m->call.alpha);
      uint32_t bits;
      std::memcpy(&bits, &alpha, sizeof bits);
      char buf[16];
      std::snprintf(buf, sizeof buf, "%08x", bits);
      out << "matmul a=" << p(m->a) << " b=" << p(m->b) << " d=" << p(m->d) << " bias=" << p(m->bias) << " m=" << m->m
          << " n=" << m->n << " k=" << m->k << " ta=" << m->call.transpose_a << " tb=" << m->call.transpose_b
          << " alpha=" << buf << " epilogue=" << epilogue_name(m->call.epilogue) << " algo=" << m->call.algo
          << " emulation=" << static_cast<int>(m->call.emulation) << " batch=" << m->batch << " strides=" << m->stride_a
          << "," << m->stride_b << " ws=" << hex(library)
          << " bytes=" << (32u << 20) << " stream=" << hex(kStreamAddress) << "\n";
    } else {
      const auto& cv = std::get<ResolvedConv2d>(s);
      out << "conv x=" << p(cv.x) << " w=" << p(cv.w) << " y=" << p(cv.y) << " bias=" << p(cv.bias);
      for (int b : {cv.x, cv.w, cv.y}) {
        const Shape& sh = rp.buffers[static_cast<size_t>(b)].shape;
        out << " [" << sh[0] << "," << sh[1] << "," << sh[2] << "," << sh[3] << "]";
      }
      const Conv2dStep& k = cv.call;
      out << " stride=" << k.stride[0] << "," << k.stride[1] << " pad=" << k.padding[0] << "," << k.padding[1]
          << " dil=" << k.dilation[0] << "," << k.dilation[1] << " groups=" << k.groups
          << " relu=" << (k.epilogue == Epilogue::Relu) << " ws=" << hex(library) << " bytes=" << (32u << 20)
          << " stream=" << hex(kStreamAddress) << "\n";
    }
  }
  out << "status 0 bytes " << at << "\n";
  return out.str();
}

// main()'s block running one header's plan on validated workload `wi` under the recording runtime.
std::string record_block(const Exported& e, int wi) {
  const Task& t = *e.task;
  const std::string ns = export_namespace(t);
  std::string axes, ptrs, kinds, kernels;
  for (const Axis& a : t.axes)
    if (!a.value) axes += ", " + std::to_string(t.workloads[static_cast<size_t>(wi)].axes.at(a.name));
  size_t i = 0;
  for (const auto* list : {&t.inputs, &t.outputs})
    for (const TensorDecl& d : *list) {
      ptrs += std::string(i ? ", " : "") + "reinterpret_cast<" + (list == &t.inputs ? "const " : "") +
              cuda_type_name(d.dtype) + "*>(uintptr_t{0x" + hex(tensor_address(i)) + "})";
      ++i;
    }
  for (const Step& s : e.candidate.plan.steps)
    if (const auto* k = std::get_if<KernelStep>(&s.op)) {
      std::string one;
      for (const KernelArg& a : k->args)
        one += "BILFD"[static_cast<int>(a.kind)];
      kinds += "\"" + one + "\", ";
    }
  const size_t n_kernels = e.candidate.kernel_names().size();
  for (size_t k = 0; k < n_kernels; ++k) kernels += ns + "::source::kevo_export_kernel_" + std::to_string(k) + "(), ";
  return "  {\n    static const char* const kinds[] = {" + kinds + "nullptr};\n    const void* const kernels[] = {" +
         kernels + "nullptr};\n    g_kinds = kinds;\n    g_launch = 0;\n    g_kernels = kernels;\n    g_kernel_count = " +
         std::to_string(n_kernels) + ";\n    std::printf(\"run " + ns + " " + std::to_string(wi) +
         "\\n\");\n    const size_t bytes = " + ns + "::workspace_bytes(" + (axes.empty() ? "" : axes.substr(2)) +
         ");\n    const cudaError_t err = " + ns + "::run(" + ptrs + axes + ", reinterpret_cast<cudaStream_t>(uintptr_t{0x" +
         hex(kStreamAddress) + "}), reinterpret_cast<void*>(uintptr_t{0x" + hex(kWorkspaceAddress) +
         "}), bytes);\n    std::printf(\"status %d bytes %zu\\n\", static_cast<int>(err), bytes);\n  }\n";
}

// A record split into its runs, each from its "run <namespace> <workload>" line.
std::vector<std::string> runs_of(const std::string& record) {
  std::vector<std::string> out;
  std::istringstream in(record);
  for (std::string line; std::getline(in, line);) {
    if (out.empty() || line.rfind("run ", 0) == 0) out.emplace_back();
    out.back() += line + "\n";
  }
  return out;
}

// Runs every validated workload of each header of `program` under the recording runtime and
// compares what the launcher asked for with the engine's own resolution; returns the runs the
// program recorded that match it (0 when it does not compile).
int record_program(const std::vector<const Exported*>& program) {
  const std::string dir = make_dir("record" + program.front()->label);
  std::string main = std::string(kRecordingRuntime), blocks, expected;
  for (const Exported* e : program) {
    EXPECT_NE(e->header.find("kevo_export_kernel_"), std::string::npos);
    std::ofstream(dir + e->label + ".cuh") << e->header;
    main += "#include \"" + e->label + ".cuh\"\n";
    for (size_t wi = 0; wi < e->task->workloads.size(); ++wi) {
      blocks += record_block(*e, static_cast<int>(wi));
      expected += expected_record(*e->task, e->candidate, static_cast<int>(wi));
    }
  }
  std::ofstream(dir + "main.cu") << main << "\nint main() {\n" << blocks << "  return 0;\n}\n";
  // PTX only (a virtual architecture): nothing is launched, so ptxas can be skipped.
  std::string cmd = nvcc() + " -std=c++17 -arch=compute_90a " + dir + "main.cu -o " + dir + "record";
  int rc = 0;
  std::string log = shell(cmd, &rc);
  EXPECT_EQ(rc, 0) << "$ " << cmd << "\n" << log;
  if (rc != 0) return 0;
  std::string got = shell(dir + "record", &rc);
  EXPECT_EQ(rc, 0) << got;
  const std::vector<std::string> want = runs_of(expected), have = runs_of(got);
  EXPECT_EQ(have.size(), want.size()) << "runs recorded; headers in " << dir << "\n" << got;
  int matched = 0;
  for (size_t i = 0; i < want.size() && i < have.size(); ++i) {
    EXPECT_EQ(have[i], want[i]) << "run " << i << " of the record; headers in " << dir;
    matched += have[i] == want[i] ? 1 : 0;
  }
  return matched;
}

TEST(Export, TheLauncherAsksForWhatTheEngineResolvesOnEveryValidatedWorkload) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  std::vector<Task> tasks;
  int spaces = 0;
  std::vector<Exported> all = export_all(tasks, &spaces);
  ASSERT_GE(spaces, static_cast<int>(tasks.size())) << "every task has a space";
  ASSERT_EQ(all.size(), static_cast<size_t>(spaces) + 2) << "every candidate exported";
  int runs = 0, expected = 0;
  std::set<const Exported*> recorded;
  for (const auto& program : rounds(all)) {
    runs += record_program(program);
    for (const Exported* e : program) {
      expected += static_cast<int>(e->task->workloads.size());
      recorded.insert(e);
    }
  }
  EXPECT_EQ(recorded.size(), all.size()) << "every header ran under the recording runtime";
  EXPECT_GE(expected, 2 * static_cast<int>(all.size())) << "every task has at least two workloads";
  EXPECT_EQ(runs, expected) << "every validated workload of every header recorded, as the engine resolves it";
  std::printf("%d runs of %zu headers recorded, each launch as the engine resolves it\n", runs, all.size());
}

// A plan whose matmul is autotuned ("algo": "auto") exports with algo -1, which the cuBLASLt runtime
// section (v6) times at the first call of each shape; the header compiles and links with nvcc, and
// the launcher passes -1 on every workload.
TEST(Export, AnAutotunedCublasLtPlanCompilesAndPassesItsChoiceOn) {
  Task linear = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  std::ifstream in(kRoot + "tests/data/candidates/linear_leaky_relu.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = R"("epilogue": "bias")";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), R"("epilogue": "bias", "algo": "auto")");
  Exported e{&linear, parse_candidate(text, "linear_auto.json", linear), "linear_autotuned", "", true, false};
  ASSERT_EQ(std::get<MatmulStep>(e.candidate.plan.steps.front().op).algo, kAutotunedAlgo);
  e.header = export_header(linear, e.candidate, provenance(linear, "linear_auto.json"));
  for (const char* want : {"kevo_export::MatmulShape{M, N, K, false, true, 2.0f, CUBLASLT_EPILOGUE_BIAS, -1}",
                           "algorithm autotuned at the first call of each shape", "#ifndef KEVO_EXPORT_CUBLASLT_V6",
                           "inline namespace v6 {", "cublaslt::tune(linked_cublaslt(), p.handle, p.plan,",
                           "cudaEventElapsedTime", "cudaErrorStreamCaptureUnsupported"})
    EXPECT_NE(e.header.find(want), std::string::npos) << want << "\n" << e.header;
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  compile_program("autotuned", {&e}, true);
  EXPECT_EQ(record_program({&e}), static_cast<int>(linear.workloads.size()));
}

// A plan whose matmul emulates fp32 (cuBLASLt's bf16x9, "emulation": "eager") exports with cuBLAS's
// strategy in the launcher's MatmulShape, a build line for sm_100a/sm_103a alone, and the runtime
// that attaches the emulation descriptor; the header compiles (and links) with nvcc for sm_100a,
// and the launcher passes the strategy on every workload.
TEST(Export, AnEmulatedCublasLtPlanCompilesForSm100aAndPassesItsStrategyOn) {
  Task linear = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  std::ifstream in(kRoot + "tests/data/candidates/linear_leaky_relu.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = R"("epilogue": "bias")";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), R"("epilogue": "bias", "emulation": "eager")");
  Exported e{&linear, parse_candidate(text, "linear_emulated.json", linear), "linear_emulated", "", true, false};
  ASSERT_EQ(std::get<MatmulStep>(e.candidate.plan.steps.front().op).emulation, Emulation::Eager);
  e.header = export_header(linear, e.candidate, provenance(linear, "linear_emulated.json"));
  for (const char* want :
       {"kevo_export::MatmulShape{M, N, K, false, true, 2.0f, CUBLASLT_EPILOGUE_BIAS, 0, CUBLAS_EMULATION_STRATEGY_EAGER}",
        "fp32 emulated with bf16x9 (cuBLAS strategy eager; sm_100a, sm_103a)",
        "// Build: nvcc -std=c++17 -gencode=arch=compute_100a,code=sm_100a (B200; B300:\n"
        "//        -gencode=arch=compute_103a,code=sm_103a): the cuBLASLt step emulates fp32 with bf16x9,",
        "CUBLAS_COMPUTE_32F_EMULATED_16BFX9", "CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR",
        "&cublasLtEmulationDescCreate,"})
    EXPECT_NE(e.header.find(want), std::string::npos) << want << "\n" << e.header;
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  compile_program("emulated", {&e}, true, "-gencode=arch=compute_100a,code=sm_100a");
  EXPECT_EQ(record_program({&e}), static_cast<int>(linear.workloads.size()));
}

// torch.bmm(q, k^T) + bias, relu as one cuBLASLt step (and a kernel after it): the launcher passes the strided batch (the
// batch dims' product and each operand's stride, in the contract's axes) after a plain emulation
// strategy; the header compiles with the runtime's MatmulShape, and on every workload passes the
// batch and strides the engine resolves.
TEST(Export, AStridedBatchedCublasLtPlanPassesTheEnginesBatchAndStrides) {
  Task bmm = load_task(kRoot + "tests/data/tasks/bmm_transposed_b_bias_relu.json");
  const char* text = R"({"source": "__global__ void halve(float* y, long long n) {}\n", "plan": {"steps": [
    {"library": "cublaslt.matmul", "a": "q", "b": "k", "d": "y", "bias": "bias", "transpose_b": true, "epilogue": "bias_relu"},
    {"kernel": "halve", "grid": ["(B * S * T + 255) // 256"], "block": [256], "args": ["y", {"int64": "B * S * T"}]}]}})";
  Exported e{&bmm, parse_candidate(text, "bmm.json", bmm), "bmm", "", true, false};
  e.header = export_header(bmm, e.candidate, provenance(bmm, "bmm.json"));
  for (const char* want :
       {"kevo_export::MatmulShape{S, T, D, false, true, 1.0f, CUBLASLT_EPILOGUE_RELU_BIAS, 0, 0, B, (S) * (D), (D) * (T)},"
        "  // m, n, k, transpose a, b, alpha, epilogue, heuristic algorithm index, emulation strategy, batch, strides of "
        "a and b",
        "y = relu(q @ k^T + bias) per product of a strided batch", "CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET"})
    EXPECT_NE(e.header.find(want), std::string::npos) << want << "\n" << e.header;
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  compile_program("bmm", {&e}, true);
  EXPECT_EQ(record_program({&e}), static_cast<int>(bmm.workloads.size()));
}

}  // namespace
}  // namespace kevo::store
