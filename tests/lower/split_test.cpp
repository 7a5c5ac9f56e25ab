// Graphs with a reduction after the GEMM as the search relies on them: a linear layer followed by
// a softmax, a layer norm or a logsumexp over N lowers onto the gemm family's kernel (with what of
// the graph its epilogue takes) storing an fp32 scratch buffer, then the family that serves the
// rest (normalize, reduce, else generic) reading it; the space holds both genomes (each family's
// knobs mutate on their own), hundreds of legal genomes, and its sampled genomes render plans that
// resolve at every workload and compile with NVRTC for sm_90a and sm_100a. A convolution followed
// by a group norm, a max pool or a softmax over channels splits the same way onto the conv family.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/builder.h"
#include "lower/lower.h"
#include "mutate/space.h"

namespace kevo::lower {

using namespace mutate;  // the spaces' vocabulary: DesignSpace, Genome, Facts, ...
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

// Contract, the split space's id and its family.
struct SplitTask {
  std::string file, space, family;
};
const std::vector<SplitTask>& split_tasks() {
  static const std::vector<SplitTask> tasks = {
      {"tests/data/tasks/linear_softmax.json", "gemm/linear+normalize_rows/softmax", "gemm+normalize"},
      {"tests/data/tasks/linear_softmax_bf16.json", "gemm/linear+generic", "gemm+generic"},
      {"tests/data/tasks/linear_layer_norm.json", "gemm/linear+normalize_rows/layer_norm", "gemm+normalize"},
      {"tests/data/tasks/linear_logsumexp.json", "gemm/linear+reduce_rows", "gemm+reduce"}};
  return tasks;
}

// Genomes compiled per task and architecture here; KEVO_SPLIT_SAMPLES raises it.
int samples() {
  const char* s = std::getenv("KEVO_SPLIT_SAMPLES");
  return s ? std::max(1, std::atoi(s)) : 2;
}

std::unique_ptr<DesignSpace> split_space(const Task& task, const std::string& arch = "") {
  for (auto& s : lower(task, arch))
    if (s->manifest().family.rfind("gemm+", 0) == 0) return std::move(s);
  return nullptr;
}

std::vector<std::string> kernels(const Candidate& c) {
  std::vector<std::string> names;
  for (const auto& step : c.plan.steps) names.push_back(std::get<KernelStep>(step.op).kernel);
  return names;
}

TEST(SplitSpaces, AReductionAfterTheGemmLowersOntoTheGemmThenTheFamilyOfTheRest) {
  for (const SplitTask& t : split_tasks()) {
    Task task = load_task(kRoot + t.file);
    auto s = split_space(task);
    ASSERT_NE(s, nullptr) << t.file;
    EXPECT_EQ(s->id(), t.space) << t.file;
    EXPECT_EQ(s->manifest().family, t.family) << t.file;
  }
}

// The conv-led split joined the gemm-led one's code: the gemm path renders what it rendered before
// (FNV-1a of the texts of seeded genomes, taken at the commit before the conv path existed).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// (Re-recorded when candidates began to include their templates instead of carrying them pasted.)
TEST(SplitSpaces, TheGemmSplitRendersAsBeforeTheConvSplit) {
  const std::map<std::string, uint64_t> want = {
      {"tests/data/tasks/linear_softmax.json", 4133329115746607240ull},
      {"tests/data/tasks/linear_layer_norm.json", 7475918986207692627ull},
      {"tests/data/tasks/linear_logsumexp.json", 10826635286853745270ull}};
  for (const auto& [file, hash] : want) {
    Task task = load_task(kRoot + file);
    uint64_t h = 0;
    for (auto& s : lower(task, "sm_90a")) {
      if (s->manifest().family.rfind("gemm+", 0) != 0) continue;
      std::mt19937_64 rng(17);
      h = h * 31 + fnv1a(s->id() + s->description() + s->manifest().doc);
      for (int i = 0; i < 3; ++i) h = h * 31 + fnv1a(s->render(s->random_genome(rng)));
    }
    EXPECT_EQ(h, hash) << file;
  }
}

// Task 13's whole graph fits the gemm epilogue: no split space joins its spaces.
TEST(SplitSpaces, AGraphTheEpilogueTakesWholeIsNotSplit) {
  Task task = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  for (const auto& s : lower(task)) EXPECT_EQ(s->manifest().family.find('+'), std::string::npos) << s->id();
}

// The genome is the gemm's knobs, then the rest's under a prefix; each part sets only its own
// plan's code, so that search mutates them independently.
TEST(SplitSpaces, TheGenomeIsTheGemmGenomeThenTheRestsAndEachSetsItsOwnKernel) {
  Task task = load_task(kRoot + "tests/data/tasks/linear_softmax.json");
  auto s = split_space(task);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->knobs().front().name, "kPath");
  EXPECT_GE(s->manifest().knob("kBM"), 0);
  EXPECT_GE(s->manifest().knob("rest_kThreads"), 0);
  EXPECT_LT(s->manifest().knob("kThreads"), 0);
  std::mt19937_64 rng(7);
  const Genome g = s->random_genome(rng);
  auto code = [&](const Genome& x) {
    const std::string text = s->render(x);
    const size_t first = text.find("namespace kevo_first {"), second = text.find("// The second plan:");
    return std::make_pair(text.substr(first, second - first), text.substr(second));
  };
  const auto [first, second] = code(g);
  for (int i = 0; i < 200; ++i) {
    Genome h = s->random_genome(rng);
    std::copy(g.values.begin(), g.values.begin() + s->manifest().knob("rest_kThreads"), h.values.begin());
    if (!s->legal(h) || h == g) continue;
    const auto [f, r] = code(h);
    EXPECT_EQ(f, first);  // the same gemm genome: the same first plan
    if (r != second) return;
  }
  ADD_FAILURE() << "no rest genome changed the second plan";
}

