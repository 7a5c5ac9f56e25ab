// Ablations as users rely on them: one run per (task, arm, seed), each proposing what the ordinary
// campaign of that arm and seed proposes, resumable after a crash; and the statistics of the report
// (bootstrap bands, evaluations to 95% of the best, the pairing with random) computed right.
#include <gtest/gtest.h>

#include <unistd.h>

#include <tuple>

#include "search/ablation.h"
#include "search/campaign.h"
#include "search/results.h"
#include "store/campaign_file.h"
#include "tests/search/synthetic_evaluator.h"
#include "tests/support/temp_path.h"

namespace kevo::search {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";
const std::vector<std::string> kTasks = {kRoot + "tasks/01_relu.json", kRoot + "tasks/06_sum_dim1.json"};
const std::vector<std::string> kArms = {"random", "learned"};
const std::vector<uint64_t> kSeeds = {3, 4, 5};

std::string temp_path(const std::string& name) { return kevo::testing::fresh_temp_path("kevo_ablation", name); }

CampaignConfig small_config() {
  CampaignConfig c;
  c.population = 4;
  c.islands = 2;
  c.budget_evals = 24;
  c.migration_interval = 2;
  c.stagnation = 3;
  return c;
}

// What a run proposed, independent of variant ids: per generation and island, the genomes in order.
using Proposed = std::vector<std::tuple<int32_t, int32_t, std::string, std::vector<int64_t>, std::string, std::string>>;

Proposed proposed_by(const store::CampaignContents& k, int32_t run) {
  Proposed p;
  for (const auto& v : k.variants)
    if (v.run == run) p.emplace_back(v.generation, v.island, v.space, v.genome, v.op, v.source_hash);
  return p;
}

const store::CampaignContents& ablation_file() {
  static const store::CampaignContents k = [] {
    testing::SyntheticEvaluator ev;
    std::string path = temp_path("ablation.h5");
    Campaign::create_ablation(path, small_config(), kTasks, kArms, kSeeds, ev, "test")->run();
    return store::read_campaign(path);
  }();
  return k;
}

TEST(Ablation, RunsEveryTaskArmAndSeedOnceWithItsBudget) {
  const store::CampaignContents& k = ablation_file();
  EXPECT_EQ(k.tasks.size(), 2u);
  ASSERT_EQ(k.runs.size(), 12u);
  size_t i = 0;
  for (const char* task : {"relu", "sum_dim1"})
    for (const std::string& arm : kArms)
      for (uint64_t seed : kSeeds) {
        const store::RunRecord& r = k.runs[i];
        EXPECT_EQ(r.id, static_cast<int32_t>(i));
        EXPECT_EQ(r.task, task);
        EXPECT_EQ(r.arm, arm);
        EXPECT_EQ(r.seed, seed);
        EXPECT_EQ(config_from_json(r.config).arm, arm);
        int64_t evals = 0;
        for (const auto& g : k.generations)
          if (g.run == r.id) evals = std::max(evals, g.evaluations);
        EXPECT_EQ(evals, 24) << task << " " << arm << " " << seed;
        ++i;
      }
  // The report carries a mean curve with its band per task and arm, and the statistics.
  store::ReportData d = report_data(k, "ablation.h5");
  int means = 0;
  for (const auto& s : d.series)
    if (s.seed == "mean") {
      ++means;
      EXPECT_EQ(s.band.size(), s.points.size());
      EXPECT_EQ(s.band_label, "95% bootstrap interval over 3 seeds");
    }
  EXPECT_EQ(means, 4);
  int lines = 0;
  for (const auto& n : d.notes) lines += n.rfind("ablation ", 0) == 0;
  EXPECT_EQ(lines, 4 + 2) << "per task and arm, and learned against random per task";
}

TEST(Ablation, ARunProposesWhatTheOrdinaryCampaignOfItsArmAndSeedDoes) {
  const store::CampaignContents& k = ablation_file();
  for (const std::string& arm : kArms) {
    CampaignConfig c = small_config();
    c.arm = arm;
    c.seed = 4;
    testing::SyntheticEvaluator ev;
    std::string path = temp_path("single.h5");
    Campaign::create(path, c, kTasks, ev, "test")->run();
    store::CampaignContents single = store::read_campaign(path);
    for (const auto& r : k.runs) {
      if (r.arm != arm || r.seed != 4) continue;
      const int32_t alone = r.task == "relu" ? 0 : 1;
      ASSERT_EQ(single.runs[static_cast<size_t>(alone)].task, r.task);
      Proposed want = proposed_by(single, alone);
      EXPECT_FALSE(want.empty());
      EXPECT_TRUE(want == proposed_by(k, r.id)) << r.task << " " << arm;
    }
  }
}

TEST(Ablation, ResumeAfterACrashGivesTheSameFile) {
  const store::CampaignContents& whole = ablation_file();
  std::string path = temp_path("crash.h5");
  testing::SyntheticEvaluator crashing;
  crashing.fail_after = 2;
  auto campaign = Campaign::create_ablation(path, small_config(), kTasks, kArms, kSeeds, crashing, "test");
  EXPECT_THROW(campaign->run(), std::runtime_error);
  campaign.reset();
  testing::SyntheticEvaluator rest;
  Campaign::resume(path, rest)->run();
  store::CampaignContents k = store::read_campaign(path);
  ASSERT_EQ(k.runs.size(), whole.runs.size());
  for (size_t i = 0; i < k.runs.size(); ++i) {
    EXPECT_EQ(k.runs[i].arm, whole.runs[i].arm);
    EXPECT_EQ(k.runs[i].seed, whole.runs[i].seed);
    EXPECT_TRUE(proposed_by(k, k.runs[i].id) == proposed_by(whole, whole.runs[i].id)) << "run " << i;
  }
  ASSERT_EQ(k.measurements.size(), whole.measurements.size());
  for (size_t i = 0; i < k.measurements.size(); ++i) {
    EXPECT_EQ(k.measurements[i].variant, whole.measurements[i].variant);
    EXPECT_EQ(k.measurements[i].fitness, whole.measurements[i].fitness);
  }
}

TEST(Ablation, BootstrapBandHoldsTheMeanAndCollapsesWhenSeedsAgree) {
  std::vector<std::vector<double>> seeds = {{0, 1.0, 1.5, 2.0}, {0, 1.2, 1.4, 2.5}, {0.5, 0.9, 2.0, 2.2}, {0, 1.1, 1.6, 2.1}};
  std::vector<Interval> band = bootstrap_curve(seeds, 2000, 1);
  ASSERT_EQ(band.size(), 4u);
  EXPECT_DOUBLE_EQ(band[1].mean, (1.0 + 1.2 + 0.9 + 1.1) / 4);
  for (const Interval& iv : band) {
    EXPECT_LE(iv.lower, iv.mean);
    EXPECT_GE(iv.upper, iv.mean);
  }
  EXPECT_LT(band[3].lower, band[3].upper);
  // Deterministic for a seed.
  EXPECT_EQ(bootstrap_curve(seeds, 2000, 1)[2].lower, band[2].lower);
  std::vector<std::vector<double>> same(5, {1.0, 1.5, 3.0});
  for (const Interval& iv : bootstrap_curve(same, 2000, 1)) {
    EXPECT_DOUBLE_EQ(iv.lower, iv.mean);
    EXPECT_DOUBLE_EQ(iv.upper, iv.mean);
  }
}

TEST(Ablation, EvaluationsToNinetyFivePercentOnHandMadeCurves) {
  std::vector<store::CurvePoint> curve = {{10, 0}, {20, 1.0}, {30, 1.9}, {40, 2.0}};
  EXPECT_EQ(evaluations_to_reach(curve, 0.95 * 2.0, 40), 30);
  EXPECT_EQ(evaluations_to_reach(curve, 1.0, 40), 20);
  EXPECT_EQ(evaluations_to_reach(curve, 2.1, 40), 40);
  // A file: on task t, random (seeds 1, 2) and learned (seeds 1, 2); the best any arm found is 2.0.
  store::CampaignContents k;
  k.tasks.push_back({"t", "{}", ""});
  CampaignConfig c;
  c.budget_evals = 40;
  const std::vector<std::tuple<std::string, uint64_t, std::vector<double>>> runs = {
      {"random", 1, {0.5, 1.0, 1.5, 1.8}}, {"random", 2, {0.5, 1.9, 1.9, 1.9}},
      {"learned", 1, {1.0, 2.0, 2.0, 2.0}}, {"learned", 2, {0.5, 1.0, 1.9, 1.9}}};
  for (const auto& [arm, seed, bests] : runs) {
    const int32_t id = static_cast<int32_t>(k.runs.size());
    c.arm = arm;
    c.seed = seed;
    k.runs.push_back({id, "t", arm, seed, config_to_json(c)});
    for (size_t g = 0; g < bests.size(); ++g) {
      store::GenerationRecord r;
      r.run = id;
      r.generation = static_cast<int32_t>(g);
      r.evaluations = static_cast<int64_t>(10 * (g + 1));
      r.best_fitness = bests[g];
      k.generations.push_back(r);
    }
  }
  ASSERT_TRUE(is_ablation(k));
  Ablation a = ablation_stats(k, 500, 1);
  ASSERT_EQ(a.arms.size(), 2u);
  const ArmStats& random = a.arms[0];
  EXPECT_EQ(random.arm, "random");
  EXPECT_DOUBLE_EQ(random.target, 1.9);
  EXPECT_EQ(random.not_reached, 1);                             // seed 1 never reaches 1.9: counted as 40
  EXPECT_DOUBLE_EQ(random.evals_to_target.mean, (40 + 20) / 2.0);
  EXPECT_DOUBLE_EQ(random.final_fitness.mean, (1.8 + 1.9) / 2);
  EXPECT_EQ(random.grid, (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_DOUBLE_EQ(random.curve[1].mean, (1.0 + 1.9) / 2);
  const ArmStats& learned = a.arms[1];
  EXPECT_EQ(learned.not_reached, 0);
  EXPECT_DOUBLE_EQ(learned.evals_to_target.mean, (20 + 30) / 2.0);
  ASSERT_EQ(a.paired.size(), 1u);
  const PairedComparison& p = a.paired[0];
  EXPECT_EQ(p.arm, "learned");
  EXPECT_EQ(p.seeds, 2);
  EXPECT_DOUBLE_EQ(p.evals_to_target_diff.mean, ((20 - 40) + (30 - 20)) / 2.0);
  EXPECT_EQ(p.wins, 1);
  EXPECT_EQ(p.losses, 1);
  EXPECT_EQ(p.ties, 0);
}

}  // namespace
}  // namespace kevo::search
