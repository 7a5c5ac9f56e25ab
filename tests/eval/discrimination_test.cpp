// Reward integrity on the CPU (LibTorch references): whether a task's check rejects outputs that
// ignore the inputs. Softmax's tolerance accepts zeros and gets atol scaled to its outputs; a
// loss over a large input lets another declared draw pass but its perturbed trials do not; ReLU
// needs nothing; a reference whose outputs do not depend on the inputs, or only through labels
// whose average never moves, is refused with one line. Perturbed inputs stay on the declared
// side of zero and inside the contract's domain, are reproducible, and drop their outliers when
// the reference is not finite with them.
#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <string>

#include "core/task.h"
#include "eval/criterion.h"
#include "eval/discrimination.h"
#include "eval/draws.h"
#include "eval/inputs.h"
#include "eval/oracle.h"
#include "eval/perturbation.h"

namespace kevo::eval {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

// A one-input, one-output contract over [M, N] with this reference body and input declaration.
Task task_of(const std::string& body, const std::string& output_shape, int64_t m, int64_t n,
             const std::string& input = R"("x": {"shape": ["M", "N"], "dtype": "float32"})",
             const std::string& params = "x") {
  const std::string text = R"({"name": "t", "axes": {"M": {"type": "var"}, "N": {"type": "var"}},
    "inputs": {)" + input + R"(},
    "outputs": {"y": {"shape": )" + output_shape + R"(, "dtype": "float32"}},
    "reference": "import torch\ndef run()" + params + R"():\n    return )" + body + R"(\n",
    "workloads": [{"M": )" + std::to_string(m) + R"(, "N": )" + std::to_string(n) + "}]}";
  return parse_task(text, "t.json");
}

// The analysis of the task's last (for the development tasks: its small) workload.
Discrimination analyse(const Task& t, uint64_t seed = 5) {
  const Workload& w = t.workloads.back();
  return discriminate_on(t, t.graph(w), w, {seed, seed + 11, seed + 22, seed + 33}, torch::kCPU);
}

TEST(Discrimination, SoftmaxToleranceAcceptsZerosSoItsAtolIsScaled) {
  const Task t = load_task(kRoot + "tasks/03_softmax.json");
  const Workload& small = t.workloads[1];
  const Discrimination d = discriminate_on(t, t.graph(small), small, {1, 2, 3, 4}, torch::kCPU);
  ASSERT_EQ(d.outputs.size(), 1u);
  const OutputVerdict& v = d.outputs[0];
  EXPECT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(v.scaled);
  ASSERT_FALSE(v.plain_accepts.empty());
  EXPECT_EQ(v.plain_accepts.front(), "zeros");
  EXPECT_TRUE(v.still_accepts.empty());
  EXPECT_NEAR(v.scaled_atol, 1e-4 / 16384, 1e-10);  // rtol x mean |softmax| = rtol / D
  const std::vector<Criterion> c = d.criteria(t.tolerance);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].scaled);
  // Under the scaled criterion the reference passes itself and zeros fail; under the contract's, zeros pass.
  ReferenceDraw r = draw_with_reference(t, t.graph(small), small, 1, false, torch::kCPU);
  const torch::Tensor& y = r.outputs[0];
  EXPECT_TRUE(passes(y, y, c[0]));
  EXPECT_TRUE(passes(torch::zeros_like(y), y, {t.tolerance, false}));
  EXPECT_FALSE(passes(torch::zeros_like(y), y, c[0]));
  // An honest float32 softmax computed another way (log-sum-exp) passes the scaled check.
  const torch::Tensor x = r.inputs[0];
  EXPECT_TRUE(passes(torch::exp(x - torch::logsumexp(x, 1, true)), y, c[0]));
}

