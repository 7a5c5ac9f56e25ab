// The resolved plan the engine sends a GPU worker survives the trip through JSON unchanged, for
// kernel steps with typed arguments and for library steps; a damaged one is refused.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/candidate.h"
#include "core/plan_json.h"
#include "core/task.h"

namespace kevo {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

void expect_round_trip(const std::string& task_file, const std::string& candidate_file) {
  Task task = load_task(kRoot + task_file);
  Candidate c = load_candidate(kRoot + candidate_file, task);
  for (const Workload& w : task.workloads) {
    ResolvedPlan plan = resolve_plan(c, task, w, DeviceLimits{});
    nlohmann::json j = resolved_plan_to_json(plan);
    ResolvedPlan back = resolved_plan_from_json(nlohmann::json::parse(j.dump()));
    EXPECT_EQ(resolved_plan_to_json(back), j) << candidate_file;
    ASSERT_EQ(back.buffers.size(), plan.buffers.size());
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      EXPECT_EQ(back.buffers[i].bytes, plan.buffers[i].bytes);
      EXPECT_EQ(back.buffers[i].role, plan.buffers[i].role);
      EXPECT_EQ(back.buffers[i].shape, plan.buffers[i].shape);
    }
    ASSERT_EQ(back.steps.size(), plan.steps.size());
  }
}

TEST(PlanJson, KernelAndLibraryPlansRoundTrip) {
  expect_round_trip("tasks/03_softmax.json", "tests/data/candidates/softmax.cu");
  expect_round_trip("tasks/13_linear_leaky_relu.json", "tests/data/candidates/linear_leaky_relu.json");
  expect_round_trip("tasks/01_relu.json", "tests/data/planted/relu_skip_when_timed.cu");
}

// The cuBLASLt algorithm index travels with the matmul, and so does -1 (autotuned); any other
// negative one, or a missing one, is refused.
TEST(PlanJson, MatmulAlgorithmIndexRoundTrips) {
  Task task = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  Candidate c = load_candidate(kRoot + "tests/data/candidates/linear_leaky_relu.json", task);
  ResolvedPlan plan = resolve_plan(c, task, task.workloads[0], DeviceLimits{});
  EXPECT_EQ(std::get<ResolvedMatmul>(plan.steps[0]).call.algo, 0);
  for (int64_t algo : {int64_t{3}, kAutotunedAlgo}) {
    std::get<ResolvedMatmul>(plan.steps[0]).call.algo = algo;
    nlohmann::json j = resolved_plan_to_json(plan);
    EXPECT_EQ(j["steps"][0]["algo"], algo);
    EXPECT_EQ(std::get<ResolvedMatmul>(resolved_plan_from_json(j).steps[0]).call.algo, algo);
  }
  nlohmann::json j = resolved_plan_to_json(plan);
  nlohmann::json negative = j, missing = j;
  negative["steps"][0]["algo"] = -2;
  missing["steps"][0].erase("algo");
  try {
    resolved_plan_from_json(negative);
    ADD_FAILURE() << "algo -2 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "cuBLASLt algorithm -2: expected an index into the heuristic's list (0 or more) or -1 (autotuned)");
  }
  EXPECT_THROW(resolved_plan_from_json(missing), std::invalid_argument);
}

// cuBLASLt's emulation strategy travels with the matmul; a value outside cuBLAS's is refused.
TEST(PlanJson, MatmulEmulationRoundTrips) {
  Task task = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  Candidate c = load_candidate(kRoot + "tests/data/candidates/linear_leaky_relu.json", task);
  ResolvedPlan plan = resolve_plan(c, task, task.workloads[0], DeviceLimits{});
  EXPECT_EQ(std::get<ResolvedMatmul>(plan.steps[0]).call.emulation, Emulation::Off);
  for (Emulation e : {Emulation::Off, Emulation::Performant, Emulation::Eager}) {
    std::get<ResolvedMatmul>(plan.steps[0]).call.emulation = e;
    const nlohmann::json j = nlohmann::json::parse(resolved_plan_to_json(plan).dump());
    EXPECT_EQ(j["steps"][0]["emulation"], static_cast<int>(e));
    EXPECT_EQ(std::get<ResolvedMatmul>(resolved_plan_from_json(j).steps[0]).call.emulation, e);
  }
  nlohmann::json bad = resolved_plan_to_json(plan), missing = bad;
  bad["steps"][0]["emulation"] = 3;
  missing["steps"][0].erase("emulation");
  try {
    resolved_plan_from_json(bad);
    ADD_FAILURE() << "emulation 3 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "cuBLASLt emulation 3: expected 0 (off), 1 (performant) or 2 (eager)");
  }
  EXPECT_THROW(resolved_plan_from_json(missing), std::invalid_argument);
}

