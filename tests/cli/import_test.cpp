// `kevo import` as users run it: KernelBench-format problems and a FlashInfer-Bench definition of
// kevo's own (tests/tools/), the contracts it writes, refusals and bad arguments.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/run_kevo.h"

namespace {

using Result = kevo::testing::CommandResult;

Result kevo(const std::string& args, const std::string& env = "") { return kevo::testing::run_kevo(args, env); }

const std::string kProblems = std::string(KEVO_SOURCE_ROOT) + "/tests/tools/kernelbench/";
const std::string kFlashInfer = std::string(KEVO_SOURCE_ROOT) + "/tests/tools/flashinfer/";

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class KevoImport : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("python3 -c pass >/dev/null 2>&1") != 0 && !exists("/usr/bin/python3"))
      GTEST_SKIP() << "no Python 3: kevo import runs the importers in tools/ with it";
  }
  std::string out(const std::string& name) { return ::testing::TempDir() + "kevo_import_" + name; }
};

TEST_F(KevoImport, KernelBenchProblemBecomesAContractThatChecks) {
  std::string path = out("conv_relu.json");
  std::remove(path.c_str());
  Result r = kevo("import kernelbench " + kProblems + "conv_relu.py -o " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(path + " loads: 4 inputs, 1 output, 2 workloads"), std::string::npos) << r.out;
  std::string text = read(path);
  EXPECT_NE(text.find("F.conv2d(x, conv_weight, conv_bias, stride=1, padding=1"), std::string::npos) << text;
  Result c = kevo("check " + path);
  EXPECT_EQ(c.status, 0) << c.out;
  EXPECT_NE(c.out.find("workload 1 {batch_size=16, in_channels=8, out_channels=16, height=32, width=32}"),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("ran on the CPU"), std::string::npos) << c.out;
}

TEST_F(KevoImport, TheAgreementCheckRunsWhereThePythonHasTorch) {
  Result r = kevo("import kernelbench " + kProblems + "matmul.py -o " + out("matmul.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  if (r.out.find("(with torch)") != std::string::npos) {
    EXPECT_NE(r.out.find("agreement: the reference matches the problem's Model"), std::string::npos) << r.out;
  } else {
    EXPECT_NE(r.out.find("agreement check: skipped (no torch in"), std::string::npos) << r.out;
  }
  Result skipped = kevo("import kernelbench " + kProblems + "matmul.py --no-agree -o " + out("matmul2.json"));
  EXPECT_EQ(skipped.status, 0) << skipped.out;
  EXPECT_NE(skipped.out.find("agreement check: skipped (--no-agree)"), std::string::npos) << skipped.out;
}

TEST_F(KevoImport, UntranslatableProblemIsOneLineWithItsLineAndExitTwo) {
  std::string path = out("untranslatable.json");
  std::remove(path.c_str());
  Result r = kevo("import kernelbench " + kProblems + "untranslatable.py -o " + path);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(kProblems + "untranslatable.py:14: cannot translate: a `for` loop in forward()"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(exists(path));
}

TEST_F(KevoImport, FlashInferDefinitionTakesItsWorkloads) {
  std::string path = out("rmsnorm.json");
  Result r = kevo("import flashinfer " + kFlashInfer + "rmsnorm_h64.json -o " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(path + " loads: 3 inputs, 1 output, 8 workloads"), std::string::npos) << r.out;
  Result c = kevo("check " + path);
  EXPECT_EQ(c.status, 0) << c.out;
}

// SOL-ExecBench's definitions (its <problem>/definition.json beside workload.jsonl) as their authors
// wrote them: run() under @torch.no_grad() with annotations and asserts, an input generator, null
// descriptions, a scalar input without a shape, an axis derived from another.
TEST_F(KevoImport, ASolExecBenchDefinitionImportsAsItsAuthorWroteIt) {
  std::string path = out("sol_style.json");
  Result r = kevo("import flashinfer " + kFlashInfer + "sol_style/definition.json -o " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(path + " loads: 3 inputs, 1 output, 3 workloads"), std::string::npos) << r.out;
  Result c = kevo("check " + path);
  EXPECT_EQ(c.status, 0) << c.out;
  const nlohmann::json contract = nlohmann::json::parse(std::ifstream(path));
  EXPECT_EQ(contract.at("inputs").at("w").at("shape"), nlohmann::json::array({"width // 2"}));
  EXPECT_EQ(contract.at("inputs").at("eps").at("shape"), nlohmann::json::array());
  EXPECT_FALSE(contract.at("axes").contains("half"));
  const std::string reference = contract.at("reference");
  for (const char* gone : {"@torch.no_grad", "assert", "make_inputs", ": torch.Tensor"})
    EXPECT_EQ(reference.find(gone), std::string::npos) << gone;
}

// A translation kevo's parser refuses is reported with kevo's own error (a stand-in importer that
// writes a broken contract, found through KEVO_TOOLS_DIR).
TEST_F(KevoImport, AContractKevoRefusesIsReportedWithKevosError) {
  std::string dir = out("fake_tools");
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/kernelbench_import.py")
      << "import sys\nopen(sys.argv[sys.argv.index('-o') + 1], 'w').write('{\"name\": \"x\"}')\n";
  std::string path = out("broken.json");
  Result r = kevo("import kernelbench " + kProblems + "matmul.py -o " + path, "KEVO_TOOLS_DIR=" + dir + " ");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(path + ":1:1: missing required field 'axes'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("was written but this kevo does not accept it"), std::string::npos) << r.out;
}

TEST_F(KevoImport, BadArgumentsExitTwo) {
  Result none = kevo("import");
  EXPECT_EQ(none.status, 2) << none.out;
  Result kind = kevo("import onnx " + kProblems + "matmul.py");
  EXPECT_EQ(kind.status, 2);
  EXPECT_NE(kind.out.find("expected `kernelbench PROBLEM.py` or `flashinfer DEFINITION.json`"), std::string::npos)
      << kind.out;
  Result missing = kevo("import kernelbench /nonexistent/problem.py");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("/nonexistent/problem.py: no such file"), std::string::npos) << missing.out;
  Result python = kevo("import kernelbench " + kProblems + "matmul.py --python /nonexistent/python3");
  EXPECT_EQ(python.status, 2);
  EXPECT_NE(python.out.find("no Python 3 found (tried /nonexistent/python3"), std::string::npos) << python.out;
}

}  // namespace
