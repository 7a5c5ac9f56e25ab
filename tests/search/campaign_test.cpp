// The campaign loop as users rely on it: reproducible for a seed and a replayed landscape, budgets
// kept, no source measured twice, elites kept, islands exchanging elites, and a campaign
// interrupted mid-generation finishing with the same archive as one that never stopped.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "core/screening.h"
#include "lower/lower.h"
#include "search/campaign.h"
#include "search/results.h"
#include "mutate/mutation.h"
#include "search/sweep.h"
#include "store/campaign_file.h"
#include "store/campaign_writer.h"
#include "store/genome_names.h"
#include "tests/search/synthetic_evaluator.h"
#include "tests/support/temp_path.h"

namespace kevo::search {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

std::string temp_path(const std::string& name) { return kevo::testing::fresh_temp_path("kevo_campaign", name); }

CampaignConfig small_config() {
  CampaignConfig c;
  c.seed = 7;
  c.population = 6;
  c.islands = 2;
  c.budget_evals = 60;
  c.migration_interval = 2;
  c.stagnation = 3;
  return c;
}

const std::vector<std::string> kTasks = {kRoot + "tasks/01_relu.json", kRoot + "tasks/06_sum_dim1.json"};

store::CampaignContents run_campaign(const CampaignConfig& c, testing::SyntheticEvaluator& ev, std::string path = "") {
  if (path.empty()) path = temp_path("c.h5");
  auto campaign = Campaign::create(path, c, kTasks, ev, "test");
  campaign->run();
  return store::read_campaign(path);
}

// What must be identical between two runs of one campaign (everything but timings and ids of the file).
struct Fingerprint {
  std::vector<std::tuple<int64_t, int32_t, int32_t, std::string, std::vector<int64_t>, std::string, std::vector<int64_t>,
                         std::string, int64_t>>
      variants;
  std::vector<std::pair<int64_t, double>> measurements;
  std::vector<std::tuple<int32_t, int32_t, std::string, int64_t, double>> final_archive;
  bool operator==(const Fingerprint& o) const {
    return variants == o.variants && measurements == o.measurements && final_archive == o.final_archive;
  }
};

Fingerprint fingerprint(const store::CampaignContents& k) {
  Fingerprint f;
  for (const auto& v : k.variants)
    f.variants.emplace_back(v.id, v.run, v.generation, v.space, v.genome, v.source_hash, v.parents, v.op, v.duplicate_of);
  for (const auto& m : k.measurements) f.measurements.emplace_back(m.variant, m.fitness);
  int last = -1;
  for (const auto& a : k.archive) last = std::max(last, a.generation);
  for (const auto& a : k.archive)
    if (a.generation == last) f.final_archive.emplace_back(a.run, a.island, a.cell, a.variant, a.fitness);
  return f;
}

TEST(Campaign, SameSeedAndSameEvaluatorGiveTheSameCampaign) {
  testing::SyntheticEvaluator a, b;
  Fingerprint fa = fingerprint(run_campaign(small_config(), a));
  Fingerprint fb = fingerprint(run_campaign(small_config(), b));
  EXPECT_FALSE(fa.variants.empty());
  EXPECT_TRUE(fa == fb);
  CampaignConfig other = small_config();
  other.seed = 8;
  testing::SyntheticEvaluator c;
  EXPECT_FALSE(fa == fingerprint(run_campaign(other, c))) << "the seed changes nothing";
}

// The synthetic landscape behind the pipelined interface, as the GPU evaluators are: a batch is
// held from submit() until collected (a part at a time), and the most ever held at once is counted.
class PipelinedEvaluator : public testing::SyntheticEvaluator {
 public:
  void submit(std::vector<evaluators::EvalRequest> batch) override {
    held.push_back(batch.size());
    most_held = std::max(most_held, held.size());
    SyntheticEvaluator::submit(std::move(batch));
  }
  std::vector<store::MeasurementRecord> collect(size_t n) override {
    std::vector<store::MeasurementRecord> out;
    try {
      out = SyntheticEvaluator::collect(n);
    } catch (...) {
      held.pop_front();  // a collect that throws takes its batch
      throw;
    }
    taken += out.size();
    if (taken == held.front()) held.pop_front(), taken = 0;
    return out;
  }
  std::deque<size_t> held;  // the batches' sizes
  size_t taken = 0, most_held = 0;
};

TEST(Campaign, HandsTheNextGenerationOverBeforeCollectingOneAndSearchesAsIfEachWereMeasuredInTurn) {
  testing::SyntheticEvaluator plain;
  PipelinedEvaluator piped;
  EXPECT_TRUE(fingerprint(run_campaign(small_config(), plain)) == fingerprint(run_campaign(small_config(), piped)));
  // Generation g+1 is with the evaluator while g is measured: its GPUs need not wait for the loop.
  EXPECT_EQ(piped.most_held, 2u);
  EXPECT_TRUE(piped.held.empty());
  // A campaign that stops on an engine error leaves nothing handed over (those requests point at its runs).
  PipelinedEvaluator crashing;
  crashing.fail_after = 3;
  EXPECT_THROW(run_campaign(small_config(), crashing), std::runtime_error);
  EXPECT_TRUE(crashing.held.empty());
}

// Three tasks: a generation is three runs' parts.
const std::vector<std::string> kThreeTasks = {kRoot + "tasks/01_relu.json", kRoot + "tasks/06_sum_dim1.json",
                                              kRoot + "tasks/02_gelu.json"};

// A GPU that has measured only the first `parts` parts it is asked for (its collects): ready() says
// so, and a campaign waiting on it sees it stall. What it handed back is counted.
class StallingEvaluator : public PipelinedEvaluator {
 public:
  explicit StallingEvaluator(int parts) : parts_(parts) {}
  bool ready(size_t, double) override {
    if (collects < parts_) return true;
    stalled = true;
    return false;
  }
  std::vector<store::MeasurementRecord> collect(size_t n) override {
    ++collects;
    std::vector<store::MeasurementRecord> out = PipelinedEvaluator::collect(n);
    for (const auto& m : out) handed_back.insert(m.variant);
    return out;
  }
  int collects = 0;
  bool stalled = false;
  std::set<int64_t> handed_back;  // variants whose measurements the campaign took

