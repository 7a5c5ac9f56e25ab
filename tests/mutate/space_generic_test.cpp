// The generic family as users rely on it: every development contract (fp32, half, training
// tasks) gets the baseline space with enough legal genomes; it joins lower() only where no other
// family serves or theirs hold fewer than 100 legal genomes, unless KEVO_GENERIC=everywhere; fusion knobs change the partition into kernels;
// sampled random genomes compile with NVRTC for Hopper and Blackwell (bench/generic_space.sh
// compiles 200 per task).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <random>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/builder.h"
#include "mutate/families.h"
#include "mutate/space.h"
#include "tests/support/contract_files.h"

namespace kevo::mutate {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

std::vector<std::string> contracts(const std::string& folder) { return testing::contract_files(kRoot, folder); }

std::unique_ptr<DesignSpace> generic_space(const Task& task) {
  auto spaces = lower_generic(std::make_shared<const TaskGraph>(task));
  return spaces.empty() ? nullptr : std::move(spaces.front());
}

int64_t legal_count(const DesignSpace& s) {
  int64_t n = 0;
  Genome g{s.id(), std::vector<int64_t>(s.knobs().size())};
  std::function<void(size_t)> walk = [&](size_t k) {
    if (k == s.knobs().size()) {
      n += s.legal(g);
      return;
    }
    for (int64_t v : s.knobs()[k].values) g.values[k] = v, walk(k + 1);
  };
  walk(0);
  return n;
}

size_t steps_of(const std::string& text) {
  size_t n = 0;
  for (size_t at = text.find("\"kernel\""); at != std::string::npos; at = text.find("\"kernel\"", at + 1)) ++n;
  return n;
}

TEST(GenericSpace, EveryDevelopmentContractLowersWithAtLeast100LegalGenomes) {
  std::vector<std::string> all = contracts("tasks");
  for (const char* f : {"tasks/half", "tasks/train"})
    for (const std::string& c : contracts(f)) all.push_back(c);
  ASSERT_GT(all.size(), 20u);
  for (const std::string& file : all) {
    Task task = load_task(kRoot + file);
    auto s = generic_space(task);
    ASSERT_TRUE(s) << file << " does not lower onto the generic family: " << generic_refusal(TaskGraph(task));
    EXPECT_GE(legal_count(*s), 100) << file;
    std::mt19937_64 rng(7);
    const Genome g = s->random_genome(rng);
    const std::string text = s->render(g);
    EXPECT_EQ(text, s->render(g)) << file << ": rendering is deterministic";
    EXPECT_NO_THROW(parse_candidate(text, "c.cu", task)) << file << " " << g.to_string();
  }
}

TEST(GenericSpace, JoinsLowerOnlyWhereNoOtherFamilyServesUnlessAskedEverywhere) {
  Task softmax = load_task(kRoot + "tasks/03_softmax.json");
  unsetenv("KEVO_GENERIC");
  for (const auto& s : lower(softmax)) EXPECT_NE(s->manifest().family, "generic");
  setenv("KEVO_GENERIC", "everywhere", 1);
  bool found = false;
  for (const auto& s : lower(softmax)) found = found || s->manifest().family == "generic";
  unsetenv("KEVO_GENERIC");
  EXPECT_TRUE(found);
}

// A plain convolution (no tail to fuse) lowers onto the library family's cuDNN step, whose
// knobs then hold a single legal genome: too little to search, so the generic space joins it.
// (Its kernel size varies between workloads, which the conv family, whose generated geometry is
// constant, does not serve.)
TEST(GenericSpace, JoinsWhereTheOtherFamiliesLeaveFewerThanAHundredLegalGenomes) {
  unsetenv("KEVO_GENERIC");
  const Task conv = parse_task(R"JSON({
    "name": "plain_conv2d", "axes": {"N": {"type": "var"}, "H": {"type": "var"}, "S": {"type": "var"}},
    "inputs": {"x": {"shape": ["N", 3, "H", "H"], "dtype": "float32"},
               "w": {"shape": [8, 3, "S", "S"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["N", 8, "H - S + 1", "H - S + 1"], "dtype": "float32"}},
    "reference": "def run(x, w):\n    return torch.nn.functional.conv2d(x, w)",
    "workloads": [{"N": 2, "H": 34, "S": 3}, {"N": 16, "H": 130, "S": 5}], "tolerance": {"atol": 1e-4, "rtol": 1e-4}})JSON",
                               "plain_conv2d.json");
  std::vector<std::unique_ptr<DesignSpace>> specialised;
  bool generic = false;
  for (auto& s : lower(conv)) {
    if (s->manifest().family == "generic") generic = true;
    else specialised.push_back(std::move(s));
  }
  ASSERT_FALSE(specialised.empty()) << "a plain conv2d lowers onto the library family";
  EXPECT_FALSE(hold_legal_genomes(specialised, 100));
  EXPECT_TRUE(generic) << "the generic space joins specialised spaces holding fewer than 100 legal genomes";
}