TEST(Discrimination, ALossOverALargeInputIsCaughtByThePerturbedTrials) {
  // mean((a - b)^2) over 4M elements: another declared draw agrees within rtol 1e-4.
  const Task t = task_of("torch.mean((x - z) ** 2)", "[]", 2048, 2048,
                         R"("x": {"shape": ["M", "N"], "dtype": "float32"}, "z": {"shape": ["M", "N"], "dtype": "float32"})",
                         "x, z");
  const Discrimination d = analyse(t);
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(d.outputs[0].declared_draws_agree);
  EXPECT_FALSE(d.outputs[0].scaled) << "the plain tolerance rejects the expectation on perturbed inputs";
  // The expectation of the declared distribution (1/6) passes a declared draw and fails a perturbed one.
  const Workload& w = t.workloads.front();
  const ReferenceDraw declared = draw_with_reference(t, t.graph(w), w, 7, false, torch::kCPU);
  const ReferenceDraw moved = draw_with_reference(t, t.graph(w), w, 8, true, torch::kCPU);
  ASSERT_FALSE(moved.perturbation.empty());
  const torch::Tensor expectation = torch::full({}, 1.0 / 6.0);
  const Criterion c = d.criteria(t.tolerance)[0];
  EXPECT_TRUE(passes(expectation, declared.outputs[0], c));
  EXPECT_FALSE(passes(expectation, moved.outputs[0], c)) << moved.perturbation.describe();
  // Reading every 16th element and extrapolating misses the outliers of the perturbed draw.
  const int64_t n = moved.inputs[0].numel();
  const torch::Tensor xs = moved.inputs[0].view(-1).slice(0, 0, n, 16), zs = moved.inputs[1].view(-1).slice(0, 0, n, 16);
  EXPECT_FALSE(passes(torch::mean((xs - zs) * (xs - zs)), moved.outputs[0], c));
  EXPECT_TRUE(passes(torch::mean((moved.inputs[0] - moved.inputs[1]).pow(2)), moved.outputs[0], c));
}

TEST(Discrimination, OutputsThatAreTheReferencesRoundingNoiseKeepTheContractsTolerance) {
  // The mean of centred rows, scaled by w (ones) and shifted by b (zeros): exactly 0 on the
  // declared inputs, so the float32 reference is rounding noise (about 1e-8) that atol 1e-4
  // accepts zeros against, and no kernel meets atol scaled to it (KernelBench level 2 #23, the
  // mean of a group norm, failed every candidate so). On perturbed inputs b moves the outputs.
  const std::string text = R"({"name": "t", "axes": {"M": {"type": "var"}, "N": {"type": "var"}},
    "inputs": {"x": {"shape": ["M", "N"], "dtype": "float32"},
               "w": {"shape": ["N"], "dtype": "float32", "init": {"dist": "ones"}},
               "b": {"shape": ["N"], "dtype": "float32", "init": {"dist": "zeros"}}},
    "outputs": {"y": {"shape": ["M"], "dtype": "float32"}},
    "reference": "import torch\ndef run(x, w, b):\n    return torch.mean((x - torch.mean(x, 1, keepdim=True)) * w + b, 1)\n",
    "workloads": [{"M": 64, "N": 4096}], "tolerance": {"atol": 0.0001, "rtol": 0.0001}})";
  const Task t = parse_task(text, "noise.json");
  const Discrimination d = analyse(t);
  ASSERT_EQ(d.outputs.size(), 1u);
  const OutputVerdict& v = d.outputs[0];
  EXPECT_TRUE(d.ok()) << d.error();
  ASSERT_FALSE(v.plain_accepts.empty());
  EXPECT_EQ(v.plain_accepts.front(), "zeros");
  EXPECT_TRUE(v.noise);
  EXPECT_FALSE(v.scaled);
  const Criterion c = d.criteria(t.tolerance)[0];
  EXPECT_FALSE(c.scaled);
  // A float32 kernel summing in another order passes; zeros still fail where b moved the outputs.
  const Workload& w = t.workloads.front();
  const ReferenceDraw declared = draw_with_reference(t, t.graph(w), w, 5, false, torch::kCPU);
  const torch::Tensor& x = declared.inputs[0];
  const torch::Tensor other = (x - x.sum(1, true) / x.size(1)).flip(1).cumsum(1).select(1, x.size(1) - 1) / x.size(1);
  EXPECT_TRUE(passes(other, declared.outputs[0], c));
  EXPECT_FALSE(passes(other, declared.outputs[0], {t.tolerance, true})) << "the scaled check no kernel meets";
  const ReferenceDraw moved = draw_with_reference(t, t.graph(w), w, 6, true, torch::kCPU);
  EXPECT_FALSE(passes(torch::zeros_like(moved.outputs[0]), moved.outputs[0], c)) << moved.perturbation.describe();
  const std::vector<std::string> lines = d.report(t.tolerance);
  EXPECT_NE(lines[0].find("rounding noise"), std::string::npos) << lines[0];
}