 private:
  int parts_;
};

// The issue-19 deadline: a campaign over several tasks commits each task's part of a generation as
// soon as it is measured, so a stop (a deadline's SIGTERM) while the GPU is still busy with the
// generation keeps what was measured; `kevo resume` takes it from the file (nothing is measured
// twice) and ends as the uninterrupted campaign. Stopped in generation 1 (a file with no resume
// state: re-derived) and generation 3 (resumed from the kept states).
TEST(Campaign, StoppedMidGenerationKeepsEachTaskPartMeasuredAndResumeFinishesIt) {
  CampaignConfig c = small_config();
  testing::SyntheticEvaluator whole_ev;
  const std::string whole = temp_path("whole3.h5");
  Campaign::create(whole, c, kThreeTasks, whole_ev, "test")->run();
  const Fingerprint expected = fingerprint(store::read_campaign(whole));
  const size_t total = store::read_campaign(whole).measurements.size();
  ASSERT_EQ(total, 180u);
  for (int g : {1, 3}) {
    SCOPED_TRACE("stopped in generation " + std::to_string(g));
    const std::string path = temp_path("stopped.h5");
    StallingEvaluator ev(3 * g + 1);  // generations before g whole, and the first task's part of g
    std::vector<Progress> reports;
    std::set<int64_t> handed_back;
    {
      auto campaign = Campaign::create(path, c, kThreeTasks, ev, "test");
      EXPECT_FALSE(campaign->run([&](const Progress& p) { reports.push_back(p); }, [&] { return ev.stalled; }));
      EXPECT_EQ(ev.collects, 3 * g + 1) << "it collected a part that was not measured, or left one measured";
      handed_back = ev.handed_back;
    }
    EXPECT_TRUE(ev.held.empty()) << "the campaign left batches with the evaluator when it was destroyed";
    const store::CampaignContents k = store::read_campaign(path);
    // Every measurement handed back is in the file; the generation stopped in is in it in part.
    std::set<int64_t> stored;
    for (const auto& m : k.measurements) stored.insert(m.variant);
    EXPECT_EQ(stored, handed_back);
    EXPECT_EQ(k.measurements.size(), handed_back.size());
    std::set<int32_t> runs_of_g;
    int last_generation = -1;
    for (const auto& v : k.variants)
      if (v.generation == g) runs_of_g.insert(v.run);
    for (const auto& r : k.generations) last_generation = std::max(last_generation, r.generation);
    EXPECT_EQ(last_generation, g - 1);
    EXPECT_EQ(runs_of_g, std::set<int32_t>{0}) << "only the first task's part of generation " << g << " was measured";
    // A report counts what the file holds, the generation's part included.
    const store::ReportData d = report_data(k, path);
    int64_t reported = 0;
    for (const store::TaskSummary& t : d.tasks) reported += t.evaluations;
    EXPECT_EQ(reported, static_cast<int64_t>(k.measurements.size()));
    EXPECT_TRUE(std::any_of(d.notes.begin(), d.notes.end(),
                            [&](const std::string& n) { return n.find("generation " + std::to_string(g) + " is in the file in part") == 0; }));
    // Its progress was reported as it was committed: the part's line, then nothing more.
    ASSERT_FALSE(reports.empty());
    EXPECT_EQ(reports.back().part_run, 0);
    EXPECT_EQ(reports.back().generation, g);
    EXPECT_EQ(reports.back().part_task, "relu");
    EXPECT_EQ(reports.back().evaluations, static_cast<int64_t>(k.measurements.size()));
    // Resumed, it measures only what is not in the file and ends as the uninterrupted campaign.
    testing::SyntheticEvaluator rest;
    Campaign::resume(path, rest)->run();
    EXPECT_TRUE(expected == fingerprint(store::read_campaign(path)));
    EXPECT_EQ(stored.size() + rest.requests.size(), total) << "measured twice, or never";
    for (const auto& r : rest.requests) EXPECT_EQ(stored.count(r.variant), 0u) << "variant " << r.variant << " measured again";
  }
}

// Each generation's parts are reported as they are committed, run by run, before the generation:
// a part's figures are its run's after the generation.
TEST(Campaign, ReportsEachTaskPartOfAGenerationThenTheGeneration) {
  testing::SyntheticEvaluator ev;
  std::vector<Progress> reports;
  Campaign::create(temp_path("parts.h5"), small_config(), kThreeTasks, ev, "test")->run([&](const Progress& p) {
    reports.push_back(p);
  });
  std::vector<const Progress*> parts;
  int generations = 0;
  for (const Progress& p : reports) {
    if (p.part_run >= 0) {
      if (!parts.empty()) {
        EXPECT_GT(p.part_run, parts.back()->part_run) << "parts in run order";
      }
      parts.push_back(&p);
      continue;
    }
    ++generations;
    ASSERT_FALSE(parts.empty()) << "generation " << p.generation << " reported no part";
    EXPECT_EQ(parts.back()->evaluations, p.evaluations) << "the last part completes generation " << p.generation;
    for (const Progress* q : parts) {
      EXPECT_EQ(q->generation, p.generation);
      EXPECT_EQ(q->part_task, p.best.at(static_cast<size_t>(q->part_run)).first);
      EXPECT_DOUBLE_EQ(q->part_best, p.best.at(static_cast<size_t>(q->part_run)).second);
    }
    parts.clear();
  }
  EXPECT_GE(generations, 5);
  EXPECT_TRUE(parts.empty());
}

TEST(Campaign, KeepsTheBudgetAndNeverMeasuresASourceTwice) {
  testing::SyntheticEvaluator ev;
  store::CampaignContents k = run_campaign(small_config(), ev);
  std::map<int32_t, int64_t> per_run;
  for (const auto& v : k.variants)
    if (v.duplicate_of < 0) per_run[v.run]++;
  ASSERT_EQ(per_run.size(), 2u);
  for (const auto& [run, n] : per_run) EXPECT_EQ(n, 60) << "run " << run;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& r : ev.requests)
    EXPECT_TRUE(seen.insert({r.task->name, r.source_hash}).second) << "measured twice: variant " << r.variant;
  EXPECT_EQ(ev.requests.size(), 120u);
  EXPECT_EQ(k.measurements.size(), 120u);
  // Duplicates point at a measured variant of the same run with the same source.
  std::map<int64_t, const store::VariantRecord*> by_id;
  for (const auto& v : k.variants) by_id[v.id] = &v;
  for (const auto& v : k.variants)
    if (v.duplicate_of >= 0) {
      ASSERT_TRUE(by_id.count(v.duplicate_of));
      EXPECT_EQ(by_id[v.duplicate_of]->source_hash, v.source_hash);
      EXPECT_EQ(by_id[v.duplicate_of]->run, v.run);
    }
}