// The plan runs the GEMM into the scratch buffer, then the rest's kernel reads it; the scratch is
// fp32 [M, N] and the gemm's own scratch (split-K) keeps its name beside it.
TEST(SplitSpaces, ThePlanStoresTheGemmResultInScratchAndTheRestReadsIt) {
  Task task = load_task(kRoot + "tests/data/tasks/linear_softmax.json");
  auto s = split_space(task);
  ASSERT_NE(s, nullptr);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20; ++i) {
    const Genome g = s->random_genome(rng);
    Candidate c = parse_candidate(s->render(g), g.to_string() + ".cu", task);
    const std::vector<std::string> names = kernels(c);
    ASSERT_GE(names.size(), 2u);
    const size_t gemm = std::find(names.begin(), names.end(), "kevo_gemm") - names.begin();
    ASSERT_LT(gemm, names.size()) << g.to_string();
    bool scratch = false;
    for (const ScratchBuffer& b : c.plan.buffers)
      if (b.name == "gemm_result") scratch = b.dtype == DType::Float32;
    EXPECT_TRUE(scratch) << g.to_string();
    const ResolvedPlan r = resolve_plan(c, task, task.workloads.front(), {});
    const int at = r.buffer("gemm_result");
    ASSERT_GE(at, 0);
    EXPECT_EQ(r.buffers[static_cast<size_t>(at)].shape, (Shape{1024, 4096}));
    // The last step (the rest's) reads the scratch; the gemm's writes it.
    auto reads = [&](const Step& step) {
      for (const auto& a : std::get<KernelStep>(step.op).args)
        if (a.buffer == "gemm_result") return true;
      return false;
    };
    EXPECT_TRUE(reads(c.plan.steps[gemm])) << g.to_string();
    EXPECT_TRUE(reads(c.plan.steps.back())) << g.to_string();
    EXPECT_GT(c.plan.steps.size() - 1, gemm);
  }
}

TEST(SplitSpaces, EverySplitSpaceHoldsAtLeastAHundredLegalGenomes) {
  for (const SplitTask& t : split_tasks()) {
    Task task = load_task(kRoot + t.file);
    for (const std::string arch : {"sm_90a", "sm_100a"}) {
      auto s = split_space(task, arch);
      ASSERT_NE(s, nullptr) << t.file;
      EXPECT_GE(estimate_legal(*s, 20000), 100) << t.file << " " << arch;
    }
  }
}

