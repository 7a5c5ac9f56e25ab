// `kevo compile` as users run it: bundled candidates build for Hopper and Blackwell in isolated
// compile workers; broken candidates and compile errors give one line and exit 2.
#include <gtest/gtest.h>

#include "tests/cli/run_kevo.h"

#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

namespace {

using Result = kevo::testing::CommandResult;

// A private cache per test run, so "compiled" really means NVRTC ran.
Result kevo(const std::string& args) {
  return kevo::testing::run_kevo(args, "KEVO_CACHE_DIR=" + ::testing::TempDir() + "kevo-cache ");
}

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

TEST(KevoCompile, BuildsTheSoftmaxCandidateForHopperAndBlackwell) {
  Result r = kevo("compile " + kRoot + "tasks/03_softmax.json " + kRoot +
                  "tests/data/candidates/softmax.cu --arch sm_90a --arch sm_100a --arch sm_103a --no-cache");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* arch : {"sm_90a: ok", "sm_100a: ok", "sm_103a: ok", "-arch=sm_100a"})
    EXPECT_NE(r.out.find(arch), std::string::npos) << arch << " missing in\n" << r.out;
  EXPECT_NE(r.out.find("softmax_rows<256> (_Z12softmax_rowsILi256EEvPKfPfi): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" registers, "), std::string::npos) << r.out;
}

TEST(KevoCompile, SecondBuildComesFromTheCache) {
  std::string cmd = "compile " + kRoot + "tasks/13_linear_leaky_relu.json " + kRoot +
                    "tests/data/candidates/linear_leaky_relu.json --cache-dir " + ::testing::TempDir() + "kevo-c2-" +
                    std::to_string(getpid());
  Result first = kevo(cmd);
  ASSERT_EQ(first.status, 0) << first.out;
  EXPECT_EQ(first.out.find("(from the cache)"), std::string::npos) << first.out;
  Result second = kevo(cmd);
  ASSERT_EQ(second.status, 0) << second.out;
  EXPECT_NE(second.out.find("(from the cache)"), std::string::npos) << second.out;
}

TEST(KevoCompile, CompileErrorIsOneLineAndExitTwo) {
  std::string path = ::testing::TempDir() + "broken.cu";
  std::ofstream(path) << "/* kevo-plan {\"plan\": {\"steps\": [{\"kernel\": \"k\", \"grid\": [\"B\"], \"block\": [256],\n"
                         "  \"args\": [\"x\", \"y\", {\"int\": \"D\"}]}]}} */\n"
                         "extern \"C\" __global__ void k(const float* x, float* y, int d) { y[0] = x[0] + undefined_name; }\n";
  Result r = kevo("compile " + kRoot + "tasks/03_softmax.json " + path + " --no-cache");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(path + ": sm_90a: compile_error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("undefined_name"), std::string::npos) << r.out;
}

TEST(KevoCompile, InvalidPlanIsOneLineAndExitTwo) {
  std::string path = ::testing::TempDir() + "bad_plan.cu";
  std::ofstream(path) << "/* kevo-plan {\"plan\": {\"steps\": [{\"kernel\": \"k\", \"grid\": [\"Q\"], \"block\": [256],\n"
                         "  \"args\": [\"x\", \"y\"]}]}} */\n"
                         "extern \"C\" __global__ void k(const float* x, float* y) {}\n";
  Result r = kevo("compile " + kRoot + "tasks/03_softmax.json " + path);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "not one line:\n" << r.out;
  EXPECT_EQ(r.out.rfind(path + ":1:", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("unknown axis 'Q'"), std::string::npos) << r.out;
}

// A plan whose cuBLASLt step emulates fp32 (bf16x9) builds for sm_100a and sm_103a; asked for
// sm_90a too, it is refused in one line naming the field and the architecture, before any build.
TEST(KevoCompile, EmulatedCublasLtPlanIsRefusedForHopper) {
  std::ifstream in(kRoot + "tests/data/candidates/linear_leaky_relu.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = R"("epilogue": "bias")";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), R"("epilogue": "bias", "emulation": "eager")");
  const std::string path = ::testing::TempDir() + "linear_emulated.json";
  std::ofstream(path) << text;
  const std::string task = kRoot + "tasks/13_linear_leaky_relu.json ";
  Result blackwell = kevo("compile " + task + path + " --arch sm_100a --arch sm_103a --no-cache");
  ASSERT_EQ(blackwell.status, 0) << blackwell.out;
  EXPECT_NE(blackwell.out.find("sm_103a: ok"), std::string::npos) << blackwell.out;
  Result hopper = kevo("compile " + task + path + " --arch sm_100a --arch sm_90a --no-cache");
  EXPECT_EQ(hopper.status, 2) << hopper.out;
  EXPECT_EQ(hopper.out.find('\n'), hopper.out.size() - 1) << "not one line:\n" << hopper.out;
  EXPECT_EQ(hopper.out.rfind(path + ":7:7: ", 0), 0u) << hopper.out;  // the step
  EXPECT_NE(hopper.out.find("plan.steps[0].emulation: \"eager\": cuBLASLt's bf16x9 fp32 emulation runs on sm_100a and "
                            "sm_103a only, not on sm_90a (use \"off\")"),
            std::string::npos)
      << hopper.out;
}

TEST(KevoCompile, BadArchitectureIsRejected) {
  Result r = kevo("compile " + kRoot + "tasks/03_softmax.json " + kRoot + "tests/data/candidates/softmax.cu --arch sm_12");
  EXPECT_EQ(r.status, 2) << r.out;
}

}  // namespace
