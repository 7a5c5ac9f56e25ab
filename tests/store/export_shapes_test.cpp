// Shape-general headers: a rendered genome of every design space of every task exports with its
// kernel's conditions and compiles with nvcc for sm_90a and sm_100a, its supported_shape()
// accepting every validated workload at compile time; a compiled header refuses, before any CUDA
// call, the shapes outside the contract's ranges, outside the kernel's conditions and those whose
// int32 arguments or grid would overflow, and accepts unseen shapes inside them.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <sstream>
#include <string>

#include "core/candidate.h"
#include "core/error.h"
#include "core/task.h"
#include "lower/lower.h"
#include "mutate/space.h"
#include "store/export.h"
#include "store/export_dispatch.h"
#include "tests/store/exported_headers.h"

namespace kevo::store {
namespace {

using namespace testing;

std::string axis_list(const Task& t, const std::map<std::string, int64_t>& axes) {
  std::string s;
  for (const Axis& a : t.axes)
    if (!a.value) s += (s.empty() ? "" : ", ") + std::to_string(axes.at(a.name));
  return s;
}

TEST(ExportShapes, GeneralHeadersOfEverySpaceCompileForHopperAndBlackwellAndAcceptTheirWorkloads) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  std::vector<Task> tasks;
  for (const std::string& f : task_files()) tasks.push_back(load_task(kRoot + "tasks/" + f));
  std::mt19937_64 rng(20261203);
  // One program per round: each task's r-th space, so that every header's namespace is distinct.
  std::vector<std::string> includes, checks;
  std::vector<bool> cublaslt, cudnn;
  const std::string dir = make_dir("general");
  int headers = 0;
  for (const Task& t : tasks) {
    int r = 0;
    for (const auto& s : lower::lower(t)) {
      mutate::Genome g = s->random_genome(rng);
      const Candidate c = parse_candidate(s->render(g), g.to_string() + ".cu", t);
      ShapeConditions cond = mutate::shape_conditions(*s, g);
      ASSERT_TRUE(cond.pinned.empty()) << g.to_string();
      ExportShapes shapes;
      shapes.general = true;
      shapes.kernel = cond.conditions;
      std::string header;
      try {
        header = export_header(t, c, provenance(t, g.to_string()), shapes);
      } catch (const InputError& e) {
        ADD_FAILURE() << g.to_string() << ": " << e.what();
        continue;
      }
      const std::string label = t.name + "_general" + std::to_string(r);
      std::ofstream(dir + label + ".cuh") << header;
      if (includes.size() <= static_cast<size_t>(r)) {
        includes.emplace_back();
        checks.emplace_back();
        cublaslt.push_back(false);
        cudnn.push_back(false);
      }
      includes[r] += "#include \"" + label + ".cuh\"\n";
      for (const Workload& w : t.workloads)
        checks[r] += "static_assert(" + export_namespace(t) + "::supported_shape(" + axis_list(t, w.axes) + "), \"" +
                     g.to_string() + " supports its workloads\");\n";
      for (const Step& st : c.plan.steps) {
        cublaslt[r] = cublaslt[r] || std::holds_alternative<MatmulStep>(st.op);
        cudnn[r] = cudnn[r] || std::holds_alternative<Conv2dStep>(st.op);
      }
      ++r;
      ++headers;
    }
  }
  for (size_t r = 0; r < includes.size(); ++r) {
    const std::string file = dir + "round" + std::to_string(r) + ".cu";
    std::ofstream(file) << includes[r] << "\n" << checks[r] << "\nint main() { return 0; }\n";
    int rc = 0;
    const std::string cmd = nvcc() + " -std=c++17 -Xcompiler -Wall -gencode arch=compute_90a,code=sm_90a "
                            "-gencode arch=compute_100a,code=sm_100a -c " + file + " -o " + dir + "round" +
                            std::to_string(r) + ".o";
    const std::string log = shell(cmd, &rc);
    EXPECT_EQ(rc, 0) << "$ " << cmd << "\n" << log;
  }
  std::printf("compiled %d shape-general headers for sm_90a and sm_100a in %zu programs\n", headers, includes.size());
}

// relu over [B, D], D declared up to 2^34 (B defaults to 1 ... 4096): a two-step plan with int
// arguments of D, and a kernel condition D % 4 == 0 as a template would give it.
const char* kRelu = R"({
  "name": "relu",
  "axes": {"B": {"type": "var"}, "D": {"type": "var", "min": 4, "max": 17179869184}},
  "inputs": {"x": {"shape": ["B", "D"], "dtype": "float32"}},
  "outputs": {"y": {"shape": ["B", "D"], "dtype": "float32"}},
  "reference": "def run(x):\n    return torch.relu(x)\n",
  "workloads": [{"B": 4096, "D": 4096}, {"B": 16, "D": 16384}]
})";

