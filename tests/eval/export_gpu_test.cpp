// Exported headers on the GPU, as a user's program runs them: nvcc builds a program around the
// header that reads the inputs from files, calls kevo_<task>::run (twice, outputs poisoned before
// each run) and writes the outputs; they match the task's reference (LibTorch, on the CPU) within
// the task's tolerance, the inputs stay untouched, and a shape outside the validated workloads is
// refused with cudaErrorInvalidValue. A header's library steps give the very bits the worker's
// (eval::LibrarySteps) give for the same plan: both run the export runtime's planners.
#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/inputs.h"
#include "eval/library_steps.h"
#include "eval/torch_graph.h"
#include "lower/lower.h"
#include "mutate/space.h"
#include "store/export.h"

namespace kevo::eval {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

struct ExportCase {
  std::string name;       // the test's name
  std::string task_file;  // under tasks/
  std::string candidate;  // under tests/data/candidates/, or empty: a rendered genome of `family`
  std::string family;
  bool autotuned = false;  // the plan's cuBLASLt steps get "algo": "auto"
};

void PrintTo(const ExportCase& c, std::ostream* os) { *os << c.name; }

std::string nvcc() { return KEVO_NVCC; }
std::string cuda_lib_dir() { return nvcc().substr(0, nvcc().rfind('/')) + "/../lib64"; }
bool have_library(const std::string& name) {
  struct stat st {};
  return ::stat((cuda_lib_dir() + "/lib" + name + ".so").c_str(), &st) == 0;
}

std::string shell(const std::string& cmd, int* rc) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  *rc = p ? pclose(p) : -1;
  return out;
}

