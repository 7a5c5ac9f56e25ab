// Tensor-map plan arguments: a plan's TMA descriptors resolve per workload to the sizes, byte
// strides, box and swizzle the evaluator encodes (and survive the trip to the GPU worker); every
// value cuTensorMapEncodeTiled would refuse, or that would reach outside the buffer, is one precise line.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "core/candidate.h"
#include "core/plan_json.h"
#include "core/tensor_map.h"

namespace kevo {
namespace {

const std::string kRoot = KEVO_SOURCE_ROOT;

const Task& linear() {
  static const Task t = load_task(kRoot + "/tasks/13_linear_leaky_relu.json");
  return t;
}

// x is [M, K] fp32, W is [N, K]; workloads (M, K, N) = (1024, 8192, 8192) and (16, 256, 128).
std::string plan_with(const std::string& map_a, const std::string& map_b = R"({"buffer": "W", "dims": ["K", "N"], "box": [32, 64]})") {
  return R"({"source": "__global__ void k(const __grid_constant__ T a, const __grid_constant__ T b, float* y) {}\n",
  "plan": {"steps": [{"kernel": "k", "grid": [1], "block": [128],
    "args": [{"tensor_map": )" + map_a + R"(}, {"tensor_map": )" + map_b + R"(}, "y"]}]}})";
}