const char* kTwoStepRelu = R"src(/* kevo-plan
{"plan": {"buffers": {"tmp": {"dtype": "float32", "shape": ["B", "(D + 1023) // 1024", 1024]}},
          "steps": [
  {"kernel": "copy_in", "grid": ["B * ((D + 1023) // 1024)"], "block": [1024],
   "args": ["x", "tmp", {"int64": "B * D"}, {"int": "D"}, {"int": "(D + 1023) // 1024"}]},
  {"kernel": "relu_out", "grid": ["B * ((D + 1023) // 1024)"], "block": [1024],
   "args": ["tmp", "y", {"int": "D"}, {"int": "(D + 1023) // 1024"}, {"float": 0.0}]}]}}
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

TEST(ExportShapes, TheCompiledGuardRefusesShapesOutsideRangesConditionsAndCudaLimits) {
  Task t = parse_task(kRelu, "relu.json");
  Candidate c = parse_candidate(kTwoStepRelu, "relu_two_step.cu", t);
  ExportShapes shapes;
  shapes.general = true;
  shapes.kernel = {{"D % 4", "==", "0", "vector accesses of 4"}};
  shapes.verified = {{{"B", 3}, {"D", 20}}, {{"B", 1}, {"D", 4}}};
  shapes.verified_on = "GPU test, 2026-12-03";
  const std::string header = export_header(t, c, provenance(t, "relu_two_step"), shapes);
  EXPECT_NE(header.find("//     D % 4 == 0  (vector accesses of 4)"), std::string::npos) << header;
  EXPECT_NE(header.find("B in [1, 4096] (default); D in [4, 17179869184];"), std::string::npos) << header;
  EXPECT_NE(header.find("Verified against the reference on 2 unseen shapes (GPU test, 2026-12-03)"), std::string::npos);
  EXPECT_NE(header.find("//   B=3, D=20\n"), std::string::npos) << header;
  // The validated-only header of the same candidate keeps today's guard.
  const std::string validated = export_header(t, c, provenance(t, "relu_two_step"));
  EXPECT_EQ(validated.find("supported_shape"), std::string::npos);
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";

  const std::string dir = make_dir("general_guard");
  std::ofstream(dir + "relu.cuh") << header;
  std::ostringstream m;
  m << "#include \"relu.cuh\"\n#include <cstdio>\n\n"
    << "using namespace kevo_relu;\n"
    << "static_assert(supported_shape(4096, 4096) && supported_shape(16, 16384), \"the workloads\");\n"
    << "static_assert(supported_shape(3, 20) && supported_shape(1, 4), \"unseen shapes inside everything\");\n"
    << "static_assert(validated_workload(3, 20) == -1, \"not measured\");\n"
    << "static_assert(sizeof kVerifiedWorkloads / sizeof kVerifiedWorkloads[0] == 2, \"the verified shapes\");\n"
    << "int main() {\n"
    << "  float* p = reinterpret_cast<float*>(256);  // never dereferenced: each call below stops at its guard\n"
    << "  struct { const char* what; long long b, d; } refused[] = {\n"
    << "      {\"condition\", 16, 16386},        // D % 4 != 0\n"
    << "      {\"below_min\", 16, 0},            // D < 4\n"
    << "      {\"b_zero\", 0, 16384},            // B < 1\n"
    << "      {\"b_default_max\", 4097, 16384},  // B above its largest workload\n"
    << "      {\"d_above_max\", 1, 17179869188LL},\n"
    << "      {\"int32_argument\", 1, 2147483652LL},  // {\"int\": \"D\"} would overflow\n"
    << "      {\"grid_limit\", 4096, 4294967296LL},  // B * D / 1024 blocks > 2^31 - 1\n"
    << "  };\n"
    << "  for (const auto& r : refused)\n"
    << "    std::printf(\"%s %d %d %zu\\n\", r.what, static_cast<int>(supported_shape(r.b, r.d)),\n"
    << "                static_cast<int>(run(p, p, r.b, r.d, 0, p, 1 << 30)), workspace_bytes(r.b, r.d));\n"
    << "  std::printf(\"accepted %d %zu\\n\", static_cast<int>(supported_shape(3, 20)), workspace_bytes(3, 20));\n"
    << "  std::printf(\"invalid_value %d\\n\", static_cast<int>(cudaErrorInvalidValue));\n"
    << "  return 0;\n}\n";
  std::ofstream(dir + "main.cu") << m.str();
  int rc = 0;
  const std::string cmd = nvcc() + " -std=c++17 -arch=sm_90a -Xcompiler -Wall " + dir + "main.cu -o " + dir + "guard";
  std::string log = shell(cmd, &rc);
  ASSERT_EQ(rc, 0) << "$ " << cmd << "\n" << log;
  std::string out = shell(dir + "guard", &rc);
  ASSERT_EQ(rc, 0) << out;
  std::map<std::string, std::string> got;
  std::istringstream lines(out);
  std::string invalid;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string key, rest;
    f >> key;
    std::getline(f, rest);
    got[key] = rest;
    if (key == "invalid_value") invalid = rest;
  }
  ASSERT_FALSE(invalid.empty()) << out;
  for (const char* what : {"condition", "below_min", "b_zero", "b_default_max", "d_above_max", "int32_argument", "grid_limit"})
    EXPECT_EQ(got[what], " 0" + invalid + " 0") << what << " must be refused, with no workspace\n" << out;
  EXPECT_EQ(got["accepted"], " 1 " + std::to_string((3 * 1024 * 4 + 255) / 256 * 256)) << out;
}