// The GEMM's precision modes a split space draws, over many random legal genomes.
std::set<int64_t> precisions_drawn(const DesignSpace& s) {
  std::mt19937_64 rng(3);
  std::set<int64_t> seen;
  const int knob = s.manifest().knob("kPrecision");
  for (int i = 0; i < 400; ++i) seen.insert(s.random_genome(rng).values[static_cast<size_t>(knob)]);
  return seen;
}

// A layer norm after the GEMM divides the GEMM's error by its row's spread: 3xbf16 products, which
// a softmax after the same GEMM at the same 1e-4 admits, left outputs at twice the tolerance on the
// H200, so the space does not offer them there (nor plain TF32); at a loose tolerance it does.
// Nor 3xTF32 chained on the tensor cores at K = 1024 (their truncating adds left the same layer
// norm at twice the tolerance): only the promoted form, which adds each k step on the CUDA cores.
TEST(SplitSpaces, ANormAfterTheGemmAsksTheGemmForMoreAccuracy) {
  Task softmax = load_task(kRoot + "tests/data/tasks/linear_softmax.json");
  Task norm = load_task(kRoot + "tests/data/tasks/linear_layer_norm.json");
  ASSERT_EQ(softmax.tolerance.rtol, norm.tolerance.rtol);
  EXPECT_EQ(precisions_drawn(*split_space(softmax, "sm_90a")).count(3), 1u) << "3xbf16 at 1e-4 before a softmax";
  EXPECT_EQ(precisions_drawn(*split_space(norm, "sm_90a")), std::set<int64_t>{4}) << "promoted 3xTF32 only before a layer norm";
  norm.tolerance = {1e-2, 1e-2};
  EXPECT_EQ(precisions_drawn(*split_space(norm, "sm_90a")).count(3), 1u) << "3xbf16 before a layer norm at 1e-2";
}

// A sum over N after the GEMM adds N of its rounding errors into outputs the tolerance may judge by
// atol alone (a sum near zero): on an H100, 3xbf16 products summed over N = 8192 came out 5x the
// tolerance at 1e-4 (KernelBench level 2 #18). The GEMM's precision is admitted against
// rtol / sqrt(N): at N = 4096 and 1e-4 neither 3xbf16 nor plain TF32 nor 3xTF32 chained on the
// tensor cores, only the promoted form; at 1e-2 3xbf16 again, and at 1e-4 before a sum of values
// that cannot be negative.
TEST(SplitSpaces, ASumAfterTheGemmAsksTheGemmForAccuracyThatGrowsWithTheTermsSummed) {
  Task sum = load_task(kRoot + "tests/data/tasks/linear_sum.json");
  auto s = split_space(sum, "sm_90a");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(precisions_drawn(*s), std::set<int64_t>{4}) << "promoted 3xTF32 only before a sum over 4096 at 1e-4";
  sum.tolerance = {1e-2, 1e-2};
  EXPECT_EQ(precisions_drawn(*split_space(sum, "sm_90a")).count(3), 1u) << "3xbf16 before the sum at 1e-2";
  // A sum of sigmoids cannot cancel: its relative error is its terms', and 3xbf16 stays at 1e-4.
  std::ifstream file(kRoot + "tests/data/tasks/linear_sum.json");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::string linear = "torch.sum(F.linear(x, W, b), dim=1";
  ASSERT_NE(text.find(linear), std::string::npos);
  text.replace(text.find(linear), linear.size(), "torch.sum(torch.sigmoid(F.linear(x, W, b)), dim=1");
  const Task sigmoids = parse_task(text, "linear_sum_of_sigmoids.json");
  EXPECT_EQ(precisions_drawn(*split_space(sigmoids, "sm_90a")).count(3), 1u) << "3xbf16 before a sum of sigmoids at 1e-4";
}