std::string error_of(const std::string& text) {
  try {
    Candidate c = parse_candidate(text, "c.json", linear());
    for (const Workload& w : linear().workloads) resolve_plan(c, linear(), w, {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TensorMap, ResolvesToTheSizesStridesAndBoxOfEachWorkload) {
  const std::string text =
      plan_with(R"({"buffer": "x", "dtype": "float32", "dims": ["K", "M"], "box": [32, 128], "swizzle": 128})");
  Candidate c = parse_candidate(text, "c.json", linear());
  const auto& arg = std::get<KernelStep>(c.plan.steps[0].op).args[0];
  ASSERT_EQ(arg.kind, ArgKind::TensorMap);
  EXPECT_EQ(arg.tensor_map.buffer, "x");
  for (size_t w = 0; w < 2; ++w) {
    const int64_t m = w == 0 ? 1024 : 16, k = w == 0 ? 8192 : 256;
    ResolvedPlan p = resolve_plan(c, linear(), linear().workloads[w], {});
    const ResolvedArg& a = std::get<ResolvedKernel>(p.steps[0]).args[0];
    ASSERT_EQ(a.kind, ArgKind::TensorMap);
    EXPECT_EQ(p.buffers[static_cast<size_t>(a.buffer)].name, "x");
    const ResolvedTensorMap& t = a.tensor_map;
    EXPECT_EQ(t.dtype, DType::Float32);
    EXPECT_EQ(t.rank, 2);
    EXPECT_EQ(t.dims[0], uint64_t(k));
    EXPECT_EQ(t.dims[1], uint64_t(m));
    EXPECT_EQ(t.stride_bytes[0], uint64_t(k * 4));  // packed: a row of K floats
    EXPECT_EQ(t.box[0], 32u);
    EXPECT_EQ(t.box[1], 128u);
    EXPECT_EQ(t.swizzle, 128);
    // The GPU worker receives the same descriptor values.
    const ResolvedPlan back = resolved_plan_from_json(resolved_plan_to_json(p));
    const ResolvedTensorMap& r = std::get<ResolvedKernel>(back.steps[0]).args[0].tensor_map;
    EXPECT_EQ(std::get<ResolvedKernel>(back.steps[0]).args[0].kind, ArgKind::TensorMap);
    EXPECT_EQ(r.dims, t.dims);
    EXPECT_EQ(r.stride_bytes, t.stride_bytes);
    EXPECT_EQ(r.box, t.box);
    EXPECT_EQ(r.swizzle, 128);
    EXPECT_EQ(r.rank, 2);
  }
}

TEST(TensorMap, ExplicitStridesDescribeAView) {
  // The first K/2 columns of x: rows still K apart.
  Candidate c = parse_candidate(plan_with(R"({"buffer": "x", "dims": ["K // 2", "M"], "strides": ["K"], "box": [32, 64]})"),
                                "c.json", linear());
  ResolvedPlan p = resolve_plan(c, linear(), linear().workloads[1], {});
  const ResolvedTensorMap& t = std::get<ResolvedKernel>(p.steps[0]).args[0].tensor_map;
  EXPECT_EQ(t.dims[0], 128u);
  EXPECT_EQ(t.stride_bytes[0], 256u * 4);
}

struct Bad {
  std::string map, expected;
};

class BadTensorMap : public ::testing::TestWithParam<Bad> {};

TEST_P(BadTensorMap, IsOneLineNamingTheField) {
  const std::string got = error_of(plan_with(GetParam().map));
  EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  EXPECT_NE(got.find(GetParam().expected), std::string::npos) << got;
}

INSTANTIATE_TEST_SUITE_P(
    Plans, BadTensorMap,
    ::testing::Values(
        Bad{R"({"buffer": "z", "dims": ["K", "M"], "box": [32, 64]})", "args[0].tensor_map.buffer: unknown buffer 'z'"},
        Bad{R"({"buffer": "x", "dtype": "bfloat16", "dims": ["K", "M"], "box": [32, 64]})",
            "tensor_map.dtype: 'x' holds float32, not bfloat16"},
        Bad{R"({"buffer": "x", "dims": [], "box": []})", "tensor_map.dims: must be an array of 1 to 5 entries"},
        Bad{R"({"buffer": "x", "dims": [1, 1, 1, 1, 1, 1], "box": [4, 1, 1, 1, 1, 1]})",
            "tensor_map.dims: must be an array of 1 to 5 entries"},
        Bad{R"({"buffer": "x", "dims": ["K", "M"], "box": [32]})", "tensor_map.box: has 1 entries but 'dims' has 2"},
        Bad{R"({"buffer": "x", "dims": ["K", "M"], "box": [32, 512]})",
            "tensor_map.box[1]: must be an integer from 1 to 256, got 512"},
        Bad{R"({"buffer": "x", "dims": ["K", "M"], "box": [6, 64]})",
            "tensor_map.box[0]: 6 elements of float32 are 24 bytes; TMA moves rows of a multiple of 16 bytes"},
        Bad{R"({"buffer": "x", "dims": ["K", "M"], "box": [64, 64], "swizzle": 128})",
            "tensor_map.swizzle: a 128-byte swizzle takes box rows of at most 128 bytes; box[0] is 256 bytes"},
        Bad{R"({"buffer": "x", "dims": ["K", "M"], "box": [32, 64], "swizzle": 96})",
            "tensor_map.swizzle: must be 0 (none), 32, 64 or 128 (bytes), got 96"},
        Bad{R"({"buffer": "x", "dims": ["K", "M"], "strides": ["K", 1], "box": [32, 64]})",
            "tensor_map.strides: must be an array of 1 strides in elements"},
        Bad{R"({"buffer": "x", "dims": ["K", "M"], "box": [32, 64], "fill": 0})", "unknown field 'fill'"},
        Bad{R"({"buffer": "x", "dims": ["Q", "M"], "box": [32, 64]})", "tensor_map.dims[0]: unknown axis 'Q'"},
        // Per workload: a stride TMA cannot take, and views that reach past the buffer.
        Bad{R"({"buffer": "x", "dims": ["K", "M"], "strides": ["K + 1"], "box": [32, 64]})",
            "the stride of dims[1] is 8193 elements (32772 bytes): TMA needs a positive multiple of 16 bytes below 2^40"},
        Bad{R"({"buffer": "x", "dims": ["K", "M + 1"], "box": [32, 64]})",
            "the tensor map reaches element 8396799 of 'x', which holds 8388608"},
        Bad{R"({"buffer": "x", "dims": ["K", "M"], "strides": ["2 * K"], "box": [32, 64]})", "of 'x', which holds"},
        Bad{R"({"buffer": "x", "dims": ["K - 256", "M"], "box": [32, 64]})",
            "dims[0] = 0: a tensor map's sizes are 1 to 2^32 (workload 1)"}));

TEST(TensorMap, BoolBuffersAreRefused) {
  EXPECT_FALSE(tensor_map_dtype_supported(DType::Bool));
  EXPECT_TRUE(tensor_map_dtype_supported(DType::BFloat16));
  EXPECT_EQ(tensor_map_data_type(DType::BFloat16), 9);  // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  EXPECT_EQ(tensor_map_data_type(DType::Float16), 6);
  EXPECT_EQ(tensor_map_data_type(DType::Float32), 7);
}

// A tensor map is a 128-byte parameter: the plan's arguments must fit CUDA's 32,764 bytes with it counted so.
TEST(TensorMap, CountsAsA128ByteParameterAgainstTheParameterSpace) {
  auto plan = [](int plain) {
    std::string args;
    for (int i = 0; i < plain; ++i) args += R"(, "y")";
    return R"({"source": "__global__ void k(const __grid_constant__ T a, const __grid_constant__ T b, float* y) {}\n",
  "plan": {"steps": [{"kernel": "k", "grid": [1], "block": [128],
    "args": [{"tensor_map": {"buffer": "x", "dims": ["K", "M"], "box": [32, 128]}}, {"tensor_map": {"buffer": "W", "dims": ["K", "N"], "box": [32, 64]}})" +
           args + "]}]}}";
  };
  EXPECT_EQ(error_of(plan(4063)), "(no error)") << "2 x 128 + 4,063 x 8 = 32,760 bytes";
  const std::string e = error_of(plan(4064));
  EXPECT_NE(e.find("32768 bytes of arguments; a kernel takes at most 32764 (a tensor map is 128)"), std::string::npos) << e;
}

}  // namespace
}  // namespace kevo
