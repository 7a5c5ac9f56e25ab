// `kevo eval` as users run it on a machine without a GPU (CI) and with bad input anywhere: one
// line, exit 2. On a GPU machine the no-GPU case skips (the GPU tests cover evaluation itself).
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/run_kevo.h"

namespace {

using kevo::testing::run_kevo;

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";
const std::string kTaskAndCandidate = kRoot + "tasks/01_relu.json " + kRoot + "tests/data/planted/relu_ok.cu";

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(KevoEval, WithoutAGpuSaysSoInOneLineAndExits2) {
  auto version = run_kevo("version");
  bool gpu = version.out.find("CUDA driver: no") == std::string::npos &&
             version.out.find("sees no GPU") == std::string::npos &&
             version.out.find("failed to initialise") == std::string::npos;
  if (gpu) GTEST_SKIP() << "this machine has a GPU";
  auto r = run_kevo("eval " + kTaskAndCandidate);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1u) << r.out;
  EXPECT_NE(r.out.find("kevo eval: needs a CUDA GPU"), std::string::npos) << r.out;
}

TEST(KevoEval, BadFlagsAndBadInputGiveOneLineAndExit2) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"eval " + kTaskAndCandidate + " --trials 0", "need sane positive values"},
      {"eval " + kTaskAndCandidate + " --workload 2", "--workload 2: relu has workloads 0 to 1"},
      {"eval " + kTaskAndCandidate + " --held-back 5", "--held-back 5"},
      {"eval " + kTaskAndCandidate + " --gpus 0,x", "--gpus takes 'all' or a list"},
      {"eval " + kTaskAndCandidate + " --no-such-flag", "no-such-flag"},
      {"eval " + kRoot + "tasks/01_relu.json " + kRoot + "tests/data/candidates/softmax.cu", "softmax"},
      {"eval " + kTaskAndCandidate + " --torch-baseline " + kRoot + "tasks/01_relu.json", "not a tools/torch_baseline.py report"},
      {"eval " + kRoot + "tasks/01_relu.json", "candidate"},
  };
  for (const auto& [args, want] : cases) {
    auto r = run_kevo(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1u) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << args << "\n" << r.out;
  }
}

TEST(KevoWorker, RefusesArgumentsAndIsHiddenFromTheUsage) {
  auto r = run_kevo("worker --device 1");
  EXPECT_EQ(r.status, 2) << r.out;
  auto help = run_kevo("--help");
  EXPECT_NE(help.out.find("eval"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("worker"), std::string::npos) << help.out;
}

}  // namespace