// A split space's legal genomes are a small share of its domain (each part's share, multiplied):
// it counts them from its parts' own legal draws, so lower() sees the room it gives search (and
// does not add the slow generic baseline beside it), and its random genomes are drawn the same way.
TEST(SplitSpaces, TheSplitSpaceCountsItsLegalGenomesFromItsParts) {
  Task task = load_task(kRoot + "tests/data/tasks/linear_softmax.json");
  std::vector<std::string> families;
  for (const auto& s : lower(task, "sm_90a")) families.push_back(s->manifest().family);
  EXPECT_EQ(std::count(families.begin(), families.end(), "generic"), 0) << "the split spaces leave room enough";
  auto s = split_space(task, "sm_90a");
  ASSERT_NE(s, nullptr);
  EXPECT_GE(estimate_legal(*s, 2000), 1e6);
  std::mt19937_64 rng(5);
  std::set<std::vector<int64_t>> drawn;
  for (int i = 0; i < 200; ++i) {
    Genome g = s->random_genome(rng);
    std::string why;
    ASSERT_TRUE(s->legal(g, &why)) << why;
    drawn.insert(g.values);
  }
  EXPECT_GE(drawn.size(), 195u) << "draws spread over the space";
}

eval::BuildResult build_uncached(const Candidate& c, const std::string& arch) {
  eval::BuildRequest req;
  req.source = c.source;
  req.name_expressions = c.kernel_names();
  req.arch = arch;
  req.use_cache = false;
  return eval::build(req);
}

// samples() random genomes of s (lowered for arch) render candidates that resolve at every
// workload (parse_candidate) and compile there.
void expect_samples_compile(const Task& task, const DesignSpace& s, const std::string& arch, std::mt19937_64& rng) {
  for (int i = 0; i < samples(); ++i) {
    const Genome g = s.random_genome(rng);
    Candidate c = parse_candidate(s.render(g), g.to_string() + ".cu", task);
    eval::BuildResult r = build_uncached(c, arch);
    ASSERT_EQ(r.status, eval::BuildStatus::Ok) << task.file << " " << g.to_string() << " " << arch << ": " << r.error << "\n"
                                               << r.log;
  }
}

// Genomes legal on each architecture (wgmma and mma.sync on sm_90a, mma.sync on sm_100a) render
// candidates that resolve at every workload (parse_candidate) and compile there.
TEST(SplitSpaces, SampledGenomesCompileForHopperAndBlackwell) {
  std::mt19937_64 rng(20261203);
  for (const SplitTask& t : split_tasks()) {
    Task task = load_task(kRoot + t.file);
    for (const std::string arch : {"sm_90a", "sm_100a"}) {
      auto s = split_space(task, arch);
      ASSERT_NE(s, nullptr) << t.file;
      expect_samples_compile(task, *s, arch, rng);
    }
  }
}

// A convolution followed by a norm, a pooling or a softmax over channels: the conv family's kernel
// stores the convolution's full output (rank 4 or 5) into the fp32 scratch conv_result, and the
// family that serves the rest reads it.
struct ConvSplitTask {
  std::string file, space, family, kernel;
  Shape scratch;  // at the first workload
};
const std::vector<ConvSplitTask>& conv_split_tasks() {
  static const std::vector<ConvSplitTask> tasks = {
      {"tests/data/tasks/conv2d_group_norm.json", "conv/conv2d+normalize_rows/group_norm", "conv+normalize", "kevo_conv", {4, 32, 32, 28}},
      {"tests/data/tasks/conv_transpose2d_max_pool.json", "conv/conv_transpose2d+pool/max_pool2d", "conv+pool", "kevo_conv", {4, 32, 48, 40}},
      {"tests/data/tasks/conv3d_softmax_channels.json", "conv/conv3d+generic", "conv+generic", "kevo_conv", {2, 16, 8, 10, 12}}};
  return tasks;
}

std::unique_ptr<DesignSpace> conv_split_space(const Task& task, const std::string& arch = "") {
  for (auto& s : lower(task, arch))
    if (s->manifest().family.rfind("conv+", 0) == 0) return std::move(s);
  return nullptr;
}