TEST(Campaign, BestSoFarNeverDropsAndIsTheBestMeasured) {
  testing::SyntheticEvaluator ev;
  store::CampaignContents k = run_campaign(small_config(), ev);
  std::map<int32_t, double> last;
  for (const auto& g : k.generations) {
    EXPECT_GE(g.best_fitness, last[g.run]) << "run " << g.run << " generation " << g.generation;
    last[g.run] = g.best_fitness;
  }
  std::map<int64_t, int32_t> run_of;
  for (const auto& v : k.variants) run_of[v.id] = v.run;
  std::map<int32_t, double> best;
  for (const auto& m : k.measurements) best[run_of[m.variant]] = std::max(best[run_of[m.variant]], m.fitness);
  for (const auto& [run, b] : best) EXPECT_DOUBLE_EQ(last[run], b);
}

TEST(Campaign, OffspringComeFromEveryOperatorAndParentsAreEarlierVariants) {
  testing::SyntheticEvaluator ev;
  CampaignConfig c = small_config();
  c.budget_evals = 150;
  store::CampaignContents k = run_campaign(c, ev);
  std::map<std::string, int> ops;
  std::map<int64_t, int32_t> generation_of;
  for (const auto& v : k.variants) {
    ops[v.op]++;
    generation_of[v.id] = v.generation;
    for (int64_t p : v.parents) {
      ASSERT_TRUE(generation_of.count(p)) << "variant " << v.id << " has parent " << p << " not yet made";
      EXPECT_LT(generation_of[p], v.generation - 0) << "a parent must be measured before its child is proposed";
    }
  }
  for (const char* op : {"seed", "point", "multi", "crossover"}) EXPECT_GT(ops[op], 0) << op;
  // Both tasks lower onto one space each: a switch has nowhere to go.
  EXPECT_EQ(ops["space_switch"], 0);
}

