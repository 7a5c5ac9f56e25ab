// What a campaign file says about fitness: new campaigns record the workload-mix fitness, files of
// kevo before it read and report as they were measured (the geometric mean), replay re-derives
// the fitness under today's contracts, and the report's floor counts the plan's launches.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fitness.h"
#include "search/campaign.h"
#include "evaluators/recorded_measurements.h"
#include "search/results.h"
#include "store/campaign_file.h"
#include "tests/search/synthetic_evaluator.h"
#include "tests/support/temp_path.h"

namespace kevo::search {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";
// Written by kevo at a763362 (before the fitness was recorded): tests/data/campaigns/README.md.
const std::string kOldFile = kRoot + "tests/data/campaigns/geomean_v0_relu.h5";

std::string temp_path(const std::string& name) { return kevo::testing::fresh_temp_path("kevo_results", name); }

// The measured workloads' speedups of a measurement, as recorded.
double geometric_mean_of(const store::MeasurementRecord& m) {
  double logs = 0;
  for (const auto& w : m.workloads) logs += std::log(w.eager_ms / w.median_ms);
  return std::exp(logs / static_cast<double>(m.workloads.size()));
}

const store::MeasurementRecord& best_of(const store::CampaignContents& c) {
  const store::MeasurementRecord* best = nullptr;
  for (const auto& m : c.measurements)
    if (m.status == "ok" && (!best || m.fitness > best->fitness)) best = &m;
  EXPECT_NE(best, nullptr);
  return *best;
}

// A dispatcher over one campaign: per workload the correct variant measured fastest on it.
TEST(Results, PerWorkloadTheFastestCorrectVariantEachOnce) {
  const std::string file = kOldFile;
  const store::CampaignContents c = store::read_campaign(file);
  const std::vector<BestVariant> per = best_per_workload(c, file, "relu");
  ASSERT_FALSE(per.empty());
  std::map<int32_t, double> fastest;
  for (const auto& m : c.measurements)
    if (m.status == "ok" && m.fitness > 0)
      for (const auto& w : m.workloads)
        if (w.status == "ok" && w.median_ms > 0 && (!fastest.count(w.workload) || w.median_ms < fastest[w.workload]))
          fastest[w.workload] = w.median_ms;
  std::set<const store::VariantRecord*> seen;
  size_t covered = 0;
  for (const BestVariant& b : per) {
    EXPECT_TRUE(seen.insert(b.variant).second) << "each variant once";
    EXPECT_FALSE(b.source.empty());
    for (const auto& w : b.measurement->workloads)
      if (fastest.count(w.workload) && w.median_ms == fastest[w.workload]) ++covered;
  }
  EXPECT_EQ(covered, fastest.size()) << "every timed workload's fastest variant is among them";
  EXPECT_TRUE(best_per_workload(c, file, "no_such_task").empty());
}

TEST(Results, FilesBeforeTheFitnessRecordReportAsMeasured) {
  const store::CampaignContents c = store::read_campaign(kOldFile);
  EXPECT_EQ(c.fitness, "");
  const store::MeasurementRecord& best = best_of(c);
  ASSERT_EQ(best.workloads.size(), 2u);
  EXPECT_NEAR(best.fitness, geometric_mean_of(best), 1e-9 * best.fitness);  // what that kevo measured

  const store::ReportData d = report_data(c, kOldFile);
  EXPECT_EQ(d.fitness, kFitnessGeometricMean);
  ASSERT_EQ(d.tasks.size(), 1u);
  EXPECT_DOUBLE_EQ(d.tasks[0].best_fitness, best.fitness);
  EXPECT_NEAR(d.tasks[0].best_geometric_mean, best.fitness, 1e-9 * best.fitness);
  for (const store::WorkloadRow& w : d.tasks[0].workloads) EXPECT_TRUE(w.timed);
  EXPECT_EQ(store::report_json(d).at("fitness"), kFitnessGeometricMean);
  EXPECT_NE(store::render_html(d).find("geometric_mean_v0: the geometric mean"), std::string::npos);
}

TEST(Results, ACampaignOfAnotherFitnessIsNotContinued) {
  const std::string path = temp_path("old.h5");
  std::filesystem::copy_file(kOldFile, path);
  testing::SyntheticEvaluator ev;
  try {
    Campaign::resume(path, ev);
    FAIL() << "resumed a campaign measured with the geometric mean";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("measured with the fitness geometric_mean_v0"), std::string::npos) << e.what();
  }
}

