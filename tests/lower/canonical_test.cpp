// Equivalent spellings of a matrix product lower to the same spaces (mutate/canonical.h): x @ W.T
// is F.linear(x, W), an einsum that multiplies matrices is matmul, a batch of rows times a matrix
// is one matrix product, and transposed operands reach cuBLASLt as its transpose flags.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "lower/canonical.h"
#include "lower/lower.h"
#include "mutate/space.h"

namespace kevo::lower {

using namespace mutate;  // the spaces' vocabulary: DesignSpace, Genome, Facts, ...
namespace {

// A contract over inputs a and b (shapes as JSON arrays of axis names) with `reference`'s body.
Task contract(const std::string& a, const std::string& b, const std::string& y, const std::string& body) {
  const std::string text = R"({
  "name": "spelling",
  "axes": {"B": {"type": "var"}, "M": {"type": "var"}, "K": {"type": "var"}, "N": {"type": "var"}},
  "inputs": {
    "a": {"shape": )" + a + R"(, "dtype": "float32", "init": {"dist": "uniform", "low": -1, "high": 1}},
    "b": {"shape": )" + b + R"(, "dtype": "float32", "init": {"dist": "uniform", "low": -1, "high": 1}}
  },
  "outputs": {"y": {"shape": )" + y + R"(, "dtype": "float32"}},
  "reference": "import torch\nimport torch.nn.functional as F\n\ndef run(a, b):\n    return )" + body + R"(\n",
  "workloads": [{"B": 4, "M": 256, "K": 512, "N": 384}, {"B": 3, "M": 5, "K": 16, "N": 24}],
  "tolerance": {"atol": 1e-4, "rtol": 1e-4}
})";
  return parse_task(text, "spelling.json");
}

// What search sees of a task: each space's name and the facts its constraints read, per workload.
std::vector<std::pair<std::string, std::vector<Facts>>> spaces_of(const Task& task) {
  std::vector<std::pair<std::string, std::vector<Facts>>> out;
  for (const auto& s : lower(task, "sm_90a")) out.emplace_back(s->id(), s->facts());
  return out;
}

const DesignSpace* find(const std::vector<std::unique_ptr<DesignSpace>>& spaces, const std::string& id) {
  for (const auto& s : spaces)
    if (s->id() == id) return s.get();
  return nullptr;
}

// The cuBLASLt step of a legal genome's plan, resolved on workload w.
ResolvedMatmul library_step(const DesignSpace& s, const Task& task, size_t w) {
  std::mt19937_64 rng(7);
  const Genome g = s.random_genome(rng);
  const Candidate c = parse_candidate(s.render(g), "library.cu", task);
  return std::get<ResolvedMatmul>(resolve_plan(c, task, task.workloads[w], DeviceLimits{}).steps[0]);
}

TEST(Canonical, SpellingsOfAMatrixProductWithATransposedWeightGetTheSameSpacesAsLinear) {
  const auto linear = spaces_of(contract(R"(["M", "K"])", R"(["N", "K"])", R"(["M", "N"])", "F.linear(a, b)"));
  ASSERT_NE(std::find_if(linear.begin(), linear.end(), [](const auto& s) { return s.first == "gemm/linear"; }),
            linear.end());
  for (const char* body : {"torch.matmul(a, b.T)", "a @ b.t()", "torch.matmul(a, b.transpose(0, 1))",
                           "a @ b.transpose(-1, -2)", "torch.mm(a, b.permute(1, 0))", "a @ b.mT",
                           "torch.einsum('mk,nk->mn', a, b)"})
    EXPECT_EQ(spaces_of(contract(R"(["M", "K"])", R"(["N", "K"])", R"(["M", "N"])", body)), linear) << body;
}

