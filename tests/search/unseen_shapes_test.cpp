// Unseen shapes for a shape-general export: drawn inside the contract's axis ranges, never a
// workload, the awkward ones first (1, the largest allowed, odd sizes), only those the header would
// accept, within the byte cap, the same for a seed; a template variant's conditions come from its
// genome, a free-form variant has none; the verification task checks them without timing.
#include "lower/lower.h"
#include "search/unseen_shapes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/error.h"
#include "mutate/space.h"

namespace kevo::search {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

// relu over [B, D]: D up to 2^20 in multiples of 4; B defaults to 1 ... 64.
const char* kRelu = R"({
  "name": "relu",
  "axes": {"B": {"type": "var"}, "D": {"type": "var", "min": 4, "max": 1048576, "multiple_of": 4}},
  "inputs": {"x": {"shape": ["B", "D"], "dtype": "float32"}},
  "outputs": {"y": {"shape": ["B", "D"], "dtype": "float32"}},
  "reference": "def run(x):\n    return torch.relu(x)\n",
  "workloads": [{"B": 64, "D": 4096}, {"B": 3, "D": 20}]
})";

TEST(UnseenShapes, DrawnInsideTheRangesNeverAWorkloadAwkwardFirstAndTheSameForASeed) {
  Task t = parse_task(kRelu, "relu.json");
  UnseenShapeOptions o;
  o.count = 20;
  std::vector<AxisValues> shapes = draw_unseen_shapes(t, [](const AxisValues&) { return true; }, o);
  ASSERT_EQ(shapes.size(), 20u);
  std::set<AxisValues> distinct(shapes.begin(), shapes.end());
  EXPECT_EQ(distinct.size(), shapes.size());
  for (const AxisValues& s : shapes) {
    EXPECT_TRUE(t.axes[0].admits(s.at("B")) && t.axes[1].admits(s.at("D"))) << shape_text(t, s);
    for (const Workload& w : t.workloads) EXPECT_NE(s, w.axes) << "a workload is not unseen";
  }
  auto has = [&](const char* axis, int64_t v) {
    return std::any_of(shapes.begin(), shapes.end(), [&](const AxisValues& s) { return s.at(axis) == v; });
  };
  EXPECT_TRUE(has("B", 1)) << "one row";
  EXPECT_TRUE(has("B", 64)) << "B's largest allowed (its largest workload: no max declared)";
  EXPECT_TRUE(has("D", 1048576)) << "D's declared max";
  EXPECT_TRUE(has("D", 4)) << "D's min";
  EXPECT_TRUE(std::any_of(shapes.begin(), shapes.end(), [](const AxisValues& s) { return s.at("B") % 2 == 1 && s.at("B") > 1; }))
      << "an odd size";
  EXPECT_EQ(draw_unseen_shapes(t, [](const AxisValues&) { return true; }, o), shapes) << "deterministic";
  o.seed = 2;
  EXPECT_NE(draw_unseen_shapes(t, [](const AxisValues&) { return true; }, o), shapes) << "the random ones follow the seed";
}

TEST(UnseenShapes, OnlyAdmittedShapesWithinTheByteCap) {
  Task t = parse_task(kRelu, "relu.json");
  UnseenShapeOptions o;
  o.count = 30;
  o.max_bytes = 2 * 4 * 64 * 8192;  // x and y, float32, up to 64 x 8192
  std::vector<AxisValues> shapes =
      draw_unseen_shapes(t, [](const AxisValues& s) { return s.at("D") % 8 == 0; }, o);
  ASSERT_FALSE(shapes.empty());
  for (const AxisValues& s : shapes) {
    EXPECT_EQ(s.at("D") % 8, 0) << shape_text(t, s);
    EXPECT_LE(2 * 4 * s.at("B") * s.at("D"), o.max_bytes) << shape_text(t, s);
  }
  EXPECT_TRUE(draw_unseen_shapes(t, [](const AxisValues&) { return false; }, o).empty());
}

const char* kCopy = R"src(/* kevo-plan
{"plan": {"steps": [{"kernel": "relu_rows", "grid": ["B"], "block": [256], "args": ["x", "y", {"int": "D"}]}]}}
*/
__global__ void relu_rows(const float* x, float* y, int d) {
  for (int c = threadIdx.x; c < d; c += 256) y[blockIdx.x * (long long)d + c] = fmaxf(x[blockIdx.x * (long long)d + c], 0.f);
}
)src";

