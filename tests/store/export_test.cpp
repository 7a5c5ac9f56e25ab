// Exported headers as a user's build sees them: the bundled candidates and a rendered genome of
// every design space of every task compile with nvcc, several tasks' headers in one program and
// in two translation units; the launcher accepts only the validated shapes (checked by a compiled
// program, run here since the guard answers before any CUDA call); the source's extern "C",
// macros and #includes do not leak; the provenance reads as given.
#include "store/export.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/error.h"
#include "core/task.h"
#include "mutate/space.h"
#include "store/export_runtime.h"

namespace kevo::store {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

std::vector<std::string> task_files() {
  std::vector<std::string> out;
  DIR* d = opendir((kRoot + "tasks").c_str());
  for (dirent* e; d && (e = readdir(d));) {
    std::string n = e->d_name;
    if (n.size() > 5 && n.substr(n.size() - 5) == ".json") out.push_back(n);
  }
  if (d) closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string nvcc() { return KEVO_NVCC; }
bool have_nvcc() { return !nvcc().empty() && access(nvcc().c_str(), X_OK) == 0; }

// lib<name>.so beside nvcc's toolkit: linking is checked where the libraries are installed.
bool have_library(const std::string& name) {
  std::string dir = nvcc().substr(0, nvcc().rfind('/'));  // .../bin
  struct stat st {};
  return ::stat((dir + "/../lib64/lib" + name + ".so").c_str(), &st) == 0;
}

// Runs a shell command; its output (stdout and stderr) and exit status.
std::string shell(const std::string& cmd, int* rc) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  *rc = p ? pclose(p) : -1;
  return out;
}

std::string make_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "kevo_export_" + name + "_" + std::to_string(getpid());
  mkdir(dir.c_str(), 0755);
  return dir + "/";
}

std::vector<int> all_workloads(const Task& t) {
  std::vector<int> w;
  for (size_t i = 0; i < t.workloads.size(); ++i) w.push_back(static_cast<int>(i));
  return w;
}

ExportProvenance provenance(const Task& t, const std::string& variant) {
  ExportProvenance p;
  p.speedup_eager = 2.5;
  p.speedup_compile = 1.2;
  p.gpu = "NVIDIA H200";
  p.date = "2026-11-30";
  p.kevo_version = "0.1.0";
  p.kevo_commit = "0123abc";
  p.campaign_id = "test-campaign";
  p.variant = variant;
  p.validated_workloads = all_workloads(t);
  return p;
}

struct Exported {
  const Task* task;
  Candidate candidate;
  std::string label;  // file stem, unique
  std::string header;
  bool cublaslt = false, cudnn = false;
};

// The headers the suite compiles: the bundled candidates and one rendered random genome of every
// design space of every task (loaded into `tasks`, which must outlive them).
std::vector<Exported> export_all(std::vector<Task>& tasks, int* rendered) {
  std::vector<std::string> files = task_files();
  tasks.clear();
  for (const std::string& f : files) tasks.push_back(load_task(kRoot + "tasks/" + f));
  auto task_named = [&](const std::string& file) -> const Task& {
    return tasks[static_cast<size_t>(std::find(files.begin(), files.end(), file) - files.begin())];
  };
  std::vector<Exported> all;
  auto add = [&](const Task& t, const Candidate& c, const std::string& label, const std::string& variant) {
    Exported e{&t, c, label, "", false, false};
    try {
      e.header = export_header(t, c, provenance(t, variant));
    } catch (const InputError& err) {
      ADD_FAILURE() << label << ": export failed: " << err.what();
      return;
    }
    for (const Step& s : c.plan.steps) {
      e.cublaslt |= std::holds_alternative<MatmulStep>(s.op);
      e.cudnn |= std::holds_alternative<Conv2dStep>(s.op);
    }
    all.push_back(std::move(e));
  };
  const Task& softmax = task_named("03_softmax.json");
  const Task& linear = task_named("13_linear_leaky_relu.json");
  add(softmax, load_candidate(kRoot + "tests/data/candidates/softmax.cu", softmax), "bundled_softmax", "softmax.cu");
  add(linear, load_candidate(kRoot + "tests/data/candidates/linear_leaky_relu.json", linear), "bundled_linear",
      "linear_leaky_relu.json");
  std::mt19937_64 rng(20261130);
  *rendered = 0;
  for (const Task& t : tasks) {
    int i = 0;
    for (const auto& s : mutate::lower(t)) {
      mutate::Genome g = s->random_genome(rng);
      Candidate c;
      try {
        c = parse_candidate(s->render(g), g.to_string() + ".cu", t);
      } catch (const InputError& err) {
        ADD_FAILURE() << g.to_string() << ": rendered plan invalid: " << err.what();
        continue;
      }
      add(t, c, t.name + "_space" + std::to_string(i++), g.to_string());
      ++*rendered;
    }
  }
  return all;
}

// Programs of one header per task namespace: round r takes each task's r-th header.
std::vector<std::vector<const Exported*>> rounds(const std::vector<Exported>& all) {
  std::vector<std::vector<const Exported*>> programs;
  std::map<const Task*, int> taken;
  for (const Exported& e : all) {
    size_t round = static_cast<size_t>(taken[e.task]++);
    if (programs.size() <= round) programs.emplace_back();
    programs[round].push_back(&e);
  }
  // A task with more spaces than the others leaves its last headers alone: another task's first
  // header joins them, so every program still holds several tasks' namespaces.
  for (auto& program : programs)
    if (program.size() == 1)
      for (const Exported* other : programs.front())
        if (other->task != program.front()->task) {
          program.push_back(other);
          break;
        }
  return programs;
}

