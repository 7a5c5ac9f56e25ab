// A shape-general export's verification as `kevo export --general` runs it, its checker stood in
// for the GPU: every unseen shape checked ok is verified; one whose check cannot tell (unverifiable)
// is left out and the shapes after it are checked again; a failing shape refuses the export, named;
// an export with nothing verified is refused.
#include "search/general_export.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/error.h"

namespace kevo::search {
namespace {

const char* kRelu = R"({
  "name": "relu",
  "axes": {"B": {"type": "var", "min": 1, "max": 64}, "D": {"type": "var", "min": 4, "max": 4096, "multiple_of": 4}},
  "inputs": {"x": {"shape": ["B", "D"], "dtype": "float32"}},
  "outputs": {"y": {"shape": ["B", "D"], "dtype": "float32"}},
  "reference": "def run(x):\n    return torch.relu(x)\n",
  "workloads": [{"B": 64, "D": 4096}, {"B": 3, "D": 20}]
})";

const char* kRows = R"src(/* kevo-plan
{"plan": {"steps": [{"kernel": "relu_rows", "grid": ["B"], "block": [256], "args": ["x", "y", {"int": "D"}]}]}}
*/
__global__ void relu_rows(const float* x, float* y, int d) {
  for (int c = threadIdx.x; c < d; c += 256) y[blockIdx.x * (long long)d + c] = fmaxf(x[blockIdx.x * (long long)d + c], 0.f);
}
)src";

// A stand-in checker: the status of each shape by its index among the shapes first drawn (ok where
// not given); as eval::Runner, it stops at the first workload that is not ok. Records how many
// shapes each call was asked to check.
struct Checker {
  std::vector<eval::EvalStatus> by_shape;
  std::vector<size_t> asked;
  size_t drawn = 0;

  eval::Measurement operator()(const Task& checked) {
    if (asked.empty()) drawn = checked.workloads.size();
    asked.push_back(checked.workloads.size());
    const size_t offset = drawn - checked.workloads.size();  // the shapes left are the last ones drawn
    eval::Measurement m;
    m.status = eval::EvalStatus::Ok;
    for (size_t w = 0; w < checked.workloads.size(); ++w) {
      eval::WorkloadMeasurement wm;
      wm.workload = static_cast<int>(w);
      wm.status = offset + w < by_shape.size() ? by_shape[offset + w] : eval::EvalStatus::Ok;
      m.workloads.push_back(wm);
      if (wm.status != eval::EvalStatus::Ok) {
        m.status = wm.status;
        m.error = "workload " + std::to_string(w);
        break;
      }
    }
    return m;
  }
};

struct Fixture {
  Task task = parse_task(kRelu, "relu.json");
  Candidate candidate = parse_candidate(kRows, "relu_rows.cu", task);
  store::VariantRecord free_form;  // no genome: no kernel conditions
  GeneralExportOptions options;
  Fixture() { options.draw.count = 6; }
  store::ExportShapes verify(Checker& checker) {
    return verify_unseen_shapes(task, candidate, free_form, options, std::ref(checker), [] { return "stand-in"; });
  }
};

TEST(GeneralExport, EveryShapeCheckedOkIsVerifiedInOneCheck) {
  Fixture f;
  Checker checker;
  const store::ExportShapes s = f.verify(checker);
  EXPECT_TRUE(s.general);
  EXPECT_EQ(s.verified.size(), 6u);
  EXPECT_EQ(checker.asked, (std::vector<size_t>{6}));
  EXPECT_EQ(s.verified_on.rfind("stand-in, ", 0), 0u) << s.verified_on;
}

TEST(GeneralExport, AnUnverifiableShapeIsLeftOutAndTheShapesAfterItCheckedAgain) {
  Fixture f;
  Checker checker;
  checker.by_shape.assign(6, eval::EvalStatus::Ok);
  checker.by_shape[2] = eval::EvalStatus::Unverifiable;
  const store::ExportShapes s = f.verify(checker);
  EXPECT_EQ(s.verified.size(), 5u);
  EXPECT_EQ(checker.asked, (std::vector<size_t>{6, 3})) << "shapes 0-1 verified, 2 left out, 3-5 checked again";
  EXPECT_NE(s.verified_on.find("1 more too small for the check to tell"), std::string::npos) << s.verified_on;
}

TEST(GeneralExport, AFailingShapeRefusesTheExportNamingIt) {
  Fixture f;
  Checker checker;
  checker.by_shape.assign(6, eval::EvalStatus::Ok);
  checker.by_shape[1] = eval::EvalStatus::WrongResult;
  try {
    f.verify(checker);
    ADD_FAILURE() << "a wrong output on an unseen shape must refuse the export";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("fails on the unseen shape"), std::string::npos) << what;
    EXPECT_NE(what.find("drop --general"), std::string::npos) << what;
  }
}

TEST(GeneralExport, NothingVerifiedIsRefused) {
  Fixture f;
  Checker checker;
  checker.by_shape.assign(6, eval::EvalStatus::Unverifiable);
  EXPECT_THROW(f.verify(checker), InputError);
  EXPECT_EQ(checker.asked, (std::vector<size_t>{6, 5, 4, 3, 2, 1})) << "each shape left out in turn";
}

}  // namespace
}  // namespace kevo::search