// A strided batch (torch.bmm) travels with the matmul: the worker runs every product, not the
// first alone; a batch of none, or a negative stride, is refused.
TEST(PlanJson, MatmulStridedBatchRoundTrips) {
  Task task = load_task(kRoot + "tests/data/tasks/bmm_transposed_b_bias_relu.json");
  Candidate c = parse_candidate(R"({"source": "__global__ void unused() {}\n", "plan": {"steps": [{"library":
    "cublaslt.matmul", "a": "q", "b": "k", "d": "y", "bias": "bias", "transpose_b": true, "epilogue": "bias_relu"}]}})",
                                "bmm.json", task);
  ResolvedPlan plan = resolve_plan(c, task, task.workloads[0], DeviceLimits{});
  const auto& sent = std::get<ResolvedMatmul>(plan.steps[0]);
  ASSERT_EQ(sent.batch, 16);
  const nlohmann::json j = nlohmann::json::parse(resolved_plan_to_json(plan).dump());
  const ResolvedPlan back = resolved_plan_from_json(j);
  const auto& got = std::get<ResolvedMatmul>(back.steps[0]);
  EXPECT_EQ(got.batch, sent.batch);
  EXPECT_EQ(got.stride_a, sent.stride_a);
  EXPECT_EQ(got.stride_b, sent.stride_b);
  for (const auto& [key, value] : {std::pair{"batch", 0}, std::pair{"stride_b", -1}}) {
    nlohmann::json bad = j;
    bad["steps"][0][key] = value;
    EXPECT_THROW(resolved_plan_from_json(bad), std::invalid_argument) << key << " " << value;
  }
  nlohmann::json missing = j;
  missing["steps"][0].erase("batch");
  EXPECT_THROW(resolved_plan_from_json(missing), std::invalid_argument);
}

TEST(PlanJson, DamagedPlansAreRefused) {
  Task task = load_task(kRoot + "tasks/03_softmax.json");
  Candidate c = load_candidate(kRoot + "tests/data/candidates/softmax.cu", task);
  nlohmann::json good = resolved_plan_to_json(resolve_plan(c, task, task.workloads[0], DeviceLimits{}));
  auto damaged = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    return j;
  };
  const std::vector<nlohmann::json> bad = {
      damaged([](nlohmann::json& j) { j.erase("steps"); }),
      damaged([](nlohmann::json& j) { j["buffers"][0]["role"] = "sideways"; }),
      damaged([](nlohmann::json& j) { j["buffers"][0]["dtype"] = "float7"; }),
      damaged([](nlohmann::json& j) { j["buffers"][0]["bytes"] = -4; }),
      damaged([](nlohmann::json& j) { j["steps"][0]["args"][0]["buffer"] = 9; }),
      damaged([](nlohmann::json& j) { j["steps"][0]["args"][0]["kind"] = "pointer"; }),
      damaged([](nlohmann::json& j) { j["steps"][0]["grid"] = "many"; }),
      damaged([](nlohmann::json& j) { j["steps"][0] = {{"library", "cufft.plan"}, {"names", {"a", "b", "c", ""}}}; }),
  };
  for (const nlohmann::json& j : bad) EXPECT_THROW(resolved_plan_from_json(j), std::invalid_argument) << j.dump();
}

}  // namespace
}  // namespace kevo