// The program: inputs from DIR/in<i>.bin, outputs to DIR/out<i>.bin; exit status 0 when every
// call behaved. `bytes` are the tensors' sizes in contract order (inputs, then outputs).
std::string program(const Task& task, const std::string& header, const std::vector<int64_t>& bytes,
                    const std::vector<int64_t>& axes) {
  const std::string ns = store::export_namespace(task);
  const size_t n_in = task.inputs.size(), n_out = task.outputs.size();
  std::ostringstream m;
  std::string axis_list, bad_axis_list;
  for (size_t i = 0; i < axes.size(); ++i) {
    axis_list += ", " + std::to_string(axes[i]);
    bad_axis_list += ", " + std::to_string(i == 0 ? axes[i] + 1 : axes[i]);
  }
  std::string ptrs;
  for (size_t i = 0; i < n_in + n_out; ++i) {
    const TensorDecl& t = i < n_in ? task.inputs[i] : task.outputs[i - n_in];
    ptrs += std::string(i ? ", " : "") + "static_cast<" + (i < n_in ? "const " : "") + cuda_type_name(t.dtype) + "*>(" +
            (i < n_in ? "in" : "out") + std::to_string(i < n_in ? i : i - n_in) + ")";
  }
  m << "#include \"" << header << "\"\n"
    << "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdio>\n#include <cstring>\n#include <string>\n"
    << "#include <vector>\n\n"
    << "#define CHECK(call)                                                                   \\\n"
    << "  do {                                                                                \\\n"
    << "    cudaError_t e_ = (call);                                                          \\\n"
    << "    if (e_ != cudaSuccess) {                                                          \\\n"
    << "      std::fprintf(stderr, \"%s: %s\\n\", #call, cudaGetErrorString(e_));              \\\n"
    << "      return 1;                                                                       \\\n"
    << "    }                                                                                 \\\n"
    << "  } while (0)\n\n"
    << "static bool read_file(const std::string& path, std::vector<char>& data) {\n"
    << "  FILE* f = std::fopen(path.c_str(), \"rb\");\n"
    << "  if (!f) return false;\n"
    << "  const size_t n = std::fread(data.data(), 1, data.size(), f);\n"
    << "  std::fclose(f);\n"
    << "  return n == data.size();\n}\n\n"
    << "static bool write_file(const std::string& path, const std::vector<char>& data) {\n"
    << "  FILE* f = std::fopen(path.c_str(), \"wb\");\n"
    << "  if (!f) return false;\n"
    << "  const size_t n = std::fwrite(data.data(), 1, data.size(), f);\n"
    << "  return std::fclose(f) == 0 && n == data.size();\n}\n\n"
    << "int main(int argc, char** argv) {\n"
    << "  if (argc != 2) return 2;\n"
    << "  const std::string dir = argv[1];\n";
  for (size_t i = 0; i < n_in; ++i)
    m << "  std::vector<char> host_in" << i << "(" << bytes[i] << ");\n"
      << "  if (!read_file(dir + \"/in" << i << ".bin\", host_in" << i << ")) return 3;\n"
      << "  void* in" << i << " = nullptr;\n"
      << "  CHECK(cudaMalloc(&in" << i << ", " << bytes[i] << "));\n"
      << "  CHECK(cudaMemcpy(in" << i << ", host_in" << i << ".data(), " << bytes[i] << ", cudaMemcpyHostToDevice));\n";
  for (size_t i = 0; i < n_out; ++i)
    m << "  void* out" << i << " = nullptr;\n  CHECK(cudaMalloc(&out" << i << ", " << bytes[n_in + i] << "));\n";
  m << "  const size_t workspace_bytes = " << ns << "::workspace_bytes(" << (axes.empty() ? "" : axis_list.substr(2))
    << ");\n"
    << "  void* workspace = nullptr;\n"
    << "  if (workspace_bytes > 0) CHECK(cudaMalloc(&workspace, workspace_bytes));\n"
    << "  cudaStream_t stream;\n  CHECK(cudaStreamCreate(&stream));\n"
    << (axes.empty() ? ""
                     : "  if (" + ns + "::run(" + ptrs + bad_axis_list +
                           ", stream, workspace, workspace_bytes) != cudaErrorInvalidValue) {\n"
                           "    std::fprintf(stderr, \"the launcher accepted a shape outside the validated "
                           "workloads\\n\");\n    return 4;\n  }\n")
    << "  for (int rep = 0; rep < 2; ++rep) {  // the second run takes the cached library plans\n";
  for (size_t i = 0; i < n_out; ++i)
    m << "    CHECK(cudaMemsetAsync(out" << i << ", 0xff, " << bytes[n_in + i] << ", stream));  // NaN, -1: unwritten fails\n";
  m << "    if (workspace_bytes > 0) CHECK(cudaMemsetAsync(workspace, 0xff, workspace_bytes, stream));\n"
    << "    CHECK(" << ns << "::run(" << ptrs << axis_list << ", stream, workspace, workspace_bytes));\n"
    << "    CHECK(cudaStreamSynchronize(stream));\n  }\n";
  for (size_t i = 0; i < n_out; ++i)
    m << "  std::vector<char> host_out" << i << "(" << bytes[n_in + i] << ");\n"
      << "  CHECK(cudaMemcpy(host_out" << i << ".data(), out" << i << ", " << bytes[n_in + i]
      << ", cudaMemcpyDeviceToHost));\n"
      << "  if (!write_file(dir + \"/out" << i << ".bin\", host_out" << i << ")) return 5;\n";
  for (size_t i = 0; i < n_in; ++i)
    m << "  std::vector<char> back_in" << i << "(" << bytes[i] << ");\n"
      << "  CHECK(cudaMemcpy(back_in" << i << ".data(), in" << i << ", " << bytes[i] << ", cudaMemcpyDeviceToHost));\n"
      << "  if (std::memcmp(back_in" << i << ".data(), host_in" << i << ".data(), " << bytes[i] << ") != 0) {\n"
      << "    std::fprintf(stderr, \"input " << task.inputs[i].name << " changed\\n\");\n    return 6;\n  }\n";
  m << "  std::printf(\"ran\\n\");\n  return 0;\n}\n";
  return m.str();
}