// Two kernels of relu in one header: k0 validated on workload 0 only, k1 on workload 1 and
// shape-general (D % 4 == 0); each shape goes to the right one, other shapes are refused.
TEST(ExportShapes, ADispatcherPicksTheBucketsKernelElseTheGeneralOneElseNone) {
  Task t = parse_task(kRelu, "relu.json");
  DispatchKernel k0{parse_candidate(kTwoStepRelu, "a.cu", t), provenance(t, "a"), {}};
  k0.provenance.validated_workloads = {0};
  k0.provenance.campaign_id = "campaign-a";
  DispatchKernel k1{parse_candidate(kTwoStepRelu, "b.cu", t), provenance(t, "b"), {}};
  k1.provenance.validated_workloads = {1};
  k1.provenance.campaign_id = "campaign-b";
  k1.shapes.general = true;
  k1.shapes.kernel = {{"D % 4", "==", "0", "vector accesses of 4"}};
  const std::string header = export_dispatch_header(t, {k0, k1}, {{0, 0}, {1, 1}});
  EXPECT_NE(header.find("//   k0: campaign campaign-a, variant a"), std::string::npos) << header;
  EXPECT_NE(header.find("//   k1: campaign campaign-b, variant b, GPU NVIDIA H200 (shape-general)"), std::string::npos);
  EXPECT_NE(header.find("namespace kevo_relu::k1 {"), std::string::npos) << "each kernel in its own namespace";
  EXPECT_THROW(export_dispatch_header(t, {k0, k1}, {{1, 0}}), InputError) << "k0 was not validated on workload 1";
  EXPECT_THROW(export_dispatch_header(t, {k0, k1}, {{0, 2}}), InputError);
  EXPECT_THROW(export_dispatch_header(t, {}, {}), InputError);
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  const std::string dir = make_dir("dispatch");
  std::ofstream(dir + "relu.cuh") << header;
  std::ofstream(dir + "main.cu")
      << "#include \"relu.cuh\"\n#include <cstdio>\n\n"
      << "static_assert(kevo_relu::kernel_for(4096, 4096) == 0, \"workload 0: its bucket's kernel\");\n"
      << "static_assert(kevo_relu::kernel_for(16, 16384) == 1, \"workload 1: its bucket's kernel\");\n"
      << "static_assert(kevo_relu::kernel_for(3, 20) == 1, \"another supported shape: the general kernel\");\n"
      << "static_assert(kevo_relu::kernel_for(3, 22) == -1, \"outside the general kernel's conditions\");\n"
      << "static_assert(kevo_relu::k0::validated_workload(4096, 4096) == 0, \"the kernels stay reachable\");\n"
      << "int main() {\n  float* p = reinterpret_cast<float*>(256);\n"
      << "  std::printf(\"%d %d %zu %d\\n\", kevo_relu::kernel_for(5, 8), static_cast<int>(kevo_relu::run(p, p, 3, 22, 0)),\n"
      << "              kevo_relu::workspace_bytes(3, 22), static_cast<int>(cudaErrorInvalidValue));\n  return 0;\n}\n";
  int rc = 0;
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    const std::string cmd = nvcc() + " -std=c++17 -arch=" + arch + " -Xcompiler -Wall " + dir + "main.cu -o " + dir + "dispatch";
    const std::string log = shell(cmd, &rc);
    ASSERT_EQ(rc, 0) << "$ " << cmd << "\n" << log;
  }
  const std::string out = shell(dir + "dispatch", &rc);
  ASSERT_EQ(rc, 0) << out;
  int picked = -2, refused = 0, invalid = -1;
  size_t bytes = 1;
  ASSERT_EQ(std::sscanf(out.c_str(), "%d %d %zu %d", &picked, &refused, &bytes, &invalid), 4) << out;
  EXPECT_EQ(picked, 1);
  EXPECT_EQ(refused, invalid);
  EXPECT_EQ(bytes, 0u);
}

}  // namespace
}  // namespace kevo::store
