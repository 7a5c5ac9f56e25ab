// Lowering and rendering as the search relies on them: every development task has a space,
// random legal genomes render deterministically into candidates whose plans hold for every
// workload and whose source compiles with NVRTC for Hopper and Blackwell; the manifests, not the
// compiler, reject bad knob combinations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <map>
#include <unistd.h>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include "core/candidate.h"
#include "core/error.h"
#include "core/task.h"
#include "core/template_library.h"
#include "eval/builder.h"
#include "eval/ptxas_report.h"
#include "lower/lower.h"
#include "mutate/manifest.h"
#include "mutate/space.h"
#include "tests/support/contract_files.h"

namespace kevo::lower {

using namespace mutate;  // the spaces' vocabulary: DesignSpace, Genome, Facts, ...
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

std::vector<std::string> contracts(const std::string& folder) { return testing::contract_files(kRoot, folder); }

// The development tasks, then the test contracts of ops they do not cover (batch norm).
std::vector<std::string> task_files() {
  std::vector<std::string> out = contracts("tasks"), extra = contracts("tests/data/tasks");
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::string stem(const std::string& path) {
  const size_t slash = path.rfind('/');
  return path.substr(slash + 1, path.size() - slash - 1 - 5);
}

constexpr size_t kMaxOwnBytes = 16 << 10;

// Genomes sampled per space here; KEVO_SPACE_SAMPLES raises it (bench/space_bench.sh: 200).
int samples() {
  const char* s = std::getenv("KEVO_SPACE_SAMPLES");
  return s ? std::max(1, std::atoi(s)) : 4;
}

// NVRTC for one architecture, past the cache (what the compiler says now, not what it said once).
eval::BuildResult build_uncached(const Candidate& c, const char* arch) {
  eval::BuildRequest req;
  req.source = c.source;
  req.name_expressions = c.kernel_names();
  req.arch = arch;
  req.use_cache = false;
  return eval::build(req);
}

class TaskSpaces : public ::testing::TestWithParam<std::string> {};

// Each architecture's samples come from the genomes legal there (the manifests' "archs": the
// gemm family's wgmma path is sm_90a's).
TEST_P(TaskSpaces, HaveASpaceWhoseSampledGenomesRenderValidPlansAndCompileForHopperAndBlackwell) {
  Task task = load_task(kRoot + GetParam());
  ASSERT_FALSE(lower(task).empty()) << task.name << " has no design space";
  std::mt19937_64 rng(20261129);
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    auto spaces = lower(task, arch);
    std::set<std::string> ids;
    for (const auto& s : spaces) {
      EXPECT_TRUE(ids.insert(s->id()).second) << "two spaces named " << s->id();
      for (int i = 0; i < samples(); ++i) {
        Genome g = s->random_genome(rng);
        ASSERT_TRUE(s->legal(g));
        std::string text = s->render(g);
        EXPECT_EQ(text, s->render(g)) << "rendering is not deterministic: " << g.to_string();
        // A candidate includes its family's templates and carries only its own lines: what a
        // language model reads of a parent.
        EXPECT_LE(text.size(), kMaxOwnBytes) << g.to_string() << " renders " << text.size() << " bytes of its own";
        Candidate c;
        try {
          c = parse_candidate(text, g.to_string() + ".cu", task);
        } catch (const InputError& e) {
          ADD_FAILURE() << g.to_string() << ": the rendered plan is invalid: " << e.what();
          continue;
        }
        if (c.kernel_names().empty()) continue;  // a plan of library calls only
        eval::BuildResult r = build_uncached(c, arch);
        EXPECT_EQ(r.status, eval::BuildStatus::Ok) << g.to_string() << " " << arch << ": " << r.error << "\n" << r.log;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tasks, TaskSpaces, ::testing::ValuesIn(task_files()),
                         [](const auto& info) { return stem(info.param); });

// Batch norm in its three shapes (and over long, offset channels) lowers onto the normalize family's channel kernels.
TEST(Spaces, BatchNormLowersOntoTheChannelKernels) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"batch_norm.json", "normalize_channels/batch_norm"},
      {"batch_norm_1d.json", "normalize_channels/batch_norm"},
      {"batch_norm_offset.json", "normalize_channels/batch_norm"},
      {"batch_norm_2d.json", "normalize_channel_columns/batch_norm"}};
  for (const auto& [file, id] : cases) {
    Task task = load_task(kRoot + "tests/data/tasks/" + file);
    auto spaces = lower(task);
    ASSERT_EQ(spaces.size(), 1u) << file;
    EXPECT_EQ(spaces.front()->id(), id) << file;
  }
}

// A genome of `s` from knob values by name; knobs not named take their first value.
Genome genome_of(const DesignSpace& s, const std::map<std::string, int64_t>& values) {
  Genome g{s.id(), {}};
  for (const Knob& k : s.knobs()) {
    auto it = values.find(k.name);
    g.values.push_back(it == values.end() ? k.values.front() : it->second);
  }
  return g;
}

// Renders and compiles every legal corner of `s` for Hopper and Blackwell; a corner's pool kernel
// may spill at most max_spill(corner) bytes (negative: any). Returns how many corners were legal.
int compile_pool_corners(const DesignSpace& s, const Task& task, const std::string& file,
                         const std::vector<std::map<std::string, int64_t>>& corners,
                         const std::function<int(const std::map<std::string, int64_t>&)>& max_spill) {
  int legal = 0;
  for (const auto& corner : corners) {
    Genome g = genome_of(s, corner);
    if (!s.legal(g)) continue;
    ++legal;
    Candidate c = parse_candidate(s.render(g), g.to_string() + ".cu", task);
    for (const char* arch : {"sm_90a", "sm_100a"}) {
      eval::BuildResult r = build_uncached(c, arch);
      EXPECT_EQ(r.status, eval::BuildStatus::Ok) << file << " " << g.to_string() << " " << arch << ": " << r.error;
      const eval::KernelResources* k = r.kernel("kevo_pool");
      EXPECT_NE(k, nullptr) << file << " " << g.to_string() << " " << arch;
      if (r.status != eval::BuildStatus::Ok || !k) continue;
      const int limit = max_spill(corner);
      if (limit >= 0) {
        EXPECT_LE(k->spill_store_bytes, limit) << file << " " << g.to_string() << " " << arch << ": " << k->registers
                                               << " registers";
      }
    }
  }
  return legal;
}

// The pool family's streaming kernel serves max and average pooling, 2-D and 1-D, whose window
// has stride 1 along W: its space is offered for them, and its corners render valid plans that
// compile for Hopper and Blackwell. At the largest unroll (kCols 4, kAhead 8) nothing spills: the
// manifest's register estimate keeps such blocks small enough. (Elsewhere ptxas may trade a
// register or three for the next occupancy step, its own choice at 48, 64 or 80 registers.)
TEST(Spaces, PoolStreamServesStrideOneWindowsAndItsCornersCompile) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tasks/12_max_pool2d.json", "pool_stream/max_pool2d"},
      {"tests/data/tasks/avg_pool2d.json", "pool_stream/avg_pool2d"},
      {"tests/data/tasks/avg_pool1d.json", "pool_stream/avg_pool1d"},
      {"tests/data/tasks/max_pool2d_dilated.json", "pool_stream/max_pool2d"},
      {"tests/data/tasks/max_pool2d_row_stride.json", "pool_stream/max_pool2d"}};
  const std::vector<std::map<std::string, int64_t>> corners = {
      {{"kBlockW", 32}, {"kBlockH", 1}, {"kCols", 1}, {"kRows", 4}, {"kAhead", 1}},
      {{"kBlockW", 512}, {"kBlockH", 1}, {"kCols", 4}, {"kRows", 4}, {"kAhead", 1}},
      {{"kBlockW", 128}, {"kBlockH", 2}, {"kCols", 4}, {"kRows", 128}, {"kAhead", 8}},
      {{"kBlockW", 64}, {"kBlockH", 1}, {"kCols", 4}, {"kRows", 128}, {"kAhead", 8}}};
  for (const auto& [file, id] : cases) {
    Task task = load_task(kRoot + file);
    auto spaces = lower(task);
    auto it = std::find_if(spaces.begin(), spaces.end(), [&](const auto& s) { return s->id() == id; });
    ASSERT_NE(it, spaces.end()) << file << " has no space " << id;
    const DesignSpace& s = **it;
    EXPECT_EQ(s.manifest().family, "pool");
    const int legal = compile_pool_corners(s, task, file, corners, [](const auto& corner) {
      return corner.at("kCols") == 4 && corner.at("kAhead") == 8 ? 0 : -1;  // the largest unroll: no spill
    });
    EXPECT_GE(legal, 2) << file;
  }
}

