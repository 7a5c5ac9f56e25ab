// The template files as headers: each compiles on its own (NVRTC, included and pasted, and nvcc,
// for Hopper), pasted into an exported header once each, the manifests' enum knobs name the template's
// enumerators (and renders spell them), and a knob combination the manifest rejects fails to
// compile with the manifest's own reason, from a static_assert in the template.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <unistd.h>

#include "core/error.h"
#include "core/task.h"
#include "core/template_library.h"
#include "eval/builder.h"
#include "lower/kit.h"
#include "mutate/manifest.h"
#include "mutate/mutation.h"
#include "mutate/space.h"

namespace kevo::lower {

using namespace mutate;  // the spaces' vocabulary: DesignSpace, Genome, Facts, ...
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

eval::BuildResult nvrtc(const std::string& source) {
  eval::BuildRequest req;
  req.source = source;
  req.arch = "sm_90a";
  req.use_cache = false;
  return eval::build(req);
}

std::vector<std::string> headers() {
  std::vector<std::string> out;
  for (const auto& [path, text] : embedded_templates())
    if (ends_with(path, ".cuh")) out.push_back(path);
  return out;
}

// What an exported header carries of the real templates: no #include or #pragma once is left, and
// the files the streaming pool kernel includes come once each, before it.
TEST(TemplateSources, PastedTheyCarryEachTemplateFileOnceAndNoInclude) {
  const std::string text = templates::inline_library(template_includes({"common.cuh", "pool/stream.cuh"}));
  EXPECT_EQ(text.find("#include"), std::string::npos);
  EXPECT_EQ(text.find("#pragma once"), std::string::npos);
  EXPECT_EQ(count(text, "struct Sum {"), 1u);              // common.cuh
  EXPECT_EQ(count(text, "struct PoolOp {"), 1u);           // pool/pool.cuh
  EXPECT_LT(text.find("struct PoolOp {"), text.find("struct StreamMax {"));
  for (const std::string& h : headers()) {
    const std::string one = templates::inline_library(template_includes({h}));
    EXPECT_EQ(one.find("#include"), std::string::npos) << h;
    EXPECT_EQ(count(one, "void load_vec("), 1u) << h;  // every header includes common.cuh
  }
}

// Every header of templates/ is a real header: NVRTC compiles a source that includes it as a
// candidate does (served from memory), and one with it pasted in as an exported header carries
// it; nvcc compiles a file that includes it from the source tree.
TEST(Templates, EveryHeaderCompilesOnItsOwnWithNvrtcIncludedAndPasted) {
  const std::vector<std::string> all = headers();
  EXPECT_GE(all.size(), 14u);
  for (const std::string& h : all) {
    eval::BuildResult included = nvrtc(template_includes({h}));
    EXPECT_EQ(included.status, eval::BuildStatus::Ok) << h << ": " << included.error << "\n" << included.log;
    eval::BuildResult pasted = nvrtc(templates::inline_library(template_includes({h})));
    EXPECT_EQ(pasted.status, eval::BuildStatus::Ok) << h << ": " << pasted.error << "\n" << pasted.log;
  }
}

TEST(Templates, EveryHeaderCompilesOnItsOwnWithNvcc) {
  const std::string nvcc = KEVO_NVCC;
  if (nvcc.empty() || access(nvcc.c_str(), X_OK) != 0) GTEST_SKIP() << "no nvcc";
  for (const std::string& h : headers()) {
    std::string name = h;
    for (char& c : name) c = c == '/' ? '_' : c;
    const std::string file = ::testing::TempDir() + "kevo_header_" + name + ".cu";
    FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "#include \"%stemplates/%s\"\n", kRoot.c_str(), h.c_str());
    std::fclose(f);
    const std::string cmd = nvcc + " -std=c++17 -arch=sm_90a -c " + file + " -o " + file + ".o 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    EXPECT_EQ(p ? pclose(p) : -1, 0) << h << ": " << out;
  }
}

// A manifest's enum knob names the template's enum class and its enumerators, value for value:
// NVRTC checks each enumerator's integer against the manifest's.
TEST(Templates, EnumKnobsNameTheTemplatesEnumeratorsValueForValue) {
  int knobs = 0;
  for (const auto& [path, text] : embedded_templates()) {
    if (!ends_with(path, ".json")) continue;
    const Manifest& m = manifest_at(path);
    std::string checks;
    for (const Knob& k : m.knobs) {
      if (k.enum_type.empty()) continue;
      ++knobs;
      for (int64_t v : k.values)
        checks += "static_assert(static_cast<long long>(" + k.enumerator(v) + ") == " + std::to_string(v) + "LL, \"" +
                  path + " " + k.name + "\");\n";
    }
    if (checks.empty()) continue;
    eval::BuildResult r = nvrtc(candidate_templates(m) + "\n" + checks);
    EXPECT_EQ(r.status, eval::BuildStatus::Ok) << path << ": " << r.error << "\n" << r.log;
  }
  EXPECT_GE(knobs, 15);
}