class ExportGpu : public ::testing::TestWithParam<ExportCase> {
 protected:
  void SetUp() override {
    const DriverStatus& s = cuda_driver_status();
    if (!s.available || s.device_count == 0) GTEST_SKIP() << "no CUDA GPU: " << s.error;
    if (nvcc().empty() || access(nvcc().c_str(), X_OK) != 0) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  }
};

TEST_P(ExportGpu, TheHeadersLauncherMatchesTheReferenceInAUsersProgram) {
  const ExportCase& ec = GetParam();
  Task task = load_task(kRoot + "tasks/" + ec.task_file);
  Candidate c;
  std::string variant;
  if (!ec.candidate.empty()) {
    c = load_candidate(kRoot + "tests/data/candidates/" + ec.candidate, task);
    variant = ec.candidate;
  } else {
    auto spaces = lower::lower(task);
    const mutate::DesignSpace* space = nullptr;
    for (const auto& s : spaces)
      if (!space && s->manifest().family == ec.family) space = s.get();
    ASSERT_NE(space, nullptr) << task.name << " has no space of family " << ec.family;
    std::mt19937_64 rng(std::hash<std::string>()(ec.name));
    mutate::Genome g = space->random_genome(rng);
    variant = g.to_string();
    c = parse_candidate(space->render(g), variant + ".cu", task);
  }
  bool cudnn = false, cublaslt = false;
  // A rendered genome's cuBLASLt step runs plain fp32: the bf16x9 emulation runs on sm_100a/sm_103a
  // only (LibraryStepsGpu.EmulatedMatmul... covers it).
  for (Step& s : c.plan.steps)
    if (auto* m = std::get_if<MatmulStep>(&s.op)) {
      if (ec.autotuned) m->algo = kAutotunedAlgo;
      m->emulation = Emulation::Off;
    }
  for (const Step& s : c.plan.steps) {
    cublaslt |= std::holds_alternative<MatmulStep>(s.op);
    cudnn |= std::holds_alternative<Conv2dStep>(s.op);
  }
  if ((cublaslt && !have_library("cublasLt")) || (cudnn && !have_library("cudnn")))
    GTEST_SKIP() << "the plan needs cuBLASLt/cuDNN, which are not installed in " << cuda_lib_dir();

  // The smallest workload: inputs and outputs travel through files.
  size_t wi = 0;
  for (size_t i = 1; i < task.workloads.size(); ++i)
    if (task.bytes_moved(task.workloads[i]) < task.bytes_moved(task.workloads[wi])) wi = i;
  const Workload& w = task.workloads[wi];

  store::ExportProvenance p;
  p.variant = variant;
  for (size_t i = 0; i < task.workloads.size(); ++i) p.validated_workloads.push_back(static_cast<int>(i));
  const std::string header = store::export_header(task, c, p);

  const std::string dir = ::testing::TempDir() + "kevo_export_gpu_" + ec.name + "_" + std::to_string(getpid());
  mkdir(dir.c_str(), 0755);
  const std::string header_file = store::export_file_name(task);
  std::ofstream(dir + "/" + header_file) << header;

  std::vector<torch::Tensor> inputs = make_inputs(task, w, 1000 + wi);
  std::vector<int64_t> bytes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    torch::Tensor t = inputs[i].contiguous();
    bytes.push_back(t.numel() * t.element_size());
    std::ofstream(dir + "/in" + std::to_string(i) + ".bin", std::ios::binary)
        .write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(bytes.back()));
  }
  for (const TensorDecl& o : task.outputs) bytes.push_back(numel(task.shape_of(o, w)) * dtype_size(o.dtype));
  std::vector<int64_t> axes;
  for (const Axis& a : task.axes)
    if (!a.value) axes.push_back(w.axes.at(a.name));
  std::ofstream(dir + "/main.cu") << program(task, header_file, bytes, axes);

  std::string cmd = nvcc() + " -std=c++17 -arch=" + device_arch(0) + " " + dir + "/main.cu -o " + dir + "/program" +
                    (cublaslt ? " -lcublasLt" : "") + (cudnn ? " -lcudnn" : "") + " -Xlinker -rpath -Xlinker " +
                    cuda_lib_dir();
  int rc = 0;
  std::string log = shell(cmd, &rc);
  ASSERT_EQ(rc, 0) << "$ " << cmd << "\n" << log;
  log = shell(dir + "/program " + dir, &rc);
  ASSERT_EQ(rc, 0) << ec.name << ": the program failed (status " << rc << "):\n" << log;

  std::vector<torch::Tensor> expected = run_graph(task.graph(w), inputs);
  ASSERT_EQ(expected.size(), task.outputs.size());
  for (size_t i = 0; i < task.outputs.size(); ++i) {
    const TensorDecl& o = task.outputs[i];
    std::vector<char> data(static_cast<size_t>(bytes[inputs.size() + i]));
    std::ifstream(dir + "/out" + std::to_string(i) + ".bin", std::ios::binary)
        .read(data.data(), static_cast<std::streamsize>(data.size()));
    torch::Tensor got = torch::from_blob(data.data(), task.shape_of(o, w), torch::TensorOptions().dtype(to_torch(o.dtype)))
                            .clone()
                            .to(torch::kFloat64);
    torch::Tensor want = expected[i].to(torch::kFloat64);
    torch::Tensor err = (got - want).abs();
    torch::Tensor bound = task.tolerance.atol + task.tolerance.rtol * want.abs();
    int64_t bad = (~(err <= bound)).sum().item<int64_t>();  // NaN compares false: never passes
    std::printf("%s (%s) workload %zu output %s: max abs error %.3g, %lld of %lld out of tolerance\n", ec.name.c_str(),
                variant.c_str(), wi, o.name.c_str(), err.nan_to_num(INFINITY).max().item<double>(),
                static_cast<long long>(bad), static_cast<long long>(got.numel()));
    EXPECT_EQ(bad, 0) << ec.name << " output " << o.name << " out of tolerance; header in " << dir;
  }
}

