// What a language model's reply makes of a parent (the llm policy's and kevo serve's children):
// blocks applied to the parent, a rewrite keeping the parent's plan unless it brings one, a json
// plan replacing the plan comment, and nothing but device code let through.
#include <gtest/gtest.h>

#include "mutate/child_source.h"
#include "mutate/edit.h"

namespace kevo::mutate {
namespace {

const std::string kParent =
    "// a kernel\n"
    "/* kevo-plan\n{\"plan\": {\"steps\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [32], \"args\": [\"x\", \"y\"]}]}}\n*/\n"
    "extern \"C\" __global__ void k(const float* x, float* y) {\n"
    "  y[threadIdx.x] = x[threadIdx.x];\n"
    "}\n";

TEST(LlmChildSource, BlocksEditTheParent) {
  const std::string reply =
      "Scale it.\n<<<<<<< SEARCH\n  y[threadIdx.x] = x[threadIdx.x];\n=======\n  y[threadIdx.x] = 2 * x[threadIdx.x];\n"
      ">>>>>>> REPLACE\n";
  const std::string child = child_source(kParent, reply);
  EXPECT_NE(child.find("2 * x[threadIdx.x]"), std::string::npos);
  EXPECT_NE(child.find("/* kevo-plan"), std::string::npos);
  EXPECT_EQ(child.find("  y[threadIdx.x] = x[threadIdx.x];"), std::string::npos);
}

TEST(LlmChildSource, ARewriteWithoutAPlanKeepsTheParents) {
  const std::string child =
      child_source(kParent, "```cuda\nextern \"C\" __global__ void k(const float* x, float* y) { y[0] = x[0]; }\n```\n");
  EXPECT_EQ(child.rfind("/* kevo-plan", 0), 0u);
  EXPECT_NE(child.find("\"block\": [32]"), std::string::npos);
  EXPECT_NE(child.find("y[0] = x[0]"), std::string::npos);
}

TEST(LlmChildSource, AJsonPlanReplacesThePlanComment) {
  const std::string reply =
      "<<<<<<< SEARCH\n// a kernel\n=======\n// a wider kernel\n>>>>>>> REPLACE\n"
      "```json\n{\"plan\": {\"steps\": [{\"kernel\": \"k\", \"grid\": [2], \"block\": [64], \"args\": [\"x\", \"y\"]}]}}\n```\n";
  const std::string child = child_source(kParent, reply);
  EXPECT_NE(child.find("\"block\": [64]"), std::string::npos);
  EXPECT_EQ(child.find("\"block\": [32]"), std::string::npos);
  EXPECT_NE(child.find("// a wider kernel"), std::string::npos);
  EXPECT_EQ(child.find("/* kevo-plan"), child.rfind("/* kevo-plan"));  // still exactly one
}

TEST(LlmChildSource, OnlyDeviceCodePasses) {
  for (const char* bad : {"#include <cstdio>", "  #  include \"/etc/passwd\"", "#line 1 \"x\"",
                          "#if __has_include(<x>)\n#endif", "#include \"kevo/nope.cuh\"",
                          "#include \"kevo/gemm/manifest.json\"", "#include \"kevo/common.cuh\" x",
                          "#include <kevo/common.cuh>"}) {
    const std::string reply = std::string("```cuda\n") + bad + "\n__global__ void k() {}\n```\n";
    EXPECT_THROW(child_source(kParent, reply), std::runtime_error) << bad;
  }
  EXPECT_NO_THROW(child_source(kParent, "```cuda\n#pragma unroll\n#define N 4\n__global__ void k() {}\n```\n"));
  // kevo's template library, which the Builder serves from memory, may be included.
  EXPECT_NO_THROW(child_source(
      kParent, "```cuda\n#include \"kevo/common.cuh\"\n  # include \"kevo/gemm/gemm.cuh\"  // the GEMM\n__global__ void k() {}\n```\n"));
}

TEST(LlmChildSource, UnusableRepliesSayWhy) {
  try {
    child_source(kParent, "Just make it faster.");
    FAIL();
  } catch (const mutate::EditError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  try {
    child_source(kParent, "<<<<<<< SEARCH\nnot in the source\n=======\nx\n>>>>>>> REPLACE\n");
    FAIL();
  } catch (const mutate::EditError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("block 1", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace kevo::mutate