TEST(Campaign, IslandsExchangeElitesByMigration) {
  testing::SyntheticEvaluator ev;
  CampaignConfig c = small_config();
  c.islands = 3;
  c.budget_evals = 120;
  store::CampaignContents k = run_campaign(c, ev);
  std::map<int64_t, int32_t> island_of;
  for (const auto& v : k.variants) island_of[v.id] = v.island;
  int migrants = 0;
  for (const auto& a : k.archive)
    if (island_of.at(a.variant) != a.island) ++migrants;
  EXPECT_GT(migrants, 0) << "no elite ever moved to another island";
}

TEST(Campaign, ResumeAfterACrashMidGenerationFinishesWithTheUninterruptedArchive) {
  testing::SyntheticEvaluator whole;
  Fingerprint expected = fingerprint(run_campaign(small_config(), whole));
  for (int crash_at : {1, 2, 4}) {
    std::string path = temp_path("crash.h5");
    testing::SyntheticEvaluator crashing;
    crashing.fail_after = crash_at;
    auto campaign = Campaign::create(path, small_config(), kTasks, crashing, "test");
    EXPECT_THROW(campaign->run(), std::runtime_error);
    campaign.reset();
    store::CampaignContents partial = store::read_campaign(path);
    EXPECT_LT(partial.measurements.size(), 120u);
    testing::SyntheticEvaluator rest;
    auto resumed = Campaign::resume(path, rest);
    resumed->run();
    EXPECT_TRUE(expected == fingerprint(store::read_campaign(path))) << "crash after " << crash_at << " batches";
    // Only what the crash lost was measured again.
    EXPECT_EQ(partial.measurements.size() + rest.requests.size(), 120u);
  }
}

