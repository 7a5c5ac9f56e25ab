// Recordings are read by knob name: a genome recorded before its space gained a knob answers for
// that genome with the knob at its default (the manifest's "default"), a file that lists its
// knobs in another order still answers, and files of kevo before knobs were recorded by name
// (whose spaces only ever gained knobs at their end) replay after a knob was added too.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/task.h"
#include "evaluators/recorded_measurements.h"
#include "lower/lower.h"
#include "mutate/space.h"
#include "search/run.h"
#include "store/campaign_file.h"
#include "store/genome_names.h"
#include "tests/support/temp_path.h"

namespace kevo::search {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

evaluators::EvalRequest request(const Task& task, const mutate::DesignSpace& space, std::vector<int64_t> genome) {
  evaluators::EvalRequest r;
  r.task = &task;
  r.space = space.id();
  r.genome = std::move(genome);
  r.knobs = std::make_shared<const store::KnobList>(knob_list(space));
  return r;
}

TEST(GenomeNames, AGenomeIsReadByKnobNameWithDefaultsForKnobsItLacks) {
  const store::KnobList to{{"kA", "kB", "kC"}, {std::nullopt, std::nullopt, 7}};
  EXPECT_EQ(store::read_genome({1, 2}, {"kA", "kB"}, to), (std::vector<int64_t>{1, 2, 7}));
  EXPECT_EQ(store::read_genome({2, 1}, {"kB", "kA"}, to), (std::vector<int64_t>{1, 2, 7}));
  EXPECT_EQ(store::read_genome({1, 2}, {}, to), (std::vector<int64_t>{1, 2, 7}));  // a file that names none
  EXPECT_EQ(store::read_genome({1, 2, 3}, {"kA", "kB", "kC"}, to), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(store::read_genome({1, 3}, {"kA", "kC"}, to)) << "kB has no default";
  EXPECT_FALSE(store::read_genome({1, 2, 9}, {"kA", "kB", "kGone"}, to)) << "a knob the space no longer has";
  EXPECT_FALSE(store::read_genome({1, 2, 3, 4}, {}, to));
  EXPECT_EQ(store::knob_names(store::space_record("t", "s", {"kA", "kB"})), (std::vector<std::string>{"kA", "kB"}));
}

// results/spaces/linear_scale_leaky_relu-algo.h5 was recorded before the library family gained
// kEmulation (f305979, default 0): every genome it holds answers again, with kEmulation at 0 only.
TEST(ReplayByName, ARecordingMadeBeforeAKnobWasAddedReplaysAfterIt) {
  const std::string file = kRoot + "results/spaces/linear_scale_leaky_relu-algo.h5";
  const Task task = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  const auto spaces = lower::lower(task);
  const store::CampaignContents k = store::read_campaign(file);
  ASSERT_TRUE(k.spaces.empty()) << "the file predates /spaces: the test is of one that names no knobs";
  const evaluators::RecordedMeasurements recorded({file});
  int found = 0;
  for (const store::VariantRecord& v : k.variants) {
    const mutate::DesignSpace* space = mutate::find_space(spaces, v.space);
    ASSERT_NE(space, nullptr) << v.space;
    const int emulation = space->manifest().knob("kEmulation");
    ASSERT_EQ(emulation, static_cast<int>(space->knobs().size()) - 1) << "kEmulation was appended";
    ASSERT_EQ(v.genome.size() + 1, space->knobs().size());
    std::vector<int64_t> today = v.genome;
    today.push_back(0);
    const store::MeasurementRecord* m = recorded.find(request(task, *space, today));
    ASSERT_NE(m, nullptr) << mutate::Genome{v.space, today}.to_string();
    EXPECT_NE(m->status, "unmeasured");
    ++found;
    today.back() = 1;  // emulated: never recorded
    EXPECT_EQ(recorded.find(request(task, *space, today)), nullptr);
  }
  EXPECT_EQ(found, 60);
}

// A file that names its knobs answers by name: recorded with the knobs in reverse order and one
// knob (with a default) missing, it answers for the genome in today's order with the default.
TEST(ReplayByName, AFileThatNamesItsKnobsAnswersByName) {
  const Task task = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  const auto spaces = lower::lower(task);
  const mutate::DesignSpace& space = *mutate::find_space(spaces, "library/cublaslt_matmul");
  std::mt19937_64 rng(3);
  mutate::Genome g = space.random_genome(rng);
  g.values.back() = 0;  // kEmulation at its default
  std::vector<std::string> names;
  std::vector<int64_t> values;
  for (size_t i = 0; i + 1 < space.knobs().size(); ++i) {  // all but kEmulation, reversed
    names.insert(names.begin(), space.knobs()[i].name);
    values.insert(values.begin(), g.values[i]);
  }
  store::CampaignContents c;
  c.campaign_id = "c";
  c.fitness = "weighted_time_v1";
  c.tasks.push_back({task.name, "{}", "0"});
  c.runs.push_back({0, task.name, "sweep", 1, "{}"});
  c.spaces.push_back(store::space_record(task.name, space.id(), names));
  c.variants.push_back({0, 0, 0, 0, space.id(), values, "h", {}, "seed", 0, -1});
  store::MeasurementRecord m;
  m.variant = 0;
  m.status = "ok";
  m.fitness = 1.5;
  c.measurements.push_back(m);
  const std::string path = kevo::testing::fresh_temp_path("kevo_replay_by_name", "named.h5");
  store::write_campaign(path, c);
  ASSERT_EQ(store::read_campaign(path).spaces.size(), 1u);
  const evaluators::RecordedMeasurements recorded({path});
  const store::MeasurementRecord* found = recorded.find(request(task, space, g.values));
  ASSERT_NE(found, nullptr) << g.to_string();
  EXPECT_EQ(found->status, "ok");
  // Read positionally (a request that names no knobs) the reversed genome is another one.
  evaluators::EvalRequest positional = request(task, space, g.values);
  positional.knobs.reset();
  EXPECT_EQ(recorded.find(positional), nullptr);
}

}  // namespace
}  // namespace kevo::search