// A block of main() calling a header's workspace_bytes and run on workload `w` (null pointers:
// compiled, not run), with the guard's verdict on it checked at compile time.
std::string call_block(const Task& t, int w) {
  const std::string ns = export_namespace(t);
  std::vector<std::string> axes;
  for (const Axis& a : t.axes)
    if (!a.value) axes.push_back(std::to_string(t.workloads[static_cast<size_t>(w)].axes.at(a.name)));
  std::string vals;
  for (const std::string& v : axes) vals += (vals.empty() ? "" : ", ") + v;
  std::string ptrs;
  for (const auto* list : {&t.inputs, &t.outputs})
    for (size_t i = 0; i < list->size(); ++i) ptrs += "nullptr, ";
  return "  {\n    static_assert(" + ns + "::validated_workload(" + vals + ") == " + std::to_string(w) +
         ", \"the guard accepts a validated workload\");\n    size_t bytes = " + ns + "::workspace_bytes(" + vals +
         ");\n    cudaError_t err = " + ns + "::run(" + ptrs + vals +
         ", cudaStream_t{}, nullptr, bytes);\n    std::printf(\"%s %zu %d\\n\", \"" + ns +
         "\", bytes, static_cast<int>(err));\n  }\n";
}

// Compiles (and links, where the libraries are) a program of `headers`, one per task namespace,
// included by main.cu and, when `second_tu`, by a second translation unit too.
void compile_program(const std::string& name, const std::vector<const Exported*>& headers, bool second_tu) {
  const std::string dir = make_dir(name);
  std::string includes, calls;
  bool cublaslt = false, cudnn = false;
  for (const Exported* e : headers) {
    std::ofstream(dir + e->label + ".cuh") << e->header;
    includes += "#include \"" + e->label + ".cuh\"\n";
    calls += call_block(*e->task, 0);
    cublaslt |= e->cublaslt;
    cudnn |= e->cudnn;
  }
  std::ofstream(dir + "main.cu") << includes << "#include <cstdio>\n\nvoid other_tu();\n\nint main() {\n"
                                 << calls << (second_tu ? "  other_tu();\n" : "") << "  return 0;\n}\n";
  std::string files = dir + "main.cu";
  if (second_tu) {
    std::ofstream(dir + "other.cu") << includes << "\nvoid other_tu() {\n  (void)"
                                    << export_namespace(*headers.front()->task) << "::kValidatedWorkloads;\n}\n";
    files += " " + dir + "other.cu";
  }
  const bool can_link = (!cublaslt || have_library("cublasLt")) && (!cudnn || have_library("cudnn"));
  std::string cmd = nvcc() + " -std=c++17 -arch=sm_90a -Xcompiler -Wall " + files;
  if (can_link) {
    cmd += " -o " + dir + "program";
    if (cublaslt) cmd += " -lcublasLt";
    if (cudnn) cmd += " -lcudnn";
  } else {
    cmd += " -c -odir " + dir;
  }
  int rc = 0;
  std::string log = shell(cmd, &rc);
  std::string labels;
  for (const Exported* e : headers) labels += " " + e->label;
  EXPECT_EQ(rc, 0) << "nvcc failed on" << labels << "\n$ " << cmd << "\n" << log;
  if (rc == 0 && !log.empty()) std::printf("nvcc warnings for%s:\n%s\n", labels.c_str(), log.c_str());
}

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
#define KEVO_EXPORT_CUBLASLT_V4
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
              "ws=%llx bytes=%zu stream=%llx\n", address(a), address(b), address(d), address(bias), (long long)s.m,
              (long long)s.n, (long long)s.k, (int)s.transpose_a, (int)s.transpose_b, alpha, epilogue_text(s.epilogue),
              s.algo, address(workspace), workspace_bytes, address(stream));
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

const char* c_type(DType t) {
  switch (t) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "__half";
    case DType::BFloat16: return "__nv_bfloat16";
    case DType::Int64: return "int64_t";
    case DType::Int32: return "int32_t";
    case DType::Bool: return "bool";
  }
  return "void";
}

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
          << " ws=" << hex(library)
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
              c_type(d.dtype) + "*>(uintptr_t{0x" + hex(tensor_address(i)) + "})";
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
      {"cublaslt.h", {"cublaslt_plan.h", "KEVO_EXPORT_CUBLASLT_V4"}}, {"cudnn.h", {"cudnn_plan.h", "KEVO_EXPORT_CUDNN_V2"}}};
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

// A plan whose matmul is autotuned ("algo": "auto") exports with algo -1, which the cuBLASLt runtime
// section (v4) times at the first call of each shape; the header compiles and links with nvcc, and
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
                           "algorithm autotuned at the first call of each shape", "#ifndef KEVO_EXPORT_CUBLASLT_V4",
                           "inline namespace v4 {", "cublaslt::tune(linked_cublaslt(), p.handle, p.plan,",
                           "cudaEventElapsedTime", "cudaErrorStreamCaptureUnsupported"})
    EXPECT_NE(e.header.find(want), std::string::npos) << want << "\n" << e.header;
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  compile_program("autotuned", {&e}, true);
  EXPECT_EQ(record_program({&e}), static_cast<int>(linear.workloads.size()));
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