TEST(Discrimination, AReferenceWhoseRoundingTakesMuchOfTheToleranceGetsANoiseFloor) {
  // A GEMM summed over its features (KernelBench level 2 #14, smaller): outputs of about 900 whose
  // terms cancel; near zero, the float32 reference misses its float64 result by much of the
  // allowance at rtol 1e-4, and a kernel that sums the weights' rows first misses the reference by
  // more than it allows.
  const std::string text = R"({"name": "t", "axes": {"M": {"type": "var"}, "K": {"type": "var"}, "N": {"type": "var"}},
    "inputs": {"x": {"shape": ["M", "K"], "dtype": "float32", "init": {"dist": "uniform", "low": 0, "high": 1}},
               "w": {"shape": ["N", "K"], "dtype": "float32", "init": {"dist": "normal", "mean": 0, "std": 1}}},
    "outputs": {"y": {"shape": ["M", 1], "dtype": "float32"}},
    "reference": "import torch\ndef run(x, w):\n    return torch.sum(torch.matmul(x, w.T) / 2, dim=1, keepdim=True) * 1.5\n",
    "workloads": [{"M": 256, "K": 2048, "N": 2048}], "tolerance": {"atol": 0.0001, "rtol": 0.0001}})";
  const Task t = parse_task(text, "gemm_sum.json");
  const Discrimination d = analyse(t);
  ASSERT_EQ(d.outputs.size(), 1u);
  const OutputVerdict& v = d.outputs[0];
  EXPECT_TRUE(d.ok()) << d.error();
  EXPECT_FALSE(v.scaled);
  EXPECT_GT(v.reference_share, kNoiseShare);
  EXPECT_GT(v.reference_error, 0);
  EXPECT_LT(v.reference_error, 1e-5) << "float32 rounding, relative to the outputs' mean";
  EXPECT_DOUBLE_EQ(v.noise_floor, kNoiseMargin * v.reference_error);
  const Criterion c = d.criteria(t.tolerance)[0];
  EXPECT_EQ(c.noise_floor, v.noise_floor);
  // On other draws: kernels summing in other orders (the weights' rows first; the features one
  // after another) pass the floor, where the contract's tolerance alone rejects one of them; a
  // kernel that drops one feature, or writes zeros, fails it.
  const Workload& w = t.workloads.front();
  int plain_rejects = 0;
  for (uint64_t seed = 9; seed < 13; ++seed) {
    const ReferenceDraw r = draw_with_reference(t, t.graph(w), w, seed, false, torch::kCPU);
    const torch::Tensor &x = r.inputs[0], &wt = r.inputs[1], &y = r.outputs[0];
    const torch::Tensor rows_first = torch::matmul(x, wt.sum(0).unsqueeze(1)) * 0.75;
    const torch::Tensor in_turn = (torch::matmul(x, wt.t()) / 2).cumsum(1).slice(1, -1) * 1.5;
    for (const torch::Tensor& other : {rows_first, in_turn}) {
      EXPECT_TRUE(passes(other, y, c)) << seed << ": " << check_values(other, y, c).max_ratio;
      plain_rejects += !passes(other, y, {t.tolerance, false});
    }
    const torch::Tensor dropped = torch::matmul(x, wt.slice(0, 1).sum(0).unsqueeze(1)) * 0.75;
    EXPECT_FALSE(passes(dropped, y, c)) << seed;
    EXPECT_FALSE(passes(torch::zeros_like(y), y, c)) << seed;
  }
  EXPECT_GT(plain_rejects, 0) << "the contract's tolerance alone rejects an honest float32 kernel";
  const std::vector<std::string> lines = d.report(t.tolerance);
  EXPECT_NE(lines[0].find("own rounding"), std::string::npos) << lines[0];
}

