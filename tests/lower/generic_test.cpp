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
#include <set>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/builder.h"
#include "lower/families.h"
#include "mutate/space.h"
#include "tests/support/contract_files.h"

namespace kevo::lower {

using namespace mutate;  // the spaces' vocabulary: DesignSpace, Genome, Facts, ...
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
  const Genome g = s->random_genome(rng);
  const std::string text = s->render(g);
  EXPECT_EQ(steps_of(text), s->values(g).at("kSplit") > 1 ? 2u : 1u);  // the sum's kernel (split: partials, combine)
  EXPECT_NE(text.find("kevo::bf16_t* b_y;"), std::string::npos);  // the output stored as bf16
}

// KernelBench level 1 #37's shape: a Frobenius norm over 112 x 64 x 512 x 512 floats, a reduction to
// one value of K = 1.88e9 terms. On one block (kSplit 1) a thread summed 29 million terms and the
// launch ran past 10 s; every legal genome now keeps a thread's terms per output within 2^18.
const char* kFrobenius = R"JSON({"name": "frobenius",
  "axes": {"B": {"type": "var"}, "F": {"type": "var"}, "H": {"type": "var"}, "W": {"type": "var"}},
  "inputs": {"x": {"shape": ["B", "F", "H", "W"], "dtype": "float32"}},
  "outputs": {"y": {"shape": ["B", "F", "H", "W"], "dtype": "float32"}},
  "reference": "def run(x):\n    return x / torch.norm(x, p='fro')",
  "workloads": [{"B": 112, "F": 64, "H": 512, "W": 512}, {"B": 56, "F": 32, "H": 32, "W": 32}],
  "tolerance": {"atol": 1e-4, "rtol": 1e-4}})JSON";

TEST(GenericSpace, ALongReductionIsSplitAndNoThreadSumsMoreThanTwoToThe18TermsOfAnOutput) {
  const Task task = parse_task(kFrobenius, "frobenius.json");
  auto s = generic_space(task);
  ASSERT_TRUE(s);
  const int64_t K = 112LL * 64 * 512 * 512;
  int64_t legal = 0, split = 0;
  std::mt19937_64 rng(5);
  Genome g{s->id(), std::vector<int64_t>(s->knobs().size())};
  std::function<void(size_t)> walk = [&](size_t k) {
    if (k < s->knobs().size()) {
      for (int64_t v : s->knobs()[k].values) g.values[k] = v, walk(k + 1);
      return;
    }
    if (!s->legal(g)) return;
    const auto v = s->values(g);
    const int64_t lanes = std::min(v.at("kLanes"), v.at("kBlock")), chunk = (K + v.at("kSplit") - 1) / v.at("kSplit");
    EXPECT_LE((chunk + lanes - 1) / lanes, 262144) << g.to_string();
    ++legal;
    split += v.at("kSplit") > 1;
    if (legal % 97 == 1) {  // a few renders: partials, their combine, then the division
      const std::string text = s->render(g);
      EXPECT_EQ(steps_of(text), 3u) << g.to_string();
      EXPECT_NE(text.find("kSplit " + std::to_string(v.at("kSplit")) + ": each non-contraction reduction's terms split"),
                std::string::npos);
      EXPECT_NO_THROW(parse_candidate(text, "c.cu", task)) << g.to_string();
    }
  };
  walk(0);
  EXPECT_GE(legal, 100);
  EXPECT_EQ(split, legal) << "K = 1.88e9 needs a split: 1024 lanes x 2^18 terms is 2.7e8";
  // The bound is an axis condition an exported header checks: the workload passes it, an input
  // 1024 times larger fails it.
  const Genome pick = s->random_genome(rng);
  const std::map<std::string, int64_t> sizes{{"B", 112}, {"F", 64}, {"H", 512}, {"W", 512}},
      larger{{"B", 112 * 1024}, {"F", 64}, {"H", 512}, {"W", 512}};
  int bounds = 0;
  for (const ShapeCondition& c : shape_conditions(*s, pick).conditions) {
    if (c.why.rfind("a thread sums at most 2^18", 0) != 0) continue;
    ++bounds;
    EXPECT_TRUE(c.holds(sizes)) << c.text();
    EXPECT_FALSE(c.holds(larger)) << c.text();
  }
  EXPECT_EQ(bounds, 1) << pick.to_string();
}

// KernelBench level 1 #4's shape: a matrix-vector product of K = 1,048,576. One thread per output
// summed all of it and took 1.1 s a launch on an H100; products keep a thread within 2^18 terms too.
TEST(GenericSpace, ALongProductSharesEachOutputOverEnoughLanes) {
  const Task task = parse_task(R"JSON({"name": "matvec",
    "axes": {"M": {"type": "var"}, "K": {"type": "var"}},
    "inputs": {"A": {"shape": ["M", "K"], "dtype": "float32"}, "B": {"shape": ["K", 1], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["M", 1], "dtype": "float32"}},
    "reference": "def run(A, B):\n    return torch.matmul(A, B)",
    "workloads": [{"M": 2048, "K": 1048576}, {"M": 4, "K": 64}],
    "tolerance": {"atol": 1e-4, "rtol": 1e-4}})JSON",
                               "matvec.json");
  auto s = generic_space(task);
  ASSERT_TRUE(s);
  std::set<int64_t> lanes;
  std::mt19937_64 rng(4);
  for (int i = 0; i < 200; ++i) lanes.insert(s->values(s->random_genome(rng)).at("kContractLanes"));
  EXPECT_EQ(lanes, (std::set<int64_t>{8, 32})) << "2^20 terms over 8 lanes is 2^17 a thread; over 1 it is 2^20";
}

TEST(GenericSpace, KSplitIsPinnedToOneWithoutANonContractionReduction) {
  // No reduction (relu), a scan only (cumsum: has_reduce, but nothing to split), a product only.
  for (const char* file : {"tasks/01_relu.json", "tasks/09_cumsum.json", "tasks/13_linear_leaky_relu.json"}) {
    auto s = generic_space(load_task(kRoot + file));
    ASSERT_TRUE(s) << file;
    const int split = s->manifest().knob("kSplit");
    ASSERT_GE(split, 0);
    Genome g{s->id(), std::vector<int64_t>(s->knobs().size())};
    int64_t legal = 0;
    std::function<void(size_t)> walk = [&](size_t k) {
      if (k == s->knobs().size()) {
        if (!s->legal(g)) return;
        ++legal;
        EXPECT_EQ(g.values[static_cast<size_t>(split)], 1) << file << " " << g.to_string();
        return;
      }
      for (int64_t v : s->knobs()[k].values) g.values[k] = v, walk(k + 1);
    };
    walk(0);
    EXPECT_GT(legal, 0) << file;
  }
  // A row reduction does split (tasks/06_sum_dim1.json).
  auto s = generic_space(load_task(kRoot + "tasks/06_sum_dim1.json"));
  ASSERT_TRUE(s);
  Genome g{s->id(), {}};
  for (const Knob& k : s->knobs()) g.values.push_back(k.values.front());
  g.values[static_cast<size_t>(s->manifest().knob("kSplit"))] = 8;
  EXPECT_TRUE(s->legal(g)) << g.to_string();
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
}  // namespace kevo::lower