// A reduction with an elementwise tail: the epilogue knob decides whether the tail is its own
// kernel or fused into the product's store.
TEST(GenericSpace, TheEpilogueKnobFusesAnElementwiseTailIntoTheReductionsStore) {
  Task task = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  auto s = generic_space(task);
  ASSERT_TRUE(s);
  Genome g{s->id(), {}};
  for (const Knob& k : s->knobs()) g.values.push_back(k.values.front());
  const int e = s->manifest().knob("kEpilogue");
  g.values[static_cast<size_t>(e)] = 0;
  ASSERT_TRUE(s->legal(g));
  const size_t apart = steps_of(s->render(g));
  g.values[static_cast<size_t>(e)] = 1;
  ASSERT_TRUE(s->legal(g));
  const size_t fused = steps_of(s->render(g));
  EXPECT_EQ(fused + 1, apart);
}

// Views are index remapping: a transpose and an unsqueeze feeding a reduction add no kernel.
TEST(GenericSpace, ViewsAddNoKernel) {
  Task task = parse_task(R"JSON({"name": "t", "axes": {"B": {"type": "var"}, "D": {"type": "var"}},
    "inputs": {"x": {"shape": ["B", "D"], "dtype": "bfloat16"}},
    "outputs": {"y": {"shape": ["D"], "dtype": "bfloat16"}},
    "reference": "def run(x):\n    return x.t().unsqueeze(0).sum(dim=(0, 2))",
    "workloads": [{"B": 64, "D": 32}, {"B": 8, "D": 48}], "tolerance": {"atol": 0.02, "rtol": 0.02}})JSON",
                         "t.json");
  auto s = generic_space(task);
  ASSERT_TRUE(s);
  std::mt19937_64 rng(3);
  const std::string text = s->render(s->random_genome(rng));
  EXPECT_EQ(steps_of(text), 1u);
  EXPECT_NE(text.find("kevo::bf16_t* b_y;"), std::string::npos);  // the output stored as bf16
}

// CI's sample of bench/generic_space.sh: random genomes of a few tasks compile for sm_90a and sm_100a.
TEST(GenericSpace, SampledRandomGenomesCompileForHopperAndBlackwell) {
  std::mt19937_64 rng(11);
  for (const char* file : {"tasks/05_layer_norm.json", "tasks/12_max_pool2d.json", "tasks/14_conv2d_relu_bias.json",
                           "tasks/09_cumsum.json", "tasks/07_argmax_dim1.json"}) {
    Task task = load_task(kRoot + file);
    auto s = generic_space(task);
    ASSERT_TRUE(s) << file;
    for (const char* arch : {"sm_90a", "sm_100a"}) {
      eval::BuildRequest req;
      req.source = s->render(s->random_genome(rng));
      req.arch = arch;
      req.use_cache = false;
      const eval::BuildResult r = eval::build(req);
      EXPECT_EQ(r.status, eval::BuildStatus::Ok) << file << " " << arch << ": " << r.error << "\n" << r.log;
    }
  }
}

}  // namespace
}  // namespace kevo::mutate
