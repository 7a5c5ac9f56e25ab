// The kevo binary as users run it: `kevo check` on bundled and broken contracts, flags, exit codes.
#include <gtest/gtest.h>

#include "tests/cli/run_kevo.h"

#include <fstream>
#include <string>

namespace {

using Result = kevo::testing::CommandResult;

Result kevo(const std::string& args) { return kevo::testing::run_kevo(args); }

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

const std::string kTasks = std::string(KEVO_SOURCE_ROOT) + "/tasks/";

TEST(KevoCheck, EveryBundledTaskPasses) {
  Result r = kevo("check " + kTasks + "*.json");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("14 of 14 contracts ok"), std::string::npos) << r.out;
  // The large workloads are reported but not run; the small ones run.
  EXPECT_NE(r.out.find("not run on the CPU"), std::string::npos);
  EXPECT_NE(r.out.find("ran on the CPU"), std::string::npos);
}

TEST(KevoCheck, ReportsBytesAndFlops) {
  Result r = kevo("check " + kTasks + "13_linear_leaky_relu.json");
  ASSERT_EQ(r.status, 0) << r.out;
  // x[1024, 8192] + W[8192, 8192] + b[8192] read, y[1024, 8192] written, 4 bytes each.
  int64_t bytes = 4LL * (1024 * 8192 + 8192LL * 8192 + 8192 + 1024 * 8192);
  EXPECT_NE(r.out.find("(" + std::to_string(bytes) + " bytes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("137.44 GFLOP"), std::string::npos) << r.out;  // 2 * 1024 * 8192 * 8192
}

TEST(KevoCheck, GraphFlagPrintsTheOpGraph) {
  Result r = kevo("check --graph --no-run " + kTasks + "03_softmax.json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("= softmax(%0) {dim=1} : float32[16, 16384]"), std::string::npos) << r.out;
}

TEST(KevoCheck, InvalidContractIsOneLineAndExitTwo) {
  std::string path = write_temp("broken.json", R"({"name": "x", "axes": {}, "inputs": {}})");
  Result r = kevo("check " + path);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, path + ":1:1: missing required field 'outputs'\n0 of 1 contract ok\n");
}

TEST(KevoCheck, GoodAndBadContractsTogetherStillExitTwo) {
  std::string bad = write_temp("bad_ref.json", R"({"name": "t", "axes": {"N": {"type": "var"}},
 "inputs": {"x": {"shape": ["N"], "dtype": "float32"}}, "outputs": {"y": {"shape": ["N"], "dtype": "float32"}},
 "reference": "def run(x):\n    return torch.nope(x)\n", "workloads": [{"N": 4}]})");
  Result r = kevo("check " + kTasks + "01_relu.json " + bad);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find(bad + ":3:15: reference:2:18: unknown function 'torch.nope'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 2 contracts ok"), std::string::npos) << r.out;
}

TEST(KevoCli, BadFlagsAndCommandsExitTwo) {
  EXPECT_EQ(kevo("check --no-such-flag " + kTasks + "01_relu.json").status, 2);
  EXPECT_EQ(kevo("check").status, 2);
  EXPECT_EQ(kevo("check --cpu-limit-mb -3 " + kTasks + "01_relu.json").status, 2);
  EXPECT_EQ(kevo("frobnicate").status, 2);
  EXPECT_EQ(kevo("").status, 2);
  EXPECT_EQ(kevo("check /nonexistent.json").status, 2);
  EXPECT_EQ(kevo("check --seed -1 " + kTasks + "01_relu.json").status, 2);
  Result folder = kevo("check " + kTasks);
  EXPECT_EQ(folder.status, 2);
  EXPECT_NE(folder.out.find("is a folder, not a file"), std::string::npos) << folder.out;
  EXPECT_EQ(kevo("--help").status, 0);
  EXPECT_EQ(kevo("check --help").status, 0);
}

TEST(KevoCli, VersionNamesEveryLibrary) {
  Result r = kevo("version");
  EXPECT_EQ(r.status, 0);
  for (const char* lib : {"LibTorch ", "NVRTC ", "HDF5 ", "Eigen ", "Boost ", "CUDA driver"})
    EXPECT_NE(r.out.find(lib), std::string::npos) << lib << " missing in:\n" << r.out;
}

}  // namespace