// The vector-loading streaming space is offered where every workload's rows have an even width
// (vectors stay inside a row and aligned), and only there; its corners compile for Hopper and
// Blackwell, and the manifest's register estimate keeps the largest unrolls from spilling.
TEST(Spaces, PoolVecServesEvenRowsAndItsCornersCompileWithoutSpills) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {"tasks/12_max_pool2d.json", true},
      {"tests/data/tasks/avg_pool2d_vec.json", true},
      {"tests/data/tasks/max_pool2d_dilated_vec.json", true},
      {"tests/data/tasks/avg_pool2d.json", false},            // W = 45 in a workload
      {"tests/data/tasks/max_pool2d_row_stride.json", false}};  // W = 129 and 3
  const std::vector<std::map<std::string, int64_t>> corners = {
      {{"kBlockW", 32}, {"kCols", 1}, {"kVec", 2}, {"kRows", 4}, {"kAhead", 1}},
      {{"kBlockW", 256}, {"kCols", 1}, {"kVec", 4}, {"kRows", 16}, {"kAhead", 2}, {"kStage", 1}},
      {{"kBlockW", 64}, {"kCols", 2}, {"kVec", 4}, {"kRows", 64}, {"kAhead", 4}},
      {{"kBlockW", 32}, {"kCols", 2}, {"kVec", 2}, {"kRows", 128}, {"kAhead", 8}, {"kStage", 1}}};
  for (const auto& [file, offered] : cases) {
    Task task = load_task(kRoot + file);
    auto spaces = lower(task);
    auto it = std::find_if(spaces.begin(), spaces.end(),
                           [&](const auto& s) { return s->id().rfind("pool_vec/", 0) == 0; });
    ASSERT_EQ(it != spaces.end(), offered) << file;
    if (!offered) continue;
    const int legal = compile_pool_corners(**it, task, file, corners, [](const auto&) { return 16; });
    EXPECT_GE(legal, 3) << file;
  }
  // The register estimate rules out the widest rows with the most loads ahead (ptxas spills them).
  Task task = load_task(kRoot + "tasks/12_max_pool2d.json");
  auto spaces = lower(task);
  auto it = std::find_if(spaces.begin(), spaces.end(), [](const auto& s) { return s->id() == "pool_vec/max_pool2d"; });
  ASSERT_NE(it, spaces.end());
  std::string why;
  EXPECT_FALSE((*it)->legal(
      genome_of(**it, {{"kBlockW", 32}, {"kCols", 2}, {"kVec", 4}, {"kRows", 32}, {"kAhead", 8}}), &why));
  EXPECT_NE(why.find("registers of one thread"), std::string::npos) << why;
}