TEST(ConvSplitSpaces, AReductionPoolingOrNormAfterAConvolutionLowersOntoTheConvThenTheFamilyOfTheRest) {
  for (const ConvSplitTask& t : conv_split_tasks()) {
    Task task = load_task(kRoot + t.file);
    auto s = conv_split_space(task);
    ASSERT_NE(s, nullptr) << t.file;
    EXPECT_EQ(s->id(), t.space) << t.file;
    EXPECT_EQ(s->manifest().family, t.family) << t.file;
    EXPECT_GE(s->manifest().knob("kOffsets"), 0) << "the conv family's knobs first";
    for (const std::string arch : {"sm_90a", "sm_100a"}) {
      auto a = conv_split_space(task, arch);
      ASSERT_NE(a, nullptr) << t.file << " " << arch;
      EXPECT_GT(estimate_legal(*a, 20000), 100) << t.file << " " << arch;
    }
  }
}

// The plan runs the convolution into conv_result (fp32, the output's full shape), then the rest's
// last kernel reads it.
TEST(ConvSplitSpaces, ThePlanStoresTheConvolutionInScratchAndTheRestReadsIt) {
  std::mt19937_64 rng(13);
  for (const ConvSplitTask& t : conv_split_tasks()) {
    Task task = load_task(kRoot + t.file);
    auto s = conv_split_space(task);
    ASSERT_NE(s, nullptr) << t.file;
    for (int i = 0; i < 12; ++i) {
      const Genome g = s->random_genome(rng);
      Candidate c = parse_candidate(s->render(g), g.to_string() + ".cu", task);
      const std::vector<std::string> names = kernels(c);
      const size_t conv = std::find(names.begin(), names.end(), t.kernel) - names.begin();
      ASSERT_LT(conv, names.size()) << t.file << " " << g.to_string();
      bool fp32 = false;
      for (const ScratchBuffer& b : c.plan.buffers)
        if (b.name == "conv_result") fp32 = b.dtype == DType::Float32;
      EXPECT_TRUE(fp32) << t.file;
      const ResolvedPlan r = resolve_plan(c, task, task.workloads.front(), {});
      const int at = r.buffer("conv_result");
      ASSERT_GE(at, 0) << t.file;
      EXPECT_EQ(r.buffers[static_cast<size_t>(at)].shape, t.scratch) << t.file;
      auto reads = [&](const Step& step) {
        for (const auto& a : std::get<KernelStep>(step.op).args)
          if (a.buffer == "conv_result") return true;
        return false;
      };
      EXPECT_TRUE(reads(c.plan.steps[conv])) << t.file << " " << g.to_string();
      EXPECT_TRUE(reads(c.plan.steps.back())) << t.file << " " << g.to_string();
      EXPECT_GT(c.plan.steps.size() - 1, conv) << t.file;
      for (const auto& step : c.plan.steps) {  // the output is the rest's alone
        if (&step == &c.plan.steps.back() || std::get<KernelStep>(step.op).kernel != t.kernel) continue;
        for (const auto& a : std::get<KernelStep>(step.op).args) EXPECT_NE(a.buffer, "y") << t.file;
      }
    }
  }
}

TEST(ConvSplitSpaces, SampledGenomesCompileForHopperAndBlackwell) {
  std::mt19937_64 rng(20261205);
  for (const ConvSplitTask& t : conv_split_tasks()) {
    Task task = load_task(kRoot + t.file);
    for (const std::string arch : {"sm_90a", "sm_100a"}) {
      auto s = conv_split_space(task, arch);
      ASSERT_NE(s, nullptr) << t.file;
      expect_samples_compile(task, *s, arch, rng);
    }
  }
}

