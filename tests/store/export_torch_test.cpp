// The PyTorch extension `kevo export --torch` writes: its op checks every argument with one clear
// line, allocates through PyTorch and runs the header's launcher on the current stream; its C++
// compiles with nvcc against the LibTorch headers kevo was built with (this machine's LibTorch
// has no CUDA libraries, so it is compiled, not linked: bench/torch_extension_check.py runs it on
// a GPU); a task whose axis cannot be read off its inputs is refused.
#include "lower/lower.h"
#include "store/export_torch.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "core/candidate.h"
#include "core/error.h"
#include "core/task.h"
#include "mutate/space.h"
#include "tests/store/exported_headers.h"

namespace kevo::store {
namespace {

using namespace testing;

struct Exported2 {
  Task task;
  Candidate candidate;
  std::string header, source, loader;
};

Exported2 export_planted(const std::string& task_file, const std::string& planted) {
  Exported2 e;
  e.task = load_task(kRoot + "tasks/" + task_file);
  e.candidate = load_candidate(kRoot + "tests/data/planted/" + planted, e.task);
  e.header = export_header(e.task, e.candidate, provenance(e.task, planted));
  e.source = export_torch_source(e.task, e.candidate, export_file_name(e.task));
  e.loader = export_torch_loader(e.task, e.candidate);
  return e;
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(ExportTorch, TheOpChecksEveryArgumentAndRegistersUnderKevo) {
  const Exported2 e = export_planted("01_relu.json", "relu_ok.cu");
  EXPECT_EQ(torch_op_name(e.task), "relu");
  for (const char* line :
       {"#include \"relu.cuh\"", "TORCH_LIBRARY_FRAGMENT(kevo, m) { m.def(\"relu(Tensor x) -> Tensor\"",
        "x.scalar_type() == at::kFloat, \"kevo::relu: x must be float32, got \"",
        "x.dim() == 2, \"kevo::relu: x must have 2 dimensions [B, D], got \"", "const int64_t B = x.size(0);",
        "const int64_t D = x.size(1);", "validated_workload(B, D) >= 0",
        "x.is_cuda(), \"kevo::relu: x must be a CUDA tensor, got one on \"",
        "x.is_contiguous(), \"kevo::relu: x must be contiguous",
        "at::Tensor y = at::empty(std::vector<int64_t>{B, D}, x.options().dtype(at::kFloat));", "c10::cuda::getCurrentCUDAStream().stream()",
        "kevo_err == cudaSuccess"})
    EXPECT_TRUE(has(e.source, line)) << line << "\n" << e.source;
  // The dtype and shape checks come before anything that needs a GPU.
  EXPECT_LT(e.source.find("x.scalar_type()"), e.source.find("x.is_cuda()"));
  EXPECT_LT(e.source.find("validated_workload("), e.source.find("x.is_cuda()"));
  EXPECT_TRUE(has(e.loader, "torch.ops.kevo.relu"));
  EXPECT_TRUE(has(e.loader, "relu_torch.cu"));
  EXPECT_TRUE(has(e.loader, "LIBRARIES = []"));
}

TEST(ExportTorch, LibraryStepsLinkTheirLibraries) {
  const Task task = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  std::mt19937_64 rng(7);
  int found = 0;
  for (const auto& s : lower::lower(task)) {
    if (s->id().rfind("library/cublaslt", 0) != 0) continue;
    const Candidate c = parse_candidate(s->render(s->random_genome(rng)), "lib.cu", task);
    EXPECT_TRUE(has(export_torch_loader(task, c), "LIBRARIES = [\"-lcublasLt\"]"));
    ++found;
  }
  EXPECT_GT(found, 0) << "no cuBLASLt space for the linear task";
}

TEST(ExportTorch, AnAxisNoInputNamesIsRefused) {
  const Task task = parse_task(R"({"name": "pad", "axes": {"N": {"type": "var"}},
    "inputs": {"x": {"shape": ["N + 1"], "dtype": "float32"}}, "outputs": {"y": {"shape": ["N + 1"], "dtype": "float32"}},
    "reference": "def run(x):\n    return torch.relu(x)\n", "workloads": [{"N": 7}]})",
                               "pad.json");
  const Candidate c = parse_candidate(R"(/* kevo-plan
{"name": "pad_ok", "plan": {"steps": [{"kernel": "k", "grid": [1], "block": [32], "args": ["x", "y", {"int64": "N + 1"}]}]}}
*/
extern "C" __global__ void k(const float* x, float* y, long long n) {}
)",
                                       "pad_ok.cu", task);
  try {
    export_torch_source(task, c, "pad.cuh");
    FAIL() << "accepted";
  } catch (const InputError& err) {
    EXPECT_TRUE(has(err.what(), "axis 'N' is no dimension of its own in any input's shape")) << err.what();
  }
}

// mse_ok has two inputs, a scalar output and scratch: the workspace path too.
TEST(ExportTorch, TheExtensionCompilesAgainstTheLibTorchHeaders) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  const std::string dir = make_dir("torch");
  std::string includes;
  bool cuda_macros = false, library = false;
  std::stringstream list(KEVO_TORCH_INCLUDES);
  for (std::string d; std::getline(list, d, ':');) {
    cuda_macros |= std::ifstream(d + "/c10/cuda/impl/cuda_cmake_macros.h").good();
    library |= std::ifstream(d + "/torch/library.h").good();
    if (!d.empty() && d != "/usr/include" && d != "/usr/local/include") includes += " -isystem " + d;  // the compiler's own stay
  }
  if (!library) GTEST_SKIP() << "no torch/library.h in LibTorch's include folders (" << KEVO_TORCH_INCLUDES << ")";
  if (!cuda_macros) {
    // A CPU build of LibTorch (Debian's) ships c10/cuda's headers without this generated one.
    std::filesystem::create_directories(dir + "shim/c10/cuda/impl");
    std::ofstream(dir + "shim/c10/cuda/impl/cuda_cmake_macros.h") << "#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n";
    includes += " -isystem " + dir + "shim";
  }
  Exported2 e = export_planted("10_mse_loss.json", "mse_ok.cu");
  // As exported for the validated workloads, and shape-general (the op checks supported_shape()).
  ExportShapes general;
  general.general = true;
  const std::vector<std::pair<std::string, std::string>> variants = {
      {e.header, e.source},
      {export_header(e.task, e.candidate, provenance(e.task, "mse_ok.cu"), general),
       export_torch_source(e.task, e.candidate, export_file_name(e.task), true)}};
  EXPECT_TRUE(has(variants[1].second, "supported_shape(M, N)")) << variants[1].second;
  for (const auto& [header, source] : variants) {
    std::ofstream(dir + export_file_name(e.task)) << header;
    std::ofstream(dir + torch_source_file_name(e.task)) << source;
    int rc = 0;
    const std::string out = shell(nvcc() + " -std=c++17 -arch=sm_90a -D_GLIBCXX_USE_CXX11_ABI=1 -I" + dir + includes +
                                      " -c " + dir + torch_source_file_name(e.task) + " -o " + dir + "mse_loss_torch.o",
                                  &rc);
    EXPECT_EQ(rc, 0) << torch_source_file_name(e.task) << ":\n" << out << "\n" << source;
  }
}

}  // namespace
}  // namespace kevo::store