// Windows the streaming kernel cannot serve (stride 2 along W) get the tiles kernel only.
TEST(Spaces, PoolStreamIsNotOfferedForStridesAlongW) {
  Task task = parse_task(R"({
    "name": "max_pool2d_s2", "axes": {"N": {"type": "var"}, "H": {"type": "var"}, "W": {"type": "var"}},
    "inputs": {"x": {"shape": ["N", "H", "W"], "dtype": "float32", "init": {"dist": "uniform", "low": 0, "high": 1}}},
    "outputs": {"y": {"shape": ["N", "H // 2", "W // 2"], "dtype": "float32"}},
    "reference": "import torch.nn.functional as F\n\ndef run(x):\n    return F.max_pool2d(x, 2)\n",
    "workloads": [{"N": 2, "H": 8, "W": 8}], "tolerance": {"atol": 0.0001, "rtol": 0.0001}})",
                         "max_pool2d_s2.json");
  auto spaces = lower(task);
  std::vector<std::string> ids;
  for (const auto& s : spaces) ids.push_back(s->id());
  EXPECT_EQ(ids, std::vector<std::string>{"pool/max_pool2d"});
}

TEST(Spaces, IllegalGenomesAreRejectedByTheManifestWithAReason) {
  Task task = load_task(kRoot + "tasks/01_relu.json");
  auto spaces = lower(task);
  ASSERT_FALSE(spaces.empty());
  const DesignSpace& s = *spaces.front();
  std::mt19937_64 rng(1);
  Genome g = s.random_genome(rng);
  std::string why;
  Genome outside = g;
  outside.values[0] = 3;  // no knob domain holds 3 threads
  EXPECT_FALSE(s.legal(outside, &why));
  EXPECT_NE(why.find("outside its domain"), std::string::npos) << why;
  Genome wrong_space = g;
  wrong_space.space = "nope";
  EXPECT_FALSE(s.legal(wrong_space, &why));
  Genome short_genome = g;
  short_genome.values.pop_back();
  EXPECT_FALSE(s.legal(short_genome, &why));
  // Some combination of legal domain values breaks a constraint: the manifest says which.
  bool found = false;
  Genome probe = g;
  std::function<void(size_t)> walk = [&](size_t k) {
    if (found) return;
    if (k == probe.values.size()) {
      if (!s.legal(probe, &why)) found = true;
      return;
    }
    for (int64_t v : s.knobs()[k].values) {
      probe.values[k] = v;
      walk(k + 1);
      if (found) return;
    }
  };
  walk(0);
  ASSERT_TRUE(found);
  EXPECT_NE(why.find("workload"), std::string::npos) << why;
}