TEST(Discrimination, AnAccurateReferenceOrA16BitOneGetsNoNoiseFloor) {
  const Discrimination d = analyse(load_task(kRoot + "tasks/01_relu.json"));
  EXPECT_EQ(d.outputs[0].noise_floor, 0);
  EXPECT_EQ(d.outputs[0].reference_share, 0) << "relu is exact in float32";
  // A bf16 layer norm rounds each op's result to bf16, relative to the value: its rtol covers that.
  const Discrimination half = analyse(load_task(kRoot + "tasks/half/layer_norm_bf16.json"));
  EXPECT_EQ(half.outputs[0].noise_floor, 0);
  EXPECT_EQ(half.outputs[0].reference_share, 0) << "not measured for a 16-bit task";
}

TEST(Discrimination, SmallButResolvedOutputsKeepTheScaledCheck) {
  // Softmax's outputs are below atol but far above float32's rounding: not noise, still scaled.
  const Discrimination d = analyse(load_task(kRoot + "tasks/03_softmax.json"));
  EXPECT_TRUE(d.outputs[0].scaled);
  EXPECT_FALSE(d.outputs[0].noise);
}

TEST(Discrimination, ReluNeedsNothing) {
  const Discrimination d = analyse(load_task(kRoot + "tasks/01_relu.json"));
  EXPECT_TRUE(d.ok());
  EXPECT_FALSE(d.outputs[0].scaled);
  EXPECT_TRUE(d.outputs[0].plain_accepts.empty());
  EXPECT_FALSE(d.outputs[0].declared_draws_agree);
}

TEST(Discrimination, OutputsThatDoNotDependOnTheInputsAreRefused) {
  const Discrimination zeros = analyse(task_of("x * 0.0", R"(["M", "N"])", 64, 64));
  EXPECT_FALSE(zeros.ok());
  const std::string e = zeros.error();
  EXPECT_TRUE(zeros.outputs[0].constant);
  EXPECT_NE(e.find("output 'y' is the same on every draw"), std::string::npos) << e;
  EXPECT_NE(e.find("does not depend on them"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  // A mean of labels at a tolerance of 1e-3: perturbation cannot move labels, and their average
  // (about 2) moves by 2.4e-4 between draws.
  std::string text = R"({"name": "t", "axes": {"M": {"type": "var"}},
    "inputs": {"x": {"shape": ["M"], "dtype": "float32", "init": {"dist": "choice", "values": [1, 3]}}},
    "outputs": {"y": {"shape": [], "dtype": "float32"}},
    "reference": "import torch\ndef run(x):\n    return torch.mean(x)\n",
    "workloads": [{"M": 4194304}], "tolerance": {"atol": 0.001, "rtol": 0.001}})";
  const Discrimination d = analyse(parse_task(text, "labels.json"));
  EXPECT_FALSE(d.ok());
  EXPECT_FALSE(d.outputs[0].constant);  // the labels' mean moves, by less than the tolerance
  EXPECT_NE(d.error().find("a fixed output"), std::string::npos) << d.error();
}