TEST(UnseenShapes, TheHeaderAdmitsOnlyShapesInsideRangesPlanLimitsAndTheKernelsConditions) {
  Task t = parse_task(kRelu, "relu.json");
  Candidate c = parse_candidate(kCopy, "relu_rows.cu", t);
  const std::vector<ShapeCondition> kernel = {{"D % 16", "==", "0", "vectors of 16"}};
  EXPECT_TRUE(header_admits(t, c, kernel, {{"B", 5}, {"D", 32}}));
  EXPECT_FALSE(header_admits(t, c, kernel, {{"B", 5}, {"D", 36}})) << "the kernel's condition";
  EXPECT_FALSE(header_admits(t, c, kernel, {{"B", 65}, {"D", 32}})) << "B above its range";
  EXPECT_FALSE(header_admits(t, c, kernel, {{"B", 5}, {"D", 30}})) << "D off its multiple";
  EXPECT_TRUE(header_admits(t, c, {}, {{"B", 5}, {"D", 36}}));
}

TEST(UnseenShapes, ATemplateVariantGetsItsGenomesConditionsAFreeFormOneNone) {
  Task t = load_task(kRoot + "tasks/01_relu.json");
  auto spaces = lower::lower(t);
  ASSERT_FALSE(spaces.empty());
  std::mt19937_64 rng(7);
  mutate::Genome g = spaces.front()->random_genome(rng);
  store::VariantRecord v;
  v.space = g.space;
  v.genome = g.values;
  ShapeConditions from_record = kernel_conditions(t, v);
  ShapeConditions direct = mutate::shape_conditions(*spaces.front(), g);
  ASSERT_EQ(from_record.conditions.size(), direct.conditions.size());
  for (size_t i = 0; i < direct.conditions.size(); ++i) EXPECT_EQ(from_record.conditions[i].text(), direct.conditions[i].text());
  store::VariantRecord free_form;
  EXPECT_TRUE(kernel_conditions(t, free_form).conditions.empty());
  EXPECT_TRUE(kernel_conditions(t, free_form).pinned.empty());
  v.space = "no_such_space";
  EXPECT_FALSE(kernel_conditions(t, v).pinned.empty()) << "a space this kevo does not lower cannot be trusted";
}

TEST(UnseenShapes, TheVerificationTaskChecksEveryShapeWithoutTiming) {
  Task t = parse_task(kRelu, "relu.json");
  Task checked = with_checked_shapes(t, {{{"B", 1}, {"D", 4}}, {{"B", 7}, {"D", 1048576}}});
  ASSERT_EQ(checked.workloads.size(), 2u);
  for (const Workload& w : checked.workloads) EXPECT_FALSE(w.timed);
  EXPECT_EQ(checked.workloads[1].axes.at("D"), 1048576);
  EXPECT_EQ(checked.shape_of(checked.outputs[0], checked.workloads[1]), (Shape{7, 1048576}));
}

TEST(UnseenShapes, AContractLendsItsRangesToTheSameTaskRecordedWithoutThem) {
  Task recorded = parse_task(R"({
  "name": "relu",
  "axes": {"B": {"type": "var"}, "D": {"type": "var"}},
  "inputs": {"x": {"shape": ["B", "D"], "dtype": "float32"}},
  "outputs": {"y": {"shape": ["B", "D"], "dtype": "float32"}},
  "reference": "def run(x):\n    return torch.relu(x)\n",
  "workloads": [{"B": 64, "D": 4096}, {"B": 3, "D": 20}]
})", "campaign.json");
  EXPECT_EQ(recorded.axes[1].max, 4096);
  Task with = parse_task(kRelu, "relu.json");
  take_axis_ranges(recorded, with);
  EXPECT_EQ(recorded.axes[1].max, 1048576);
  EXPECT_EQ(recorded.axes[1].multiple_of, 4);
  EXPECT_TRUE(recorded.axes[1].declared);
  Task other = load_task(kRoot + "tasks/01_relu.json");  // the same name, other workloads
  try {
    take_axis_ranges(recorded, other);
    ADD_FAILURE() << "other workloads must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("other workloads"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kevo::search