TEST(Canonical, ABatchOfRowsTimesAMatrixIsOneMatrixProductOfAllTheRows) {
  const Task task = contract(R"(["B", "M", "K"])", R"(["K", "N"])", R"(["B", "M", "N"])", "torch.matmul(a, b)");
  for (const char* body : {"a @ b", "torch.einsum('bmk,kn->bmn', a, b)"})
    EXPECT_EQ(spaces_of(contract(R"(["B", "M", "K"])", R"(["K", "N"])", R"(["B", "M", "N"])", body)), spaces_of(task))
        << body;
  const auto spaces = lower(task, "sm_90a");
  const DesignSpace* gemm = find(spaces, "gemm/matmul");
  const DesignSpace* lib = find(spaces, "library/cublaslt_matmul");
  ASSERT_NE(gemm, nullptr);
  ASSERT_NE(lib, nullptr);
  for (size_t w = 0; w < task.workloads.size(); ++w) {
    const int64_t rows = task.workloads[w].axes.at("B") * task.workloads[w].axes.at("M");
    EXPECT_EQ(gemm->facts()[w].at("m"), rows);
    const ResolvedMatmul mm = library_step(*lib, task, w);
    EXPECT_EQ(mm.m, rows);
    EXPECT_EQ(mm.k, task.workloads[w].axes.at("K"));
    EXPECT_EQ(mm.n, task.workloads[w].axes.at("N"));
  }
}

TEST(Canonical, TransposedOperandsReachCublasLtAsItsTransposeFlags) {
  struct Case {
    const char* body;
    const char* a;
    const char* b;
    bool ta, tb;
  };
  for (const Case& c : {Case{"torch.matmul(a.T, b)", R"(["K", "M"])", R"(["K", "N"])", true, false},
                        Case{"a.transpose(0, 1) @ b.T", R"(["K", "M"])", R"(["N", "K"])", true, true}}) {
    const Task task = contract(c.a, c.b, R"(["M", "N"])", c.body);
    const auto spaces = lower(task, "sm_90a");
    const DesignSpace* lib = find(spaces, "library/cublaslt_matmul");
    ASSERT_NE(lib, nullptr) << c.body;
    EXPECT_EQ(find(spaces, "gemm/matmul"), nullptr) << c.body << ": the gemm family reads a as [M, K]";
    for (size_t w = 0; w < task.workloads.size(); ++w) {
      const ResolvedMatmul mm = library_step(*lib, task, w);
      EXPECT_EQ(mm.call.transpose_a, c.ta) << c.body;
      EXPECT_EQ(mm.call.transpose_b, c.tb) << c.body;
      EXPECT_EQ(mm.m, task.workloads[w].axes.at("M")) << c.body;
      EXPECT_EQ(mm.k, task.workloads[w].axes.at("K")) << c.body;
    }
  }
}

TEST(Canonical, BmmIsMatmulAndOtherEinsumsStayEinsums) {
  const Task bmm = contract(R"(["B", "M", "K"])", R"(["B", "K", "N"])", R"(["B", "M", "N"])", "torch.bmm(a, b)");
  EXPECT_EQ(canonical(bmm.graph(bmm.workloads[0])).nodes.at(0).op, "matmul");
  const Task batched =
      contract(R"(["B", "M", "K"])", R"(["B", "K", "N"])", R"(["B", "M", "N"])", "torch.einsum('bmk,bkn->bmn', a, b)");
  EXPECT_EQ(canonical(batched.graph(batched.workloads[0])).nodes.at(0).op, "matmul");
  const Task outer = contract(R"(["M", "K"])", R"(["M", "K"])", R"(["M"])", "torch.einsum('mk,mk->m', a, b)");
  EXPECT_EQ(canonical(outer.graph(outer.workloads[0])).nodes.at(0).op, "einsum");
}