// The file names each space's knobs in the order of its genomes, so that a replay or a policy
// reads a genome by knob name after the space has changed (store/genome_names.h).
TEST(Campaign, TheFileNamesEverySpacesKnobs) {
  testing::SyntheticEvaluator ev;
  const store::CampaignContents k = run_campaign(small_config(), ev);
  std::set<std::pair<std::string, std::string>> used;
  for (const auto& v : k.variants) used.insert({k.runs.at(static_cast<size_t>(v.run)).task, v.space});
  for (const auto& [task, space] : used) {
    auto r = std::find_if(k.spaces.begin(), k.spaces.end(),
                          [&](const store::SpaceRecord& s) { return s.task == task && s.space == space; });
    ASSERT_NE(r, k.spaces.end()) << task << " " << space;
    for (const auto& v : k.variants)
      if (v.space == space) {
        EXPECT_EQ(store::knob_names(*r).size(), v.genome.size()) << space;
        break;
      }
  }
  for (const evaluators::EvalRequest& r : ev.requests) {
    ASSERT_TRUE(r.knobs) << "a request names its space's knobs";
    EXPECT_EQ(r.knobs->names.size(), r.genome.size());
  }
}

// Screening (docs/evaluation.md#screening): every candidate is asked for with the bar of its
// island's archive when it was proposed, and only one whose (short) timing could reach it is
// verified fully; one screened out is never an elite, a generation's best or the exported variant,
// yet its transition earns a reward from its short timing.
TEST(Campaign, OnlyCandidatesThatCouldEnterTheArchiveAreVerifiedFully) {
  CampaignConfig c = small_config();
  c.screen = true;
  testing::SyntheticEvaluator ev;
  const std::string path = temp_path("screened.h5");
  const store::CampaignContents k = run_campaign(c, ev, path);
  std::map<int64_t, std::string> status;
  for (const auto& m : k.measurements) status[m.variant] = m.status;
  int screened = 0, verified_against_a_bar = 0;
  for (const evaluators::EvalRequest& r : ev.requests) {
    ASSERT_TRUE(r.bar.screen);
    const store::MeasurementRecord full = testing::SyntheticEvaluator::score(r);
    if (full.status != "ok") continue;
    const double admit = r.bar.admit(full.occupancy);
    const bool could_enter = full.fitness * (1 + kScreenMarginFloor) >= admit;
    EXPECT_EQ(status.at(r.variant), could_enter ? "ok" : "screened") << "variant " << r.variant;
    screened += !could_enter;
    verified_against_a_bar += could_enter && admit > 0;
  }
  EXPECT_GT(screened, 20) << "the rule screened nothing out: the test shows nothing";
  EXPECT_GT(verified_against_a_bar, 5);
  // Generation 1 is proposed once generation 0 is measured, so it has bars; generation 0 has none.
  std::map<int64_t, int32_t> generation_of;
  for (const auto& v : k.variants) generation_of[v.id] = v.generation;
  int barred_in_1 = 0;
  for (const evaluators::EvalRequest& r : ev.requests) {
    if (generation_of.at(r.variant) == 0) {
      EXPECT_EQ(r.bar.island_best, 0);
    }
    barred_in_1 += generation_of.at(r.variant) == 1 && r.bar.island_best > 0;
  }
  EXPECT_GT(barred_in_1, 0) << "generation 1 was proposed from an empty archive";
  std::set<int64_t> screened_ids;
  for (const auto& [variant, st] : status)
    if (st == "screened") screened_ids.insert(variant);
  for (const auto& a : k.archive) EXPECT_EQ(screened_ids.count(a.variant), 0u) << "an elite was screened out";
  for (const auto& g : k.generations) EXPECT_EQ(screened_ids.count(g.best_variant), 0u) << "a best was screened out";
  for (const BestVariant& b : best_variants(k, path)) EXPECT_EQ(b.measurement->status, "ok");
  // The report and the summary count them, and the progress line is fed the same count.
  const store::ReportData d = report_data(k, path);
  int64_t reported = 0;
  for (const store::TaskSummary& t : d.tasks) reported += t.screened;
  EXPECT_EQ(reported, screened);
  // The file keeps the setting for a resume; files of campaigns without it stay as they were.
  EXPECT_TRUE(config_from_json(k.runs.front().config).screen);
  EXPECT_EQ(config_to_json(small_config()).find("screen"), std::string::npos);
  EXPECT_FALSE(config_from_json(config_to_json(small_config())).screen);
  // Without screening the same seed measures every candidate fully.
  testing::SyntheticEvaluator unscreened;
  const store::CampaignContents plain = run_campaign(small_config(), unscreened);
  for (const auto& m : plain.measurements) EXPECT_NE(m.status, "screened");
  for (const evaluators::EvalRequest& r : unscreened.requests) EXPECT_FALSE(r.bar.screen);
}

