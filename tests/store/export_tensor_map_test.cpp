// Exported headers whose plans pass tensor maps: the launcher encodes each one with the runtime's
// encode_tensor_map over the plan's buffer, sizes, byte strides, box and swizzle, and the header
// (no -lcuda) compiles with nvcc for sm_90a (a gemm TMA instance) and for sm_90a and sm_100a (a
// hand-written kernel taking a tensor map, since the gemm family's TMA path is sm_90a's).
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include "core/candidate.h"
#include "core/task.h"
#include "lower/lower.h"
#include "mutate/space.h"
#include "store/export.h"
#include "tests/store/exported_headers.h"

namespace kevo::store {
namespace {

using namespace testing;

const Task& bf16_linear() {
  static const Task t = load_task(kRoot + "tests/data/tasks/linear_bf16_gelu.json");
  return t;
}

// Compiles a program that includes `header` and calls its launcher, for `arch`; "" or the log.
std::string compile_for(const std::string& name, const std::string& header, const std::string& arch) {
  const std::string dir = make_dir(name + "_" + arch);
  std::ofstream(dir + "h.cuh") << header;
  std::ofstream(dir + "main.cu") << "#include \"h.cuh\"\n"
                                 << "int main() {\n  __nv_bfloat16* p = nullptr;\n"
                                 << "  return kevo_linear_bf16_gelu::run(p, p, p, p, 24, 64, 80, 0) == cudaSuccess;\n}\n";
  int rc = 0;
  // -gencode, not -arch: nvcc 13's -arch=sm_90a also embeds compute_90 PTX, where sm_90a-only code stops.
  const std::string gencode = " -gencode=arch=compute_" + arch.substr(3) + ",code=" + arch;
  const std::string cmd = nvcc() + " -std=c++17" + gencode + " -Xcompiler -Wall,-Wextra,-Wshadow -c " + dir +
                          "main.cu -o " + dir + "main.o";
  const std::string log = shell(cmd, &rc);
  return rc == 0 ? "" : "$ " + cmd + "\n" + log;
}

TEST(ExportTensorMap, AGemmTmaInstanceEncodesItsTensorMapsAndCompiles) {
  const Task& task = bf16_linear();
  std::unique_ptr<mutate::DesignSpace> space;
  for (auto& s : lower::lower(task, "sm_90a"))
    if (s->manifest().family == "gemm") space = std::move(s);
  ASSERT_NE(space, nullptr);
  std::mt19937_64 rng(5);
  mutate::Genome g = space->random_genome(rng);
  for (int i = 0; i < 20000 && g.values[static_cast<size_t>(space->manifest().knob("kLoad"))] != 1; ++i)
    g = space->random_genome(rng);
  ASSERT_EQ(g.values[static_cast<size_t>(space->manifest().knob("kLoad"))], 1);
  const int64_t bm = g.values[static_cast<size_t>(space->manifest().knob("kBM"))];
  Candidate c = parse_candidate(space->render(g), g.to_string() + ".cu", task);
  const std::string h = export_header(task, c, provenance(task, "tma"));
  EXPECT_NE(h.find("#include <cuda.h>"), std::string::npos);
  EXPECT_NE(h.find("#define KEVO_EXPORT_TENSOR_MAP_V1"), std::string::npos);
  // A as [K, M] with box [64, kBM]: bf16 (CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9), rows K * 2 bytes apart.
  EXPECT_NE(h.find("const uint64_t dims[] = {uint64_t(K), uint64_t(M)};"), std::string::npos) << h;
  EXPECT_NE(h.find("const uint64_t stride_bytes[] = {uint64_t(K) * 2};"), std::string::npos) << h;
  EXPECT_NE(h.find("const uint32_t box[] = {64u, " + std::to_string(bm) + "u};"), std::string::npos) << h;
  EXPECT_NE(h.find("= kevo_export::encode_tensor_map(&arg0, 9, 2, x, dims, stride_bytes, box, 128);"), std::string::npos) << h;
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  EXPECT_EQ(compile_for("gemm_tma", h, "sm_90a"), "");
}

// A kernel of its own taking the tensor map (any architecture with TMA): the header builds for
// Hopper and Blackwell alike.
TEST(ExportTensorMap, AHandWrittenTensorMapKernelCompilesForHopperAndBlackwell) {
  const Task& task = bf16_linear();
  const std::string src = R"src(/* kevo-plan
{"plan": {"steps": [{"kernel": "first_tile", "grid": [1], "block": [128],
  "args": [{"tensor_map": {"buffer": "W", "dims": ["K", "N"], "strides": ["K"], "box": [64, 16], "swizzle": 128}}, "y", {"int": "N"}]}]}}
*/
struct alignas(64) Map { unsigned long long opaque[16]; };
__global__ void first_tile(const __grid_constant__ Map w, __nv_bfloat16* y, int n) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(&w)) : "memory");
  if (threadIdx.x < n) y[threadIdx.x] = __float2bfloat16(0.f);
}
)src";
  Candidate c = parse_candidate(src, "first_tile.cu", task);
  const std::string h = export_header(task, c, provenance(task, "hand"));
  EXPECT_NE(h.find("const uint64_t stride_bytes[] = {uint64_t(K) * 2};"), std::string::npos) << h;
  EXPECT_NE(h.find("encode_tensor_map(&arg0, 9, 2, W, dims, stride_bytes, box, 128);"), std::string::npos) << h;
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc at '" << nvcc() << "'";
  for (const char* arch : {"sm_90a", "sm_100a"}) EXPECT_EQ(compile_for("hand", h, arch), "") << arch;
}

}  // namespace
}  // namespace kevo::store