// A graph the conv family takes whole although its chain stops at the convolution's value read
// twice (sigmoid(y) * y) keeps the spaces it had: no conv+elementwise split beside the conv space.
TEST(ConvSplitSpaces, AGraphTheConvEpilogueTakesWholeIsNotSplit) {
  Task task = parse_task(R"({
    "name": "conv2d_silu_residual",
    "axes": {"N": {"type": "var"}, "H": {"type": "var"}, "W": {"type": "var"}},
    "inputs": {
      "x": {"shape": ["N", 16, "H", "W"], "dtype": "float32", "init": {"dist": "uniform", "low": -1, "high": 1}},
      "weight": {"shape": [32, 16, 3, 3], "dtype": "float32", "init": {"dist": "kaiming_uniform", "a": 2.23606797749979}}
    },
    "outputs": {"y": {"shape": ["N", 32, "H - 2", "W - 2"], "dtype": "float32"}},
    "reference": "import torch\nimport torch.nn.functional as F\n\ndef run(x, weight):\n    y = F.conv2d(x, weight)\n    return torch.sigmoid(y) * y\n",
    "workloads": [{"N": 2, "H": 20, "W": 18}, {"N": 1, "H": 9, "W": 7, "timed": false}],
    "tolerance": {"atol": 1e-4, "rtol": 1e-4}
  })", "conv2d_silu_residual.json");
  bool conv = false;
  for (const auto& s : lower(task, "sm_90a")) {
    conv = conv || s->id() == "conv/conv2d";
    EXPECT_NE(s->manifest().family.rfind("conv+", 0), 0u) << s->id();
  }
  EXPECT_TRUE(conv);
}

// A group norm after the convolution divides its error by the group's spread: the conv's
// precision is admitted against a 16th of rtol, as a GEMM's is before a layer norm. At rtol 1e-5
// and K = 144 3xTF32 (the conv family has no promoted form) meets 1e-5 but not its 16th: no split,
// while a softmax after a conv3d at the same rtol keeps its split.
TEST(ConvSplitSpaces, ANormAfterTheConvolutionAsksItForMoreAccuracy) {
  Task norm = load_task(kRoot + "tests/data/tasks/conv2d_group_norm.json");
  auto s = conv_split_space(norm, "sm_90a");
  ASSERT_NE(s, nullptr);
  std::mt19937_64 rng(3);
  std::set<int64_t> seen;
  for (int i = 0; i < 200; ++i) seen.insert(s->values(s->random_genome(rng)).at("kPrecision"));
  EXPECT_EQ(seen, (std::set<int64_t>{0, 4})) << "3xTF32 and promoted 3xTF32 only before a group norm at 1e-4";
  norm.tolerance.rtol = 1e-5;  // a 16th of it is below 3xTF32's drift at this K: the promoted form alone
  auto tight = conv_split_space(norm, "sm_90a");
  ASSERT_NE(tight, nullptr);
  seen.clear();
  for (int i = 0; i < 200; ++i) seen.insert(tight->values(tight->random_genome(rng)).at("kPrecision"));
  EXPECT_EQ(seen, std::set<int64_t>{4});
  Task softmax = load_task(kRoot + "tests/data/tasks/conv3d_softmax_channels.json");
  softmax.tolerance.rtol = 1e-5;
  EXPECT_NE(conv_split_space(softmax, "sm_90a"), nullptr);
}

// The row-statistics variant: softmax, log_softmax and logsumexp over N get it beside the
// two-kernel plan (a layer norm, a 16-bit output or a rest of several ops do not).
std::unique_ptr<DesignSpace> row_stats_space(const Task& task, const std::string& arch = "") {
  for (auto& s : lower(task, arch))
    if (s->manifest().family == "gemm+row_stats") return std::move(s);
  return nullptr;
}

const std::vector<std::string>& row_stats_tasks() {
  static const std::vector<std::string> files = {"tests/data/tasks/linear_softmax.json", "tests/data/tasks/linear_logsumexp.json",
                                                 "tests/data/tasks/linear_bf16_log_softmax.json"};
  return files;
}

TEST(RowStatsSpaces, RowReductionsOverNGetTheEpiloguesStatisticsBesideTheTwoKernelPlan) {
  const std::map<std::string, std::string> want = {
      {"tests/data/tasks/linear_softmax.json", "gemm/linear+row_stats/softmax"},
      {"tests/data/tasks/linear_logsumexp.json", "gemm/linear+row_stats/logsumexp"},
      {"tests/data/tasks/linear_bf16_log_softmax.json", "gemm/linear+row_stats/log_softmax"}};
  for (const auto& [file, id] : want) {
    Task task = load_task(kRoot + file);
    auto s = row_stats_space(task);
    ASSERT_NE(s, nullptr) << file;
    EXPECT_EQ(s->id(), id);
    EXPECT_NE(split_space(task), nullptr) << file;  // the two-kernel plan stays beside it
  }
  for (const char* file : {"tests/data/tasks/linear_layer_norm.json", "tests/data/tasks/linear_softmax_bf16.json"})
    EXPECT_EQ(row_stats_space(load_task(kRoot + file)), nullptr) << file;
}