// A screened campaign that crashes mid-generation resumes to the campaign that never stopped: the
// candidates the crash lost, screened ones among them, are measured again under the same bars.
TEST(Campaign, AScreenedCampaignResumedAfterACrashFinishesAsTheUninterruptedOne) {
  CampaignConfig c = small_config();
  c.screen = true;
  testing::SyntheticEvaluator whole;
  const store::CampaignContents expected_file = run_campaign(c, whole);
  const Fingerprint expected = fingerprint(expected_file);
  std::map<int64_t, std::string> expected_status;
  for (const auto& m : expected_file.measurements) expected_status[m.variant] = m.status;
  for (int crash_at : {1, 2, 4}) {
    SCOPED_TRACE("crash after " + std::to_string(crash_at) + " batches");
    const std::string path = temp_path("screened_crash.h5");
    testing::SyntheticEvaluator crashing;
    crashing.fail_after = crash_at;
    auto campaign = Campaign::create(path, c, kTasks, crashing, "test");
    EXPECT_THROW(campaign->run(), std::runtime_error);
    campaign.reset();
    const size_t kept = store::read_campaign(path).measurements.size();
    testing::SyntheticEvaluator rest;
    Campaign::resume(path, rest)->run();
    const store::CampaignContents k = store::read_campaign(path);
    EXPECT_TRUE(expected == fingerprint(k));
    for (const auto& m : k.measurements) EXPECT_EQ(m.status, expected_status.at(m.variant)) << "variant " << m.variant;
    EXPECT_EQ(kept + rest.requests.size(), expected_file.measurements.size());
    int screened_again = 0;
    for (const evaluators::EvalRequest& r : rest.requests) {
      EXPECT_TRUE(r.bar.screen);
      screened_again += expected_status.at(r.variant) == "screened";
    }
    EXPECT_GT(screened_again, 0) << "no screened candidate was among those measured again";
  }
}