// kAlgo = -1 renders as the plan's "algo": "auto" (with the comment saying what it means) and
// parses back to the autotuned choice; a convolution takes no algorithm choice, -1 included.
TEST(Spaces, AnAutotunedCublasLtAlgorithmRendersAsAutoAndConvolutionsRefuseIt) {
  auto knob = [](const DesignSpace& s, const std::string& name) {
    for (size_t i = 0; i < s.knobs().size(); ++i)
      if (s.knobs()[i].name == name) return i;
    ADD_FAILURE() << s.id() << " has no knob " << name;
    return size_t{0};
  };
  auto space = [](const std::vector<std::unique_ptr<DesignSpace>>& spaces, const std::string& id) -> const DesignSpace* {
    for (const auto& s : spaces)
      if (s->id().rfind(id, 0) == 0) return s.get();
    return nullptr;
  };
  Task linear = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  auto spaces = lower(linear);
  const DesignSpace* mm = space(spaces, "library/cublaslt_matmul");
  ASSERT_NE(mm, nullptr);
  std::mt19937_64 rng(13);
  for (int64_t algo : {int64_t{-1}, int64_t{0}, int64_t{2}}) {
    Genome g = mm->random_genome(rng);
    g.values[knob(*mm, "kAlgo")] = algo;
    std::string why;
    ASSERT_TRUE(mm->legal(g, &why)) << g.to_string() << ": " << why;
    const std::string text = mm->render(g);
    Candidate c = parse_candidate(text, g.to_string() + ".cu", linear);
    const auto& step = std::get<MatmulStep>(c.plan.steps.front().op);
    EXPECT_EQ(step.algo, algo) << g.to_string();
    if (algo == -1) {
      EXPECT_EQ(step.algo, kAutotunedAlgo);
      EXPECT_NE(text.find(R"("algo":"auto")"), std::string::npos) << text;
      EXPECT_NE(text.find("cuBLASLt's algorithm: autotuned per shape at first use: the fastest of cuBLASLt's first 8 "
                          "heuristic algorithms."),
                std::string::npos)
          << text;
    } else {
      EXPECT_EQ(text.find("\"auto\""), std::string::npos) << text;
    }
  }

  Task conv = load_task(kRoot + "tasks/14_conv2d_relu_bias.json");
  auto conv_spaces = lower(conv);
  const DesignSpace* cv = space(conv_spaces, "library/cudnn_conv2d");
  ASSERT_NE(cv, nullptr);
  Genome g = cv->random_genome(rng);
  g.values[knob(*cv, "kAlgo")] = -1;
  std::string why;
  EXPECT_FALSE(cv->legal(g, &why));
  EXPECT_NE(why.find("only cuBLASLt takes an algorithm choice"), std::string::npos) << why;
}