// Rendered candidates spell an enum knob's value as its enumerator (kevo::Cache::Registers).
TEST(Templates, RendersNameTheEnumeratorOfEveryEnumKnob) {
  // The gemm family draws from its own stream, so that the other families' draws stay as they were.
  std::mt19937_64 rng(4), gemm_rng(4);
  int seen = 0;
  for (const char* file : {"tasks/03_softmax.json", "tasks/04_rms_norm.json", "tasks/01_relu.json",
                           "tasks/06_sum_dim1.json", "tasks/09_cumsum.json", "tasks/10_mse_loss.json",
                           "tasks/12_max_pool2d.json", "tasks/13_linear_leaky_relu.json",
                           "tests/data/tasks/batch_norm.json", "tests/data/tasks/batch_norm_2d.json"}) {
    Task task = load_task(kRoot + file);
    for (const auto& s : lower(task)) {
      for (int i = 0; i < 4; ++i) {
        Genome g = s->random_genome(s->manifest().family == "gemm" ? gemm_rng : rng);
        const std::string text = s->render(g);
        if (text.find("__global__") == std::string::npos) continue;  // the library alone: no kernel
        for (size_t k = 0; k < s->knobs().size(); ++k) {
          if (s->knobs()[k].enum_type.empty()) continue;
          ++seen;
          const std::string word = s->knobs()[k].enumerator(g.values[k]);
          EXPECT_NE(text.find(word), std::string::npos) << file << " " << g.to_string() << ": no " << word;
        }
      }
    }
  }
  EXPECT_GE(seen, 40);
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

bool manifest_says(const Manifest& m, const std::string& why) {
  for (const Constraint& c : m.constraints)
    if (c.why == why) return true;
  return false;
}

// Rendered past the manifest's check, a combination it rejects stops NVRTC with a static_assert
// whose message is the manifest constraint's own reason.
TEST(Templates, ACombinationTheManifestRejectsFailsToCompileWithTheManifestsReason) {
  struct Case {
    std::string file, space;
    std::map<std::string, int64_t> values;
    std::string why;
  };
  const std::vector<Case> cases = {
      {"tasks/03_softmax.json", "normalize_rows/softmax", {{"kCache", 1}, {"kHint", 2}},
       "evict-last hints only matter when the row is re-read from global memory"},
      {"tasks/03_softmax.json", "normalize_rows/softmax", {{"kSplit", 8}, {"kAlgo", 0}},
       "a split row needs single-pass statistics"},
      {"tasks/04_rms_norm.json", "normalize_columns/mean", {{"kCache", 2}, {"kHint", 2}},
       "evict-last hints only matter when the columns are re-read from global memory"},
      {"tasks/09_cumsum.json", "scan/cumsum", {{"kItems", 16}, {"kVec", 4}}, "elements held in registers per thread"},
      {"tasks/07_argmax_dim1.json", "reduce_columns", {{"kThreads", 64}, {"kSplit", 16}, {"kCols", 4}, {"kVec", 4}},
       "static shared memory of the split combine"},
      {"tasks/12_max_pool2d.json", "pool_vec/max_pool2d", {{"kRows", 4}, {"kAhead", 8}},
       "loads ahead of the walk's end are wasted"},
      {"tests/data/tasks/batch_norm_2d.json", "normalize_channel_columns/batch_norm",
       {{"kBlockX", 256}, {"kBlockY", 4}, {"kVec", 4}},
       "static shared memory: the packed statistics of every thread's columns"},
  };
  for (const Case& c : cases) {
    Task task = load_task(kRoot + c.file);
    auto spaces = lower(task);
    const DesignSpace* s = find_space(spaces, c.space);
    ASSERT_NE(s, nullptr) << c.file << " " << c.space;
    EXPECT_TRUE(manifest_says(s->manifest(), c.why)) << c.space << " manifest has no constraint '" << c.why << "'";
    Genome g = genome_of(*s, c.values);
    EXPECT_FALSE(s->legal(g)) << g.to_string();
    // The whole .cu text (its plan is a comment): the plan may be invalid too, as the genome is.
    eval::BuildResult r = nvrtc(s->render(g));
    EXPECT_EQ(r.status, eval::BuildStatus::CompileError) << g.to_string();
    EXPECT_NE(r.log.find("static assertion failed with \"" + c.why + "\""), std::string::npos)
        << g.to_string() << ":\n" << r.log.substr(0, 4000);
  }
}

TEST(Manifests, EnumKnobsNeedTheirEnumeratorsOnePerValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"family": "f", "source": "a.cuh", "knobs": {"k": {"values": [0, 1], "enum": "E"}}})",
       "knobs.k: a knob of choices has both 'enum'"},
      {R"({"family": "f", "source": "a.cuh", "knobs": {"k": {"values": [0, 1], "names": ["A", "B"]}}})",
       "knobs.k: a knob of choices has both 'enum'"},
      {R"({"family": "f", "source": "a.cuh", "knobs": {"k": {"values": [0, 1], "enum": "E", "names": ["A"]}}})",
       "knobs.k.names: one enumerator per value (2)"},
      {R"({"family": "f", "source": "a.cuh", "knobs": {"k": {"values": [0], "enum": "E", "names": ["2x"]}}})",
       "knobs.k.names[0]: an enumerator is a C++ identifier"},
      {R"({"family": "f", "source": "a.cuh", "knobs": {"k": {"values": [0], "enum": "a::b", "names": ["A"]}}})",
       "knobs.k.enum: must be a C++ identifier"},
  };
  for (const auto& [text, want] : cases) {
    try {
      parse_manifest(text, "m.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  Manifest m = parse_manifest(
      R"({"family": "f", "source": "a.cuh", "knobs": {"k": {"values": [0, 2], "enum": "E", "names": ["A", "C"]}}})",
      "m.json");
  EXPECT_EQ(m.knobs.front().enumerator(2), "kevo::E::C");
  EXPECT_THROW(m.knobs.front().enumerator(1), std::out_of_range);
}

}  // namespace
}  // namespace kevo::lower