// A resume continues from the search's states the file keeps after its last two generations: no
// generation is re-derived (none is reported as replayed). A file that has not two of them (a
// crash in the second generation) re-derives what it holds. Either way the campaign ends as the
// uninterrupted one.
TEST(Campaign, ResumeStartsFromTheKeptStatesWithoutReDerivingGenerations) {
  testing::SyntheticEvaluator whole;
  const Fingerprint expected = fingerprint(run_campaign(small_config(), whole));
  for (int crash_at : {1, 3}) {
    const std::string path = temp_path("states.h5");
    testing::SyntheticEvaluator crashing;
    crashing.fail_after = crash_at;
    EXPECT_THROW(Campaign::create(path, small_config(), kTasks, crashing, "test")->run(), std::runtime_error);
    testing::SyntheticEvaluator rest;
    int replayed = 0, reports = 0;
    Campaign::resume(path, rest)->run([&](const Progress& p) {
      replayed += p.replaying_file;
      ++reports;
    });
    EXPECT_TRUE(expected == fingerprint(store::read_campaign(path))) << "crash after " << crash_at << " batches";
    EXPECT_EQ(replayed, crash_at == 1 ? 1 : 0) << "crash after " << crash_at << " batches";
    EXPECT_GT(reports, 0);
  }
}

// A campaign killed (SIGKILL) at file operations spread over all its commits, torn commits
// included, and resumed finishes as the uninterrupted campaign, having measured again only what
// the kill lost.
TEST(Campaign, KilledInsideItsCommitsAndResumedFinishesAsTheUninterruptedCampaign) {
  testing::SyntheticEvaluator whole;
  const std::string whole_path = temp_path("whole.h5");
  store::kill_at_file_operation_for_testing(0);
  const Fingerprint expected = fingerprint(run_campaign(small_config(), whole, whole_path));
  const int64_t operations = store::kill_at_file_operation_for_testing(0);
  ASSERT_GT(operations, 50);
  int resumed = 0;
  for (int64_t at = 5; at < operations; at += operations / 11) {
    SCOPED_TRACE("killed at file operation " + std::to_string(at) + " of " + std::to_string(operations));
    const std::string path = temp_path("killed.h5");
    pid_t pid = ::fork();
    if (pid == 0) {
      testing::SyntheticEvaluator ev;
      store::kill_at_file_operation_for_testing(at);
      try {
        Campaign::create(path, small_config(), kTasks, ev, "test")->run();
      } catch (...) {
      }
      ::_exit(3);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status)) {
      // A run can need fewer file operations than the reference run (how a generation's parts
      // reach the commits follows when their measurements are ready): it finished first.
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << "neither killed nor finished";
      EXPECT_TRUE(expected == fingerprint(store::read_campaign(path))) << "finished unkilled, but not as the whole run";
      continue;
    }
    ASSERT_EQ(WTERMSIG(status), SIGKILL) << "not killed";
    if (!std::filesystem::exists(path)) continue;  // killed while the file was first written
    const size_t measured = store::read_campaign(path).measurements.size();
    testing::SyntheticEvaluator rest;
    Campaign::resume(path, rest)->run();
    EXPECT_TRUE(expected == fingerprint(store::read_campaign(path)));
    EXPECT_EQ(measured + rest.requests.size(), 120u) << "measured twice, or never";
    ++resumed;
  }
  EXPECT_GE(resumed, 9);
}