TEST(Discrimination, KevoCheckReportsItPerOutput) {
  const Task t = load_task(kRoot + "tasks/03_softmax.json");
  const DiscriminationReport r = check_discrimination_on_cpu(t, t.workloads[1], 0);
  EXPECT_TRUE(r.ok);
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_NE(r.lines[0].find("accepts zeros"), std::string::npos) << r.lines[0];
  EXPECT_NE(r.lines[0].find("atol scaled"), std::string::npos) << r.lines[0];
  EXPECT_NE(r.perturbation.find("x scaled"), std::string::npos) << r.perturbation;
}

TEST(Perturbation, StaysOnTheDeclaredSideOfZeroAndInsideTheDomainAndIsReproducible) {
  const Task t = task_of("torch.log(x)", R"(["M", "N"])", 256, 256,
                         R"("x": {"shape": ["M", "N"], "dtype": "float32", "init": {"dist": "uniform", "low": 0.5, "high": 2},
                              "domain": {"min": 0.1, "max": 3}})");
  for (uint64_t seed = 1; seed < 20; ++seed) {
    const Perturbation p = perturbation_for(t, seed);
    ASSERT_EQ(p.inputs.size(), 1u);
    EXPECT_GE(p.inputs[0].scale, 0.5);
    EXPECT_LE(p.inputs[0].scale, 2.0);
    EXPECT_GE(p.inputs[0].shift, 0.0) << "a nonnegative distribution is never shifted down";
    std::vector<torch::Tensor> in = make_inputs(t, t.workloads[0], seed);
    const torch::Tensor before = in[0].clone();
    perturb(t, p, seed, in);
    EXPECT_GE(in[0].min().item<double>(), 0.1);
    EXPECT_LE(in[0].max().item<double>(), 3.0);
    EXPECT_FALSE(torch::equal(in[0], before));
    std::vector<torch::Tensor> again = make_inputs(t, t.workloads[0], seed);
    perturb(t, p, seed, again);
    EXPECT_TRUE(torch::equal(in[0], again[0]));
  }
  // Labels and indices keep their declared values; a constant weight moves (and stays constant
  // but for its outliers).
  const Task labels = task_of("x * 2.0", R"(["M", "N"])", 16, 16,
                              R"("x": {"shape": ["M", "N"], "dtype": "float32", "init": {"dist": "choice", "values": [-1, 1]}})");
  EXPECT_TRUE(perturbation_for(labels, 3).empty());
  const Task ones = task_of("x * 2.0", R"(["M", "N"])", 16, 16,
                            R"("x": {"shape": ["M", "N"], "dtype": "float32", "init": {"dist": "ones"}})");
  const Perturbation p = perturbation_for(ones, 3, false);
  ASSERT_EQ(p.inputs.size(), 1u);
  std::vector<torch::Tensor> in = make_inputs(ones, ones.workloads[0], 3);
  perturb(ones, p, 3, in);
  EXPECT_NEAR(in[0].min().item<double>(), p.inputs[0].scale + p.inputs[0].shift, 1e-6);
  EXPECT_NEAR(in[0].max().item<double>(), p.inputs[0].scale + p.inputs[0].shift, 1e-6);
  EXPECT_GT(in[0].min().item<double>(), 0.0);
}

TEST(Perturbation, OutliersAreDroppedWhereTheReferenceIsNotFiniteWithThem) {
  // exp(20 x) of a perturbed x (below 2.5) is finite; outliers (x8) mostly make it overflow.
  const Task t = task_of("torch.exp(x * 20.0)", R"(["M", "N"])", 128, 128);
  const Workload& w = t.workloads.front();
  bool dropped = false;
  for (uint64_t seed = 1; seed < 8; ++seed) {
    const ReferenceDraw d = draw_with_reference(t, t.graph(w), w, seed, true, torch::kCPU);
    EXPECT_TRUE(torch::isfinite(d.outputs[0]).all().item<bool>()) << seed;
    ASSERT_EQ(d.perturbation.inputs.size(), 1u) << "a finite perturbation exists for seed " << seed;
    dropped = dropped || d.perturbation.inputs[0].outliers == 0;
  }
  EXPECT_TRUE(dropped);
}

}  // namespace
}  // namespace kevo::eval