// ---- the header's library steps against the worker's -------------------------------------------

// A plan of one library step, `step` (a JSON object), for `task`; its source only a device function.
Candidate library_candidate(const Task& task, const std::string& name, const std::string& step) {
  return parse_candidate("{\"name\": \"" + name + "\", \"task\": \"" + task.name + "\", \"source\": \"__device__ void no_kernel() {}\\n\", \"plan\": " +
                             "{\"steps\": [" + step + "]}}",
                         name + ".json", task);
}

// What the worker computes for `c` on `inputs` (CPU tensors, copied to the GPU), its one output back
// on the CPU, or the worker's error text.
std::string worker_output(const Task& task, const Candidate& c, const Workload& w,
                          const std::vector<torch::Tensor>& inputs, torch::Tensor* out) {
  ResolvedPlan rp = resolve_plan(c, task, w, DeviceLimits{});
  std::vector<torch::Tensor> keep;
  std::vector<CUdeviceptr> ptrs;
  for (const ResolvedBuffer& b : rp.buffers) {
    torch::Tensor t;
    for (size_t i = 0; i < task.inputs.size(); ++i)
      if (task.inputs[i].name == b.name) t = inputs[i].to(torch::kCUDA).contiguous();
    if (!t.defined()) t = torch::full(b.shape, std::nanf(""), torch::TensorOptions().device(torch::kCUDA));
    keep.push_back(t);
    ptrs.push_back(reinterpret_cast<CUdeviceptr>(t.data_ptr()));
  }
  torch::cuda::synchronize();
  use_primary_context(0);
  LibrarySteps libs;
  try {
    for (const ResolvedStep& step : rp.steps) {
      if (const auto* m = std::get_if<ResolvedMatmul>(&step)) libs.launch(*m, rp, ptrs, nullptr);
      if (const auto* cv = std::get_if<ResolvedConv2d>(&step)) libs.launch(*cv, rp, ptrs, nullptr);
    }
    check_cuda(cuda_api()->cuCtxSynchronize(), "the worker's library step");
  } catch (const std::exception& e) {
    return e.what();
  }
  *out = keep[static_cast<size_t>(rp.buffer(task.outputs.front().name))].cpu();
  return "";
}