TEST(Campaign, RefusesBadConfigurationsAndAnExistingFile) {
  testing::SyntheticEvaluator ev;
  CampaignConfig c = small_config();
  c.population = 0;
  EXPECT_THROW(Campaign::create(temp_path("bad.h5"), c, kTasks, ev, ""), InputError);
  c = small_config();
  c.selection = "roulette";
  EXPECT_THROW(Campaign::create(temp_path("bad.h5"), c, kTasks, ev, ""), InputError);
  c = small_config();
  c.arm = "oracle";
  EXPECT_THROW(Campaign::create(temp_path("bad.h5"), c, kTasks, ev, ""), InputError);
  std::string path = temp_path("exists.h5");
  Campaign::create(path, small_config(), kTasks, ev, "");
  try {
    Campaign::create(path, small_config(), kTasks, ev, "");
    FAIL() << "overwrote an existing campaign";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("kevo resume"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Campaign::create(temp_path("t.h5"), small_config(), {kRoot + "tasks/nope.json"}, ev, ""), InputError);
}

TEST(Sweep, GenomesAreDistinctLegalDeterministicAndCoverEverySpace) {
  Task task = load_task(kRoot + "tasks/03_softmax.json");
  auto spaces = lower::lower(task);
  auto a = sweep_genomes(spaces, 120, 3);
  EXPECT_EQ(a.size(), 120u);
  std::set<std::string> seen, covered;
  for (const auto& g : a) {
    EXPECT_TRUE(seen.insert(g.to_string()).second) << g.to_string();
    EXPECT_TRUE(mutate::find_space(spaces, g.space)->legal(g)) << g.to_string();
    covered.insert(g.space);
  }
  EXPECT_EQ(covered.size(), spaces.size());
  auto b = sweep_genomes(spaces, 120, 3);
  EXPECT_TRUE(a == b);
}

TEST(Sweep, FixedKnobsSweepASubSpace) {
  Task task = load_task(kRoot + "tasks/03_softmax.json");
  auto spaces = lower::lower(task);
  const std::string knob = spaces.front()->knobs().front().name;
  const int64_t value = spaces.front()->knobs().front().values.back();
  auto g = sweep_genomes(spaces, 50, 1, {{knob, {value}}});
  ASSERT_FALSE(g.empty());
  for (const auto& x : g) EXPECT_EQ(x.values.front(), value) << x.to_string();
  EXPECT_TRUE(sweep_genomes(spaces, 50, 1, {{"kNoSuchKnob", {1}}}).empty());
}

TEST(Sweep, RecordsWhatReplayThenAnswersAndContinuesAnInterruptedSweep) {
  std::string path = temp_path("sweep.h5");
  SweepConfig sc;
  sc.limit = 40;
  sc.batch = 8;
  testing::SyntheticEvaluator first;
  first.fail_after = 2;  // dies in the third batch
  EXPECT_THROW(run_sweep(path, {kTasks[0]}, sc, first, "test"), std::runtime_error);
  testing::SyntheticEvaluator rest;
  run_sweep(path, {kTasks[0]}, sc, rest, "test");
  EXPECT_EQ(first.requests.size() + rest.requests.size(), 40u) << "a genome measured twice, or one never";
  store::CampaignContents k = store::read_campaign(path);
  EXPECT_EQ(k.measurements.size(), 40u);
  EXPECT_TRUE(k.sources.empty()) << "sweeps are compact by default";

  auto replay = evaluators::make_replay_evaluator({path});
  Task task = load_task(kTasks[0]);
  std::vector<evaluators::EvalRequest> asks;
  for (const auto& v : k.variants) {
    evaluators::EvalRequest r;
    r.task = &task;
    r.variant = 1000 + v.id;
    r.space = v.space;
    r.genome = v.genome;
    asks.push_back(r);
  }
  evaluators::EvalRequest unknown = asks.front();
  unknown.genome.back() = -12345;
  asks.push_back(unknown);
  auto got = replay->measure(asks);
  for (size_t i = 0; i + 1 < asks.size(); ++i) {
    EXPECT_DOUBLE_EQ(got[i].fitness, testing::SyntheticEvaluator::score(asks[i]).fitness);
    EXPECT_EQ(got[i].variant, asks[i].variant);
  }
  EXPECT_EQ(got.back().status, "unmeasured");
}

}  // namespace
}  // namespace kevo::search