// cuBLASLt's fp32 emulation (kEmulation) is sm_100a's and sm_103a's: a cuBLASLt space lowered for
// sm_100a offers both strategies and renders them as the plan's "emulation", which a Hopper GPU
// refuses; lowered for sm_90a it never offers them and says why; a convolution never takes them.
TEST(Spaces, CublasLtEmulationIsOfferedOnlyOnSm100aAndSm103a) {
  auto library_space = [](const std::vector<std::unique_ptr<DesignSpace>>& spaces,
                          const std::string& id) -> const DesignSpace* {
    for (const auto& s : spaces)
      if (s->id() == id) return s.get();
    return nullptr;
  };
  auto emulation_knob = [](const DesignSpace& s) {
    for (size_t i = 0; i < s.knobs().size(); ++i)
      if (s.knobs()[i].name == "kEmulation") return i;
    ADD_FAILURE() << s.id() << " has no knob kEmulation";
    return size_t{0};
  };
  Task linear = load_task(kRoot + "tasks/13_linear_leaky_relu.json");
  std::mt19937_64 rng(20);
  for (const char* arch : {"sm_100a", "sm_103a"}) {
    auto spaces = lower(linear, arch);
    const DesignSpace* mm = library_space(spaces, "library/cublaslt_matmul");
    ASSERT_NE(mm, nullptr) << arch;
    const size_t k = emulation_knob(*mm);
    std::set<int64_t> drawn;
    for (int i = 0; i < 300; ++i) drawn.insert(mm->random_genome(rng).values[k]);
    EXPECT_EQ(drawn, (std::set<int64_t>{0, 1, 2})) << arch << ": off, performant and eager are all offered";
  }
  auto blackwell = lower(linear, "sm_100a"), hopper = lower(linear, "sm_90a");
  const DesignSpace* on = library_space(blackwell, "library/cublaslt_matmul");
  const DesignSpace* off = library_space(hopper, "library/cublaslt_matmul");
  ASSERT_NE(on, nullptr);
  ASSERT_NE(off, nullptr);
  const size_t k = emulation_knob(*on);
  for (auto [value, name, strategy] : {std::tuple{int64_t{1}, "performant", Emulation::Performant},
                                       std::tuple{int64_t{2}, "eager", Emulation::Eager}}) {
    Genome g = on->random_genome(rng);
    g.values[k] = value;
    std::string why;
    ASSERT_TRUE(on->legal(g, &why)) << g.to_string() << ": " << why;
    const std::string text = on->render(g);
    EXPECT_NE(text.find(std::string("\"emulation\":\"") + name + "\""), std::string::npos) << text;
    EXPECT_NE(text.find("cuBLASLt's products: fp32 emulated with bf16x9"), std::string::npos) << text;
    Candidate c = parse_candidate(text, g.to_string() + ".cu", linear);
    EXPECT_EQ(std::get<MatmulStep>(c.plan.steps.front().op).emulation, strategy);
    DeviceLimits h200;
    h200.arch = "sm_90a";
    EXPECT_THROW(parse_candidate(text, g.to_string() + ".cu", linear, h200), InputError);
    g.space = off->id();
    EXPECT_FALSE(off->legal(g, &why));
    EXPECT_NE(why.find("kEmulation=" + std::to_string(value) + " is not legal on sm_90a"), std::string::npos) << why;
  }
  for (int i = 0; i < 300; ++i) EXPECT_EQ(off->random_genome(rng).values[k], 0);
  Genome plain = on->random_genome(rng);
  plain.values[k] = 0;
  EXPECT_EQ(on->render(plain).find("emulation"), std::string::npos) << "off is the plan's default: not written";

  Task conv = load_task(kRoot + "tasks/14_conv2d_relu_bias.json");
  auto conv_spaces = lower(conv, "sm_100a");
  const DesignSpace* cv = library_space(conv_spaces, "library/cudnn_conv2d");
  ASSERT_NE(cv, nullptr);
  Genome g = cv->random_genome(rng);
  g.values[emulation_knob(*cv)] = 2;
  std::string why;
  EXPECT_FALSE(cv->legal(g, &why));
  EXPECT_NE(why.find("only cuBLASLt emulates fp32"), std::string::npos) << why;
}