// The GEMM writes the scratch and one (max, sum) pair per row and N tile; the second kernel reads
// both, told how many tiles a row has (the partial last tile of N = 90 included); no split-K
// and no second GEMM kernel, whose tiles would not be finished in the epilogue.
TEST(RowStatsSpaces, ThePlanPassesThePartialsOfEveryNTileToTheCombiningKernel) {
  Task task = load_task(kRoot + "tests/data/tasks/linear_softmax.json");
  auto s = row_stats_space(task);
  ASSERT_NE(s, nullptr);
  std::mt19937_64 rng(3);
  std::set<int64_t> widths;
  for (int i = 0; i < 12; ++i) {
    const Genome g = s->random_genome(rng);
    const auto v = s->values(g);
    EXPECT_EQ(v.at("kSplit"), 0);
    EXPECT_LE(v.at("kEpilogue"), 1);
    widths.insert(v.at("kBN"));
    Candidate c = parse_candidate(s->render(g), g.to_string() + ".cu", task);
    EXPECT_EQ(kernels(c), (std::vector<std::string>{"kevo_gemm", "kevo_row_stats"})) << g.to_string();
    const Workload& small = task.workloads.back();  // M = 24, N = 90
    const ResolvedPlan r = resolve_plan(c, task, small, {});
    const int64_t tiles = (90 + v.at("kBN") - 1) / v.at("kBN");
    const int part = r.buffer("gemm_row_stats");
    ASSERT_GE(part, 0);
    EXPECT_EQ(r.buffers[static_cast<size_t>(part)].shape, (Shape{24, tiles, 2}));
    const auto& args = std::get<ResolvedKernel>(r.steps.back()).args;
    ASSERT_FALSE(args.empty());
    EXPECT_EQ(args.back().integer, tiles) << g.to_string();
  }
  EXPECT_GT(widths.size(), 1u);
}

// Every instruction path the statistics ride on compiles: mma.sync on sm_90a and sm_100a,
// wgmma on sm_90a (fp32 operands through 3xTF32 or 3xbf16, and 16-bit ones fed by TMA, one tile
// per block or persistent).
TEST(RowStatsSpaces, SampledGenomesCompileOnEveryInstructionPath) {
  std::mt19937_64 rng(20261204);
  for (const std::string& file : row_stats_tasks()) {
    Task task = load_task(kRoot + file);
    const bool half = file.find("bf16") != std::string::npos;
    for (const std::string arch : {"sm_90a", "sm_100a"}) {
      auto s = row_stats_space(task, arch);
      ASSERT_NE(s, nullptr) << file;
      std::vector<Genome> genomes;
      auto with = [&](const std::map<std::string, int64_t>& want) {
        for (int i = 0; i < 4000; ++i) {
          Genome g = s->random_genome(rng);
          bool ok = true;
          for (const auto& [k, val] : want) ok = ok && s->values(g).at(k) == val;
          if (ok) return genomes.push_back(g);
        }
        ADD_FAILURE() << file << " " << arch << ": no legal genome found with the knobs asked for";
      };
      with({{"kPath", 0}});
      if (arch == "sm_90a") with({{"kPath", 1}, {"kLoad", 0}});
      if (arch == "sm_90a" && half) with({{"kLoad", 1}, {"kPersistent", 0}});
      if (arch == "sm_90a" && half) with({{"kLoad", 1}, {"kPersistent", 1}});
      for (int i = 0; i < samples(); ++i) genomes.push_back(s->random_genome(rng));
      for (const Genome& g : genomes) {
        Candidate c = parse_candidate(s->render(g), g.to_string() + ".cu", task);
        eval::BuildResult r = build_uncached(c, arch);
        ASSERT_EQ(r.status, eval::BuildStatus::Ok) << file << " " << g.to_string() << " " << arch << ": " << r.error << "\n"
                                                   << r.log;
      }
    }
  }
}

}  // namespace
}  // namespace kevo::lower