// torch.bmm, a batched matmul and its einsum, with or without transposed operands, lower to one
// strided-batched cuBLASLt step: B products of [M, K] @ [K, N], each operand a matrix apart (a
// matrix operand is shared: stride 0). Operands batched over dims the output does not have stay off
// the library.
TEST(Canonical, BatchedMatrixProductsReachCublasLtAsAStridedBatch) {
  struct Case {
    const char* body;
    const char* a;
    const char* b;
    bool ta, tb, shared_b;
  };
  const char* batch_mk = R"(["B", "M", "K"])";
  for (const Case& c :
       {Case{"torch.bmm(a, b)", batch_mk, R"(["B", "K", "N"])", false, false, false},
        Case{"torch.einsum('bmk,bkn->bmn', a, b)", batch_mk, R"(["B", "K", "N"])", false, false, false},
        Case{"torch.relu(torch.bmm(a, b.transpose(1, 2)))", batch_mk, R"(["B", "N", "K"])", false, true, false},
        Case{"torch.matmul(a.transpose(-1, -2), b)", R"(["B", "K", "M"])", R"(["K", "N"])", true, false, true}}) {
    const Task task = contract(c.a, c.b, R"(["B", "M", "N"])", c.body);
    const auto spaces = lower(task, "sm_90a");
    const DesignSpace* lib = find(spaces, "library/cublaslt_matmul");
    ASSERT_NE(lib, nullptr) << c.body;
    for (size_t w = 0; w < task.workloads.size(); ++w) {
      const auto& axes = task.workloads[w].axes;
      const ResolvedMatmul mm = library_step(*lib, task, w);
      EXPECT_EQ(mm.call.transpose_a, c.ta) << c.body;
      EXPECT_EQ(mm.call.transpose_b, c.tb) << c.body;
      EXPECT_EQ(mm.batch, axes.at("B")) << c.body;
      EXPECT_EQ(mm.m, axes.at("M")) << c.body;
      EXPECT_EQ(mm.n, axes.at("N")) << c.body;
      EXPECT_EQ(mm.stride_a, axes.at("M") * axes.at("K")) << c.body;
      EXPECT_EQ(mm.stride_b, c.shared_b ? 0 : axes.at("K") * axes.at("N")) << c.body;
    }
  }
  // [B, 1] x [1, B] batches broadcast to [B, B]: no stride walks a's batch over the output's.
  const Task broadcast = contract(R"(["B", 1, "M", "K"])", R"([1, "B", "K", "N"])", R"(["B", "B", "M", "N"])",
                                  "torch.matmul(a, b)");
  const auto spaces = lower(broadcast, "sm_90a");
  EXPECT_FALSE(spaces.empty());
  EXPECT_EQ(find(spaces, "library/cublaslt_matmul"), nullptr);
}

TEST(Canonical, TheFoldedTransposeIsDroppedAndTheInputsKeepTheirOrder) {
  const Task task = contract(R"(["M", "K"])", R"(["N", "K"])", R"(["M", "N"])", "torch.relu(a @ b.T)");
  const Graph before = task.graph(task.workloads[0]), after = canonical(before);
  ASSERT_EQ(after.nodes.size(), 2u) << after.to_string();
  EXPECT_EQ(after.nodes[0].op, "linear");
  EXPECT_EQ(after.nodes[1].op, "relu");
  ASSERT_EQ(after.inputs.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(after.values[static_cast<size_t>(after.inputs[i])].name,
              before.values[static_cast<size_t>(before.inputs[i])].name);
  EXPECT_EQ(after.nodes[0].inputs, (std::vector<int>{after.inputs[0], after.inputs[1], -1}));
  EXPECT_EQ(after.values[static_cast<size_t>(after.outputs[0])].shape, (Shape{256, 384}));
}

TEST(Canonical, OnlyASwapOfTheLastTwoDimsIsATransposedMatrix) {
  struct Case {
    const char* body;
    const char* y;
    bool transposed;
  };
  for (const Case& c : {Case{"a.transpose(-1, -2)", R"(["B", "K", "M"])", true},
                        Case{"a.transpose(2, 1)", R"(["B", "K", "M"])", true},
                        Case{"a.permute(0, 2, 1)", R"(["B", "K", "M"])", true}, Case{"a.mT", R"(["B", "K", "M"])", true},
                        Case{"a.transpose(0, 1)", R"(["M", "B", "K"])", false},
                        Case{"a.permute(2, 1, 0)", R"(["K", "M", "B"])", false}}) {
    const Task task = contract(R"(["B", "M", "K"])", R"(["K"])", c.y, c.body);
    const Graph g = task.graph(task.workloads[0]);
    EXPECT_EQ(transposed_source(g, g.outputs[0]), c.transposed ? g.inputs[0] : -1) << c.body;
  }
}

}  // namespace
}  // namespace kevo::lower