// Exports `c`, runs it in a user's program on `inputs` and returns the program's log; its status in
// *rc and its first output in *out when it ran.
std::string header_output(const Task& task, const Candidate& c, const Workload& w,
                          const std::vector<torch::Tensor>& inputs, const std::string& name, int* rc,
                          torch::Tensor* out) {
  store::ExportProvenance p;
  p.variant = name;
  for (size_t i = 0; i < task.workloads.size(); ++i) p.validated_workloads.push_back(static_cast<int>(i));
  const std::string dir = ::testing::TempDir() + "kevo_export_gpu_" + name + "_" + std::to_string(getpid());
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/" + store::export_file_name(task)) << store::export_header(task, c, p);
  std::vector<int64_t> bytes, axes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    torch::Tensor t = inputs[i].contiguous();
    bytes.push_back(t.numel() * t.element_size());
    std::ofstream(dir + "/in" + std::to_string(i) + ".bin", std::ios::binary)
        .write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(bytes.back()));
  }
  const TensorDecl& o = task.outputs.front();
  bytes.push_back(numel(task.shape_of(o, w)) * dtype_size(o.dtype));
  for (const Axis& a : task.axes)
    if (!a.value) axes.push_back(w.axes.at(a.name));
  std::ofstream(dir + "/main.cu") << program(task, store::export_file_name(task), bytes, axes);
  const std::string cmd = nvcc() + " -std=c++17 -arch=" + device_arch(0) + " " + dir + "/main.cu -o " + dir +
                          "/program -lcublasLt -lcudnn -Xlinker -rpath -Xlinker " + cuda_lib_dir();
  std::string log = shell(cmd, rc);
  if (*rc != 0) return "$ " + cmd + "\n" + log;
  log = shell(dir + "/program " + dir, rc);
  if (*rc == 0) {
    *out = torch::empty(task.shape_of(o, w), torch::kFloat32);
    std::ifstream(dir + "/out0.bin", std::ios::binary)
        .read(static_cast<char*>(out->data_ptr()), static_cast<std::streamsize>(bytes.back()));
  }
  return log;
}

class ExportGpuLibraries : public ExportGpu {
 protected:
  void SetUp() override {
    ExportGpu::SetUp();
    if (IsSkipped()) return;
    if (!have_library("cublasLt") || !have_library("cudnn"))
      GTEST_SKIP() << "cuBLASLt and cuDNN are not both installed in " << cuda_lib_dir();
    if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA GPU";
  }
};

// Each index of the heuristic's list names the same algorithm in the header as in the worker
// (same bits), and the index past the list is refused by both.
TEST_F(ExportGpuLibraries, TheHeadersMatmulRunsTheAlgorithmTheWorkerMeasured) {
  Task task = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  const Workload& w = task.workloads[1];  // M=16, K=256, N=128
  const std::vector<torch::Tensor> inputs = make_inputs(task, w, 77);
  auto candidate = [&](int algo) {
    return library_candidate(task, "linear_algo" + std::to_string(algo),
                             "{\"library\": \"cublaslt.matmul\", \"a\": \"x\", \"b\": \"W\", \"d\": \"y\", \"bias\": "
                             "\"b\", \"transpose_b\": true, \"alpha\": 2.0, \"epilogue\": \"bias_relu\", \"algo\": " +
                                 std::to_string(algo) + "}");
  };
  int usable = 0;
  for (; usable < 8; ++usable) {
    torch::Tensor ignored;
    if (!worker_output(task, candidate(usable), w, inputs, &ignored).empty()) break;
  }
  ASSERT_GT(usable, 0) << "the heuristic has no algorithm for a 16x256x128 fp32 matmul";
  std::set<int> indices = {0, usable / 2, usable - 1, usable};
  for (int algo : indices) {
    const Candidate c = candidate(algo);
    torch::Tensor by_worker, by_header;
    const std::string worker_error = worker_output(task, c, w, inputs, &by_worker);
    int rc = 0;
    const std::string log = header_output(task, c, w, inputs, "linear_algo" + std::to_string(algo), &rc, &by_header);
    if (algo == usable) {
      EXPECT_NE(worker_error.find("but the heuristic returned " + std::to_string(usable)), std::string::npos)
          << worker_error;
      EXPECT_NE(rc, 0) << "the header ran an algorithm past the heuristic's list";
      EXPECT_NE(log.find("not supported"), std::string::npos) << log;
      continue;
    }
    ASSERT_EQ(worker_error, "") << "algo " << algo;
    ASSERT_EQ(rc, 0) << "algo " << algo << ":\n" << log;
    EXPECT_TRUE(torch::equal(by_header, by_worker)) << "algo " << algo << " of " << usable
                                                    << ": the header's bits differ from the worker's";
  }
}