TEST(Manifests, EveryFamilyManifestParsesAndNamesItsSource) {
  int families = 0;
  for (const auto& [path, text] : embedded_templates()) {
    if (path.size() < 14 || path.substr(path.size() - 14) != "/manifest.json") continue;
    ++families;
    Manifest m = parse_manifest(text, path);
    EXPECT_EQ(path, m.family + "/manifest.json");
    EXPECT_NO_THROW(template_text(m.source)) << m.source;
    EXPECT_FALSE(m.knobs.empty());
  }
  EXPECT_GE(families, 1);
}

// A family's other kernels have manifests of their own beside manifest.json (normalize/columns.json).
TEST(Manifests, EveryOtherManifestOfAFamilyParsesAndNamesItsFamily) {
  int others = 0;
  for (const auto& [path, text] : embedded_templates()) {
    if (path.size() < 5 || path.substr(path.size() - 5) != ".json" || path.find('/') == std::string::npos) continue;
    if (path.size() >= 14 && path.substr(path.size() - 14) == "/manifest.json") continue;
    ++others;
    EXPECT_NO_THROW(manifest_at(path)) << path;
    EXPECT_EQ(&manifest_at(path), &manifest_at(path)) << "parsed once";
  }
  EXPECT_GE(others, 5);  // normalize: columns, channels, channel_columns; pool: stream, vec
}