TEST(Results, ReplayRederivesTheFitnessUnderTodaysContract) {
  const store::CampaignContents c = store::read_campaign(kOldFile);
  const store::MeasurementRecord& best = best_of(c);
  const store::VariantRecord* v = nullptr;
  for (const auto& x : c.variants)
    if (x.id == best.variant) v = &x;
  ASSERT_NE(v, nullptr);
  const Task old_contract = parse_task(c.tasks[0].contract, "old.json");
  const Task today = load_task(kRoot + "tasks/01_relu.json");
  ASSERT_FALSE(today.workloads[1].timed);  // the development task's small workload is checked only

  evaluators::RecordedMeasurements recorded({kOldFile});
  evaluators::EvalRequest r;
  r.space = v->space;
  r.genome = v->genome;
  r.source_hash = v->source_hash;
  const auto& w = best.workloads;
  r.task = &old_contract;  // every workload timed, weight 1: the time saved over both
  EXPECT_NEAR(recorded.answer(r).fitness, (w[0].eager_ms + w[1].eager_ms) / (w[0].median_ms + w[1].median_ms), 1e-12);
  r.task = &today;  // only the large workload's time counts
  EXPECT_NEAR(recorded.answer(r).fitness, w[0].eager_ms / w[0].median_ms, 1e-12);
  EXPECT_EQ(recorded.answer(r).workloads.size(), 2u);  // the checked workload's record stays
}

TEST(Results, NewCampaignsRecordTheWeightedFitnessAndALaunchAwareFloor) {
  const std::string path = temp_path("new.h5");
  CampaignConfig config;
  config.seed = 3;
  config.population = 4;
  config.islands = 1;
  config.budget_evals = 8;
  auto ev = evaluators::make_replay_evaluator({kRoot + "results/spaces/relu.h5"});
  Campaign::create(path, config, {kRoot + "tasks/01_relu.json"}, *ev, "test")->run();
  const store::CampaignContents c = store::read_campaign(path);
  EXPECT_EQ(c.fitness, kFitnessWeightedTime);
  const store::MeasurementRecord& best = best_of(c);
  ASSERT_EQ(best.workloads.size(), 2u);
  EXPECT_NEAR(best.fitness, best.workloads[0].eager_ms / best.workloads[0].median_ms, 1e-12);

  const store::ReportData d = report_data(c, path);
  EXPECT_EQ(d.fitness, kFitnessWeightedTime);
  ASSERT_EQ(d.tasks.size(), 1u);
  ASSERT_EQ(d.tasks[0].workloads.size(), 2u);
  const store::WorkloadRow& big = d.tasks[0].workloads[0];
  const store::WorkloadRow& small = d.tasks[0].workloads[1];
  EXPECT_TRUE(big.timed);
  EXPECT_FALSE(small.timed);
  EXPECT_EQ(big.launches, 1);  // an elementwise genome: one kernel
  // The small workload moves 2 MB (0.5 us at the DRAM floor) but its one launch costs more: the
  // floor is the launch's, and its measured microseconds sit near it, not at a fraction of 1%.
  EXPECT_DOUBLE_EQ(small.floor_ms, kLaunchFloorMs);
  EXPECT_GT(small.percent_of_floor, 30.0);
  EXPECT_LE(small.percent_of_floor, 100.0);
  EXPECT_GT(big.floor_ms, 1.0);  // the large workload's floor stays the DRAM floor (ms)
  const nlohmann::json j = store::report_json(d);
  EXPECT_EQ(j.at("fitness"), kFitnessWeightedTime);
  EXPECT_EQ(j.at("tasks")[0].at("workloads")[1].at("timed"), false);
  const store::ReportData back = store::report_from_json(j);
  EXPECT_EQ(back.fitness, kFitnessWeightedTime);
  EXPECT_FALSE(back.tasks[0].workloads[1].timed);
  EXPECT_EQ(back.tasks[0].workloads[0].launches, 1);
  EXPECT_NE(store::render_html(d).find("checked, not timed"), std::string::npos);
}