// The convolution the header runs is the worker's: same descriptors, same algorithm, same bits.
TEST_F(ExportGpuLibraries, TheHeadersConvolutionRunsTheWorkersAlgorithm) {
  Task task = load_task(kRoot + "tasks/14_conv2d_relu_bias.json");
  size_t wi = 0;
  for (size_t i = 1; i < task.workloads.size(); ++i)
    if (task.bytes_moved(task.workloads[i]) < task.bytes_moved(task.workloads[wi])) wi = i;
  const Workload& w = task.workloads[wi];
  const std::vector<torch::Tensor> inputs = make_inputs(task, w, 78);
  const Candidate c = library_candidate(task, "conv_relu",
                                        "{\"library\": \"cudnn.conv2d_forward\", \"x\": \"x\", \"w\": \"weight\", "
                                        "\"y\": \"y\", \"bias\": \"bias\", \"epilogue\": \"relu\"}");
  torch::Tensor by_worker, by_header;
  ASSERT_EQ(worker_output(task, c, w, inputs, &by_worker), "");
  int rc = 0;
  const std::string log = header_output(task, c, w, inputs, "conv_relu", &rc, &by_header);
  ASSERT_EQ(rc, 0) << log;
  EXPECT_TRUE(torch::equal(by_header, by_worker)) << "the header's convolution differs from the worker's";
}

INSTANTIATE_TEST_SUITE_P(
    Candidates, ExportGpu,
    ::testing::Values(ExportCase{"softmax_cu", "03_softmax.json", "softmax.cu", ""},
                      ExportCase{"linear_cublaslt", "13_linear_leaky_relu.json", "linear_leaky_relu.json", ""},
                      // The first run times cuBLASLt's candidates on the user's stream, the second reuses the choice.
                      ExportCase{"linear_cublaslt_autotuned", "13_linear_leaky_relu.json", "linear_leaky_relu.json", "",
                                 true},
                      ExportCase{"relu_elementwise", "01_relu.json", "", "elementwise"},
                      ExportCase{"sum_dim1_reduce", "06_sum_dim1.json", "", "reduce"},
                      ExportCase{"softmax_normalize", "03_softmax.json", "", "normalize"},
                      ExportCase{"hinge_loss_reduce_scalar", "11_hinge_loss.json", "", "reduce_scalar"},
                      ExportCase{"conv2d_cudnn", "14_conv2d_relu_bias.json", "", "library"},
                      // torch.bmm(q, k^T) + bias, relu: a strided-batched cuBLASLt step in the header.
                      ExportCase{"bmm_cublaslt_batched", "../tests/data/tasks/bmm_transposed_b_bias_relu.json", "",
                                 "library"}),
    [](const ::testing::TestParamInfo<ExportCase>& i) { return i.param.name; });

}  // namespace
}  // namespace kevo::eval