TEST(Manifests, MalformedManifestsGiveOneLinePositionedErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"source": "a.cuh", "knobs": {"k": {"values": [1]}}})", "m.json:1:1: missing 'family'"},
      {R"({"family": "f", "source": "a.cuh", "knobs": {}})", "knobs: must be a non-empty object"},
      {R"({"family": "f", "source": "a.cuh", "knobs": {"k": {"values": [1.5]}}})", "knobs.k.values[0]: knob values are integers"},
      {R"({"family": "f", "source": "a.cuh", "knobs": {"k": {"values": [1]}}, "constraints": [{"lhs": "k +", "op": "<=", "rhs": "1", "why": "w"}]})",
       "constraints[0].lhs: "},
      {R"({"family": "f", "source": "a.cuh", "knobs": {"k": {"values": [1]}}, "constraints": [{"lhs": "k", "op": "=<", "rhs": "1", "why": "w"}]})",
       "constraints[0].op: op is one of"},
      {R"({"family": "f", "family": "g", "source": "a.cuh", "knobs": {"k": {"values": [1]}}})", "family"},
  };
  for (const auto& [text, want] : cases) {
    try {
      parse_manifest(text, "m.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(want), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace kevo::lower

namespace kevo::lower {
namespace {

// The families are real CUDA C++: nvcc compiles a rendered instance of each of their kernels (one
// per manifest) with the templates pasted in, as a user's build would compile an exported kernel.
TEST(Templates, NvccCompilesARenderedInstanceOfEveryFamily) {
  const std::string nvcc = KEVO_NVCC;
  if (nvcc.empty() || access(nvcc.c_str(), X_OK) != 0) GTEST_SKIP() << "no nvcc";
  std::map<std::string, std::string> one_per_kernel;  // space kind ("normalize_rows") -> rendered text
  std::set<const Manifest*> seen;
  std::vector<Task> tasks;
  for (const std::string& f : task_files()) tasks.push_back(load_task(kRoot + f));
  std::mt19937_64 rng(3);
  for (const Task& t : tasks)
    for (const auto& s : lower(t))
      if (seen.insert(&s->manifest()).second)
        one_per_kernel[s->id().substr(0, s->id().find('/'))] = s->render(s->random_genome(rng));
  ASSERT_FALSE(one_per_kernel.empty());
  for (const auto& [family, text] : one_per_kernel) {
    std::string file = ::testing::TempDir() + "kevo_nvcc_" + family + ".cu";
    std::ofstream(file) << templates::inline_library(text);
    // -gencode, not -arch=sm_90a: nvcc 13's -arch=sm_90a also embeds compute_90 PTX, where the
    // gemm family's sm_90a-only paths (wgmma, TMA) stop at their static_asserts.
    std::string cmd = nvcc + " -std=c++17 -gencode=arch=compute_90a,code=sm_90a -c " + file + " -o " + file + ".o 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    int rc = p ? pclose(p) : -1;
    EXPECT_EQ(rc, 0) << family << ": " << out;
  }
}

// The kernel code (.text.* sections) of a CUBIN by section name.
std::map<std::string, std::string> kernel_code(const eval::BuildResult& r) {
  std::map<std::string, std::string> out;
  for (const eval::CubinSection& s : eval::cubin_sections(r.cubin))
    if (s.name.rfind(".text.", 0) == 0) out[s.name] = std::string(s.bytes);
  return out;
}

// A candidate that includes its templates is the same program as one that carries them pasted in
// (as candidates did, and exported headers do): the same SASS, kernel for kernel, for Hopper and
// Blackwell, one rendered instance of every kernel of every family.
TEST(Templates, ACandidateThatIncludesItsTemplatesCompilesToTheSameSassAsOneWithThemPasted) {
  std::map<std::string, std::pair<Task, std::string>> one_per_kernel;  // space kind -> task, rendered text
  std::set<const Manifest*> seen;
  std::mt19937_64 rng(5);
  for (const std::string& f : task_files()) {
    Task t = load_task(kRoot + f);
    for (const auto& s : lower(t))
      if (seen.insert(&s->manifest()).second)
        one_per_kernel.emplace(s->id().substr(0, s->id().find('/')), std::make_pair(t, s->render(s->random_genome(rng))));
  }
  ASSERT_GE(one_per_kernel.size(), 10u);
  for (const auto& [kind, rendered] : one_per_kernel) {
    const auto& [task, text] = rendered;
    ASSERT_TRUE(templates::includes_library(text)) << kind;
    const Candidate included = parse_candidate(text, kind + ".cu", task);
    const Candidate pasted = parse_candidate(templates::inline_library(text), kind + "_pasted.cu", task);
    EXPECT_FALSE(templates::includes_library(pasted.source)) << kind;
    if (included.kernel_names().empty()) continue;
    for (const char* arch : {"sm_90a", "sm_100a"}) {
      const eval::BuildResult a = build_uncached(included, arch), b = build_uncached(pasted, arch);
      ASSERT_EQ(a.status, eval::BuildStatus::Ok) << kind << " " << arch << ": " << a.error;
      ASSERT_EQ(b.status, eval::BuildStatus::Ok) << kind << " " << arch << ": " << b.error;
      const auto code_a = kernel_code(a), code_b = kernel_code(b);
      EXPECT_FALSE(code_a.empty()) << kind << " " << arch;
      EXPECT_TRUE(code_a == code_b) << kind << " " << arch << ": the kernels' code differs";
    }
  }
}

}  // namespace
}  // namespace kevo::lower