// A torch baseline finished after the campaign measured its tasks (issue 19: the baseline was cut
// by a deadline) joins at report time: best variants without torch.compile figures get the
// baseline's, and their best over torch.compile is the evaluator's (the geometric mean of
// torch.compile / best over the timed workloads); what the campaign measured stays.
TEST(Results, ATorchBaselineJoinsAtReportTime) {
  store::ReportData d;
  store::TaskSummary measured_without, measured_with, unknown;
  measured_without.task = "relu";
  measured_without.workloads = {{}, {}};
  measured_without.workloads[0].workload = 0;
  measured_without.workloads[0].best_ms = 1.0;
  measured_without.workloads[1].workload = 1;
  measured_without.workloads[1].best_ms = 0.002;
  measured_without.workloads[1].timed = false;  // checked only: not in the figure
  measured_with = measured_without;
  measured_with.task = "softmax";
  measured_with.workloads[0].compile_ms = 3.0;
  measured_with.best_vs_compile = 3.0;
  unknown.task = "gelu";  // no best variant
  d.tasks = {measured_without, measured_with, unknown};
  const std::string baseline = temp_path("baseline.json");
  nlohmann::json w0 = {{"index", 0}, {"compile", {{"status", "ok"}, {"median_ms", 4.0}}}};
  nlohmann::json w1 = {{"index", 1}, {"compile", {{"status", "ok"}, {"median_ms", 0.004}}}};
  nlohmann::json doc = {{"tool", "torch_baseline"},
                        {"gpu", "NVIDIA H100 80GB HBM3"},
                        {"tasks",
                         {{{"name", "relu"}, {"workloads", {w0, w1}}},
                          {{"name", "softmax"}, {"workloads", {w0, w1}}},
                          {{"name", "gelu"}, {"workloads", {w0}}}}}};
  std::ofstream(baseline) << doc.dump();
  EXPECT_EQ(join_torch_baseline(d, baseline), 2);
  EXPECT_DOUBLE_EQ(d.tasks[0].workloads[0].compile_ms, 4.0);
  EXPECT_DOUBLE_EQ(d.tasks[0].workloads[1].compile_ms, 0.004);
  EXPECT_DOUBLE_EQ(d.tasks[0].best_vs_compile, 4.0) << "the timed workload's torch.compile / best";
  EXPECT_DOUBLE_EQ(d.tasks[1].workloads[0].compile_ms, 3.0) << "a figure the campaign measured was replaced";
  EXPECT_DOUBLE_EQ(d.tasks[1].workloads[1].compile_ms, 0.004);
  EXPECT_DOUBLE_EQ(d.tasks[1].best_vs_compile, 3.0);
  EXPECT_TRUE(d.tasks[2].workloads.empty());
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes.back().find("NVIDIA H100 80GB HBM3"), std::string::npos) << d.notes.back();
  EXPECT_NE(d.notes.back().find("for 2 tasks"), std::string::npos) << d.notes.back();
  const std::string bad = temp_path("bad.json");
  std::ofstream(bad) << "{}";
  EXPECT_THROW(join_torch_baseline(d, bad), InputError);
}

}  // namespace
}  // namespace kevo::search
