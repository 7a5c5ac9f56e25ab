// The llm policy's prompt within its token budget: a parent of every family fits the default
// budget by the test tokenizer with the library parts it uses shown, optional parts stop where the
// budget does, and a prompt whose required part cannot fit is refused with the reason.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/task.h"
#include "lower/lower.h"
#include "mutate/space.h"
#include "policy/library_excerpts.h"
#include "policy/llm_prompt.h"
#include "tests/support/test_tokenizer.h"

namespace kevo::policy {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

std::vector<std::string> contracts(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir((kRoot + dir).c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) out.push_back(kRoot + dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct FamilyParent {
  Task task;
  std::string source;   // one rendered instance
  std::string sibling;  // another, as an inspiration
};

// One parent per kernel kind of every family (the kind is the space id's first part).
std::map<std::string, FamilyParent> one_parent_per_kind() {
  std::map<std::string, FamilyParent> out;
  std::set<const mutate::Manifest*> seen;
  std::mt19937_64 rng(7);
  std::vector<std::string> files = contracts("tasks"), more = contracts("tests/data/tasks");
  files.insert(files.end(), more.begin(), more.end());
  for (const std::string& f : files) {
    Task t = load_task(f);
    for (const auto& s : lower::lower(t))
      if (seen.insert(&s->manifest()).second)
        out.emplace(s->id().substr(0, s->id().find('/')),
                    FamilyParent{t, s->render(s->random_genome(rng)), s->render(s->random_genome(rng))});
  }
  return out;
}

// A GEMM-led parent (the largest library part a prompt shows) and a sibling.
FamilyParent gemm_parent() {
  std::mt19937_64 rng(7);
  Task t = load_task(kRoot + "tests/data/tasks/linear_softmax.json");
  for (const auto& s : lower::lower(t))
    if (s->id().rfind("gemm/", 0) == 0) return {t, s->render(s->random_genome(rng)), s->render(s->random_genome(rng))};
  throw std::runtime_error("linear_softmax lowers to no gemm space");
}

// A measurement report as the search writes it, for three workloads.
const char* kReport =
    "status ok\n"
    "registers 128, static+dynamic shared memory 49152 B, spills 0 B, theoretical occupancy 50%\n"
    "workload 0 {M=1024, N=4096}: ok, 0.2 ms (PyTorch eager 0.25 ms, 1.25x), DRAM floor 0.05 ms (25% of it)\n"
    "workload 1 {M=8192, N=4096}: ok, 1.6 ms (PyTorch eager 1.5 ms, 0.9375x), DRAM floor 0.4 ms (25% of it)\n"
    "slowest against PyTorch eager: workload 1 (0.9375x)\n";

Request request_for(const FamilyParent& p) {
  Request r;
  r.parent.variant = 1;
  r.parent.fitness = 1.1;
  r.parent.source = p.source;
  r.parent.report = kReport;
  Parent other;
  other.variant = 2;
  other.fitness = 1.3;
  other.source = p.sibling;
  r.inspirations = {other};
  return r;
}

int64_t counted(const nlohmann::json& messages) {
  int64_t n = 0;
  for (const auto& m : messages) n += testing::test_tokens(m.at("content").get<std::string>()) + kMessageFramingTokens;
  return n;
}

TEST(LlmPrompt, AParentOfEveryFamilyFitsTheDefaultBudgetWithTheLibraryPartsItUses) {
  const auto parents = one_parent_per_kind();
  ASSERT_GE(parents.size(), 10u);
  const LlmSettings defaults;
  EXPECT_EQ(defaults.max_prompt_tokens, 16384);
  for (const auto& [kind, p] : parents) {
    Context ctx;
    ctx.task = &p.task;
    ctx.best_fitness = 1.3;
    const Prompt prompt = build_prompt(ctx, request_for(p), defaults, testing::test_tokens);
    EXPECT_TRUE(prompt.refused.empty()) << kind << ": " << prompt.refused;
    const int64_t tokens = counted(prompt.messages);
    EXPECT_LE(tokens, defaults.max_prompt_tokens) << kind;
    EXPECT_EQ(tokens, prompt.tokens) << kind << ": the prompt's own count is the sum of its parts";
    const std::string user = prompt.messages[1].at("content");
    EXPECT_NE(user.find(p.source), std::string::npos) << kind << ": the parent's own lines, whole";
    EXPECT_NE(user.find("slowest against PyTorch eager"), std::string::npos) << kind;
    EXPECT_NE(user.find("## What you may change"), std::string::npos) << kind;
    EXPECT_NE(user.find("## Rules"), std::string::npos) << kind;
    if (kind != "library") {
      EXPECT_GT(prompt.library_parts, 0) << kind << ": no part of the library it uses is shown";
      EXPECT_NE(user.find("## kevo's template library"), std::string::npos) << kind;
    }
  }
}

TEST(LlmPrompt, OptionalPartsStopAtTheBudgetAndARequiredPartOverItIsRefused) {
  const FamilyParent gemm = gemm_parent();
  Context ctx;
  ctx.task = &gemm.task;
  LlmSettings c;
  const Prompt whole = build_prompt(ctx, request_for(gemm), c, testing::test_tokens);
  ASSERT_TRUE(whole.refused.empty());
  ASSERT_GT(whole.library_parts, 1);

  // Just above the required part: fewer library parts, no inspiration, still sent.
  c.max_prompt_tokens = whole.tokens - 1;
  const Prompt smaller = build_prompt(ctx, request_for(gemm), c, testing::test_tokens);
  EXPECT_TRUE(smaller.refused.empty());
  EXPECT_LE(smaller.tokens, c.max_prompt_tokens);
  EXPECT_LT(smaller.library_parts + smaller.inspirations, whole.library_parts + whole.inspirations);

  c.max_prompt_tokens = 1024;
  Request big = request_for(gemm);
  big.parent.source += std::string(8000, 'x') + "\n";
  const Prompt refused = build_prompt(ctx, big, c, testing::test_tokens);
  EXPECT_NE(refused.refused.find("--llm-max-prompt-tokens is 1024"), std::string::npos) << refused.refused;
  EXPECT_GT(refused.tokens, 1024);
}

// The library parts are the definitions of the kevo:: names the parent's own lines use, each
// from the header that defines it, its comment first.
TEST(LibraryExcerpts, AreTheDefinitionsOfTheNamesTheCandidateUses) {
  const std::vector<LibraryExcerpt> parts = library_excerpts(gemm_parent().source);
  std::map<std::string, const LibraryExcerpt*> by_name;
  for (const LibraryExcerpt& e : parts) by_name[e.name] = &e;
  ASSERT_TRUE(by_name.count("GemmConfig"));
  EXPECT_EQ(by_name.at("GemmConfig")->header, "kevo/gemm/gemm.cuh");
  EXPECT_NE(by_name.at("GemmConfig")->text.find("struct GemmConfig"), std::string::npos);
  ASSERT_TRUE(by_name.count("gemm"));
  EXPECT_NE(by_name.at("gemm")->text.find("gemm("), std::string::npos);
  for (const LibraryExcerpt& e : parts) {
    EXPECT_GT(e.line, 0) << e.name;
    EXPECT_LE(std::count(e.text.begin(), e.text.end(), '\n'), 40 + 30) << e.name << ": a long body is cut";
  }
  EXPECT_TRUE(library_excerpts("extern \"C\" __global__ void k() {}\n").empty());
}

}  // namespace
}  // namespace kevo::policy
