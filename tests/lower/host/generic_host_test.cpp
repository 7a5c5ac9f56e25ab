// The generic family's kernels checked on the CPU: a rendered candidate compiles as host C++
// (tests/lower/host/cuda_host_shim.h: a CUDA thread is a std::thread), its plan runs on a small
// workload, and its outputs must match the LibTorch reference within the contract's tolerance.
// This is how the generic kernels are known right before a GPU sees them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include "eval/torch_tensors.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "core/axis_expr.h"
#include "core/template_library.h"
#include "core/task.h"
#include "eval/inputs.h"
#include "eval/torch_graph.h"
#include "lower/families.h"
#include "mutate/space.h"

namespace kevo::lower {

using namespace mutate;  // the spaces' vocabulary: DesignSpace, Genome, Facts, ...
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

int64_t eval_expr(const nlohmann::json& e, const std::map<std::string, int64_t>& axes) {
  if (e.is_number_integer()) return e.get<int64_t>();
  return AxisExpr::parse(e.get<std::string>()).eval(axes);
}

// Runs one rendered candidate on the host for workload w; returns its outputs, or "" in *error.
std::vector<torch::Tensor> run_on_host(const Task& task, const std::string& text, const Workload& w,
                                       const std::vector<torch::Tensor>& inputs, std::string* error) {
  // A new name per candidate: a library with thread-locals may stay loaded after dlclose, and
  // dlopen of the same path would hand back the previous candidate.
  static int serial = 0;
  const std::string dir = ::testing::TempDir() + "kevo_generic_host_" + std::to_string(::getpid()) + "_" + std::to_string(serial++);
  const std::string src = dir + ".cpp", lib = dir + ".so";
  // The templates pasted in, as an exported header carries them: the host compiler has no kevo/ headers.
  std::ofstream(src) << "#include \"" << kRoot << "tests/lower/host/cuda_host_shim.h\"\n" << templates::inline_library(text);
  const std::string cmd = "g++ -std=c++20 -O1 -w -shared -fPIC -o " + lib + " " + src + " -lpthread 2>&1 | head -20";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string log;
  for (char buf[512]; fgets(buf, sizeof buf, pipe);) log += buf;
  pclose(pipe);
  if (!log.empty()) {
    *error = "host compile failed: " + log;
    return {};
  }
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    *error = dlerror();
    return {};
  }
  auto launch = reinterpret_cast<int (*)(void*, unsigned, unsigned, const uint64_t*, int)>(dlsym(h, "kevo_host_launch"));
  if (!launch) {
    *error = "the shim has no kevo_host_launch";
    return {};
  }
  const size_t at = text.find("/* kevo-plan"), end = text.find("*/", at);
  const nlohmann::json plan = nlohmann::json::parse(text.substr(at + 12, end - at - 12)).at("plan");
  std::map<std::string, int64_t> axes = task.axis_values(w);
  axes["num_sms"] = 3;
  std::map<std::string, torch::Tensor> buffers;
  for (size_t i = 0; i < task.inputs.size(); ++i) buffers[task.inputs[i].name] = inputs[i];
  std::vector<torch::Tensor> outs;
  for (const TensorDecl& o : task.outputs) {
    std::vector<int64_t> shape = task.shape_of(o, w);
    torch::Tensor t = torch::full(shape, std::nan(""), torch::kFloat32).to(eval::to_torch(o.dtype));
    buffers[o.name] = t;
    outs.push_back(t);
  }
  if (plan.contains("buffers"))
    for (const auto& [name, b] : plan.at("buffers").items()) {
      std::vector<int64_t> shape;
      for (const auto& d : b.at("shape")) shape.push_back(eval_expr(d, axes));
      // Poisoned as kevo poisons scratch: a kernel must write what it reads back.
      buffers[name] = b.at("dtype") == "int64" ? torch::full(shape, int64_t{-0x5555555555555556}, torch::kInt64)
                                                : torch::full(shape, std::nan(""), torch::kFloat32);
    }
  for (const auto& step : plan.at("steps")) {
    std::vector<uint64_t> args;
    for (const auto& a : step.at("args")) {
      if (a.is_string()) args.push_back(reinterpret_cast<uint64_t>(buffers.at(a.get<std::string>()).data_ptr()));
      else args.push_back(static_cast<uint64_t>(eval_expr(a.at("int64"), axes)));
    }
    void* fn = dlsym(h, step.at("kernel").get<std::string>().c_str());
    const int64_t grid = eval_expr(step.at("grid")[0], axes), block = eval_expr(step.at("block")[0], axes);
    if (!fn || launch(fn, static_cast<unsigned>(grid), static_cast<unsigned>(block), args.data(), static_cast<int>(args.size()))) {
      *error = "cannot launch " + step.dump();
      return {};
    }
  }
  dlclose(h);
  std::remove(src.c_str());
  std::remove(lib.c_str());
  return outs;
}

// The smallest workload of a task.
Workload smallest(const Task& task) {
  Workload best = task.workloads.front();
  int64_t least = INT64_MAX;
  for (const Workload& w : task.workloads) {
    int64_t n = 0;
    for (const TensorDecl& t : task.inputs) {
      int64_t e = 1;
      for (int64_t s : task.shape_of(t, w)) e *= s;
      n += e;
    }
    if (n < least) least = n, best = w;
  }
  return best;
}

// Genome g run on workload w against the reference.
void expect_matches(const Task& task, const DesignSpace& s, const Genome& g, const Workload& w, uint64_t seed) {
  const std::vector<torch::Tensor> inputs = eval::make_inputs(task, w, seed);
  const std::vector<torch::Tensor> want = eval::run_graph(task.graph(w), inputs);
  std::string error;
  const std::vector<torch::Tensor> got = run_on_host(task, s.render(g), w, inputs, &error);
  ASSERT_TRUE(error.empty()) << task.name << " " << g.to_string() << ": " << error;
  for (size_t o = 0; o < want.size(); ++o) {
    const torch::Tensor a = got[o].to(torch::kFloat64), b = want[o].to(torch::kFloat64);
    const torch::Tensor bad = ((a - b).abs() > task.tolerance.atol + task.tolerance.rtol * b.abs()) |
                              (a.isnan() != b.isnan());
    const int64_t n = bad.sum().item<int64_t>();
    EXPECT_EQ(n, 0) << task.name << " " << g.to_string() << ": output " << task.outputs[o].name << " has " << n << " of "
                    << a.numel() << " elements outside the tolerance; max error "
                    << (a - b).abs().nan_to_num(0).max().item<double>();
  }
}

// A random legal genome with at most 256 threads a block (to keep the host's threads few) and the
// knobs in `pins` at their values. A kSplit above `max_split` comes down to the largest legal
// value at most max_split, or else the smallest legal one (a long K needs a split): the host runs
// a grid's blocks one after another, each ending at a barrier of all its threads, and 512 times
// the blocks of a small workload took minutes (the Split cases below take every split).
Genome draw(const DesignSpace& s, std::mt19937_64& rng, const std::map<std::string, int64_t>& pins = {},
            int64_t max_split = 512) {
  const size_t split = static_cast<size_t>(s.manifest().knob("kSplit"));
  for (int tries = 0; tries < 10000; ++tries) {
    Genome g = s.random_genome(rng);
    for (const auto& [knob, v] : pins) g.values[static_cast<size_t>(s.manifest().knob(knob))] = v;
    if (s.values(g).at("kBlock") > 256) continue;
    const int64_t drawn = g.values[split];
    std::vector<int64_t> order{drawn};  // the values to try: at most max_split from the largest down, then above it upwards
    if (!pins.count("kSplit") && drawn > max_split) {
      order.clear();
      for (int64_t v : s.knobs()[split].values)
        if (v <= drawn && v > max_split) order.push_back(v);
      for (int64_t v : s.knobs()[split].values)
        if (v <= max_split) order.insert(order.begin(), v);
    }
    for (int64_t v : order) {
      g.values[split] = v;
      if (s.legal(g)) return g;
    }
  }
  ADD_FAILURE() << s.id() << " has no legal genome of at most 256 threads with the pinned knobs";
  return s.random_genome(rng);
}

std::unique_ptr<DesignSpace> space_of(const Task& task) {
  auto spaces = lower_generic(std::make_shared<const TaskGraph>(task));
  EXPECT_FALSE(spaces.empty()) << task.name << ": " << generic_refusal(TaskGraph(task));
  return spaces.empty() ? nullptr : std::move(spaces.front());
}

// `draws` random genomes of the task's generic space, each run on the smallest workload.
void check(const Task& task, int draws, uint64_t seed, int64_t max_split) {
  const auto s = space_of(task);
  ASSERT_TRUE(s);
  std::mt19937_64 rng(seed);
  for (int d = 0; d < draws; ++d) expect_matches(task, *s, draw(*s, rng, {}, max_split), smallest(task), seed);
}

Task contract(const std::string& reference, const std::string& inputs, const std::string& outputs,
              const std::string& workloads = R"([{"B": 3, "D": 40}, {"B": 2, "D": 24}])", double tol = 1e-4) {
  const std::string text = R"({"name": "host", "axes": {"B": {"type": "var"}, "D": {"type": "var"}}, "inputs": )" + inputs +
                           R"(, "outputs": )" + outputs + R"(, "reference": )" + nlohmann::json(reference).dump() +
                           R"(, "workloads": )" + workloads + R"(, "tolerance": {"atol": )" + std::to_string(tol) +
                           R"(, "rtol": )" + std::to_string(tol) + "}}";
  return parse_task(text, "host.json");
}

class DevelopmentTask : public ::testing::TestWithParam<std::string> {};

TEST_P(DevelopmentTask, RandomGenomesMatchTheReferenceOnTheHost) {
  check(load_task(kRoot + GetParam()), 3, 5, 1);  // unsplit where legal: their smallest workloads have hundreds of outputs
}

INSTANTIATE_TEST_SUITE_P(Generic, DevelopmentTask,
                         ::testing::Values("tasks/03_softmax.json", "tasks/04_rms_norm.json", "tasks/05_layer_norm.json",
                                           "tasks/06_sum_dim1.json", "tasks/07_argmax_dim1.json", "tasks/09_cumsum.json",
                                           "tasks/10_mse_loss.json", "tasks/11_hinge_loss.json", "tasks/12_max_pool2d.json",
                                           "tasks/13_linear_leaky_relu.json", "tasks/14_conv2d_relu_bias.json",
                                           "tasks/half/silu_and_mul_bf16.json", "tasks/half/layer_norm_fp16.json"),
                         [](const auto& info) {
                           std::string n = info.param.substr(info.param.rfind('/') + 1);
                           n = n.substr(0, n.size() - 5);
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

// Every op family the generic lowering has, on small contracts of two workloads (sizes as
// expressions over the axes): each must match the reference for random genomes.
struct OpCase {
  const char* name;
  const char* reference;
  const char* inputs;
  const char* outputs;
  double tol;
};

const OpCase kOps[] = {
    {"views_cat_flip_select", "def run(x):\n    a = torch.cat([x.flip(1), x[:, 1:3]], dim=1)\n    return a.permute(1, 0).unsqueeze(0).narrow(1, 1, 2).select(0, 0).tril(1)",
     R"({"x": {"shape": ["B", "D"], "dtype": "float32"}})", R"({"y": {"shape": [2, "B"], "dtype": "float32"}})", 1e-5},
    {"chunk_bf16_cast", "def run(x):\n    a, b = x.chunk(2, dim=1)\n    return (F.silu(a.float()) * b.float()).to(torch.bfloat16)",
     R"({"x": {"shape": ["B", "2 * D"], "dtype": "bfloat16"}})", R"({"y": {"shape": ["B", "D"], "dtype": "bfloat16"}})", 2e-2},
    {"reductions", "def run(x):\n    return torch.logsumexp(x, dim=1) + x.amin(dim=1) * x.argmin(dim=1) + torch.norm(x, p=2, dim=1) + x.prod(dim=1)",
     R"({"x": {"shape": ["B", "D"], "dtype": "float32"}})", R"({"y": {"shape": ["B"], "dtype": "float32"}})", 1e-4},
    {"max_with_indices_log_softmax", "def run(x):\n    v, i = torch.max(F.log_softmax(x, dim=0), dim=1)\n    return v, i",
     R"({"x": {"shape": ["B", "D"], "dtype": "float32"}})", R"({"v": {"shape": ["B"], "dtype": "float32"}, "i": {"shape": ["B"], "dtype": "int64"}})", 1e-4},
    {"batched_matmul_einsum", "def run(a, b, c):\n    return torch.matmul(a, b) + torch.einsum('ik,jk->ij', a[0], c).unsqueeze(0) + torch.bmm(a, b)",
     R"({"a": {"shape": [2, "B", "D"], "dtype": "float32"}, "b": {"shape": [2, "D", 5], "dtype": "float32"}, "c": {"shape": [5, "D"], "dtype": "float32"}})",
     R"({"y": {"shape": [2, "B", 5], "dtype": "float32"}})", 1e-4},
    {"group_norm", "def run(x, w, b):\n    return F.group_norm(x, 2, w, b)",
     R"({"x": {"shape": ["B", 4, "D", 3], "dtype": "float32"}, "w": {"shape": [4], "dtype": "float32"}, "b": {"shape": [4], "dtype": "float32"}})",
     R"({"y": {"shape": ["B", 4, "D", 3], "dtype": "float32"}})", 1e-3},
    {"instance_norm", "def run(x, w, b):\n    return F.instance_norm(x)",
     R"({"x": {"shape": ["B", 4, "D", 3], "dtype": "float32"}, "w": {"shape": [4], "dtype": "float32"}, "b": {"shape": [4], "dtype": "float32"}})",
     R"({"y": {"shape": ["B", 4, "D", 3], "dtype": "float32"}})", 1e-3},
    {"batch_norm", "def run(x, w, b):\n    return F.batch_norm(x, None, None, w, b, training=True)",
     R"({"x": {"shape": ["B", 4, "D", 3], "dtype": "float32"}, "w": {"shape": [4], "dtype": "float32"}, "b": {"shape": [4], "dtype": "float32"}})",
     R"({"y": {"shape": ["B", 4, "D", 3], "dtype": "float32"}})", 1e-3},
    {"norms", "def run(x, w, b):\n    y = F.group_norm(x, 2, w, b) + F.instance_norm(x) + F.batch_norm(x, None, None, w, b, training=True)\n    return F.layer_norm(y, y.shape[2:])",
     R"({"x": {"shape": ["B", 4, "D", 3], "dtype": "float32"}, "w": {"shape": [4], "dtype": "float32"}, "b": {"shape": [4], "dtype": "float32"}})",
     R"({"y": {"shape": ["B", 4, "D", 3], "dtype": "float32"}})", 1e-3},
    {"attention", "def run(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v) + F.scaled_dot_product_attention(q, k, v, is_causal=True)",
     R"({"q": {"shape": [2, "B", "D"], "dtype": "float32"}, "k": {"shape": [2, "B", "D"], "dtype": "float32"}, "v": {"shape": [2, "B", 4], "dtype": "float32"}})",
     R"({"y": {"shape": [2, "B", 4], "dtype": "float32"}})", 1e-4},
    {"conv_transpose2d_groups", "def run(x, w, b):\n    return F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2, dilation=1)",
     R"({"x": {"shape": ["B", 4, "D", 5], "dtype": "float32"}, "w": {"shape": [4, 3, 3, 2], "dtype": "float32"}, "b": {"shape": [6], "dtype": "float32"}})",
     R"({"y": {"shape": ["B", 6, "2 * D", 9], "dtype": "float32"}})", 1e-4},
    {"conv1d_conv3d", "def run(x, w, v, k):\n    return F.conv1d(x, w, stride=2, padding=1, dilation=2, groups=2).sum() + F.conv3d(v, k, padding=1).sum()",
     R"({"x": {"shape": ["B", 4, "D"], "dtype": "float32"}, "w": {"shape": [6, 2, 3], "dtype": "float32"}, "v": {"shape": [1, 2, "B", 4, 5], "dtype": "float32"}, "k": {"shape": [3, 2, 3, 3, 3], "dtype": "float32"}})",
     R"({"y": {"shape": [], "dtype": "float32"}})", 1e-3},
    {"pools", "def run(x):\n    a = F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)\n    b = F.adaptive_avg_pool2d(x, (3, 2))\n    c, i = F.max_pool2d(x, 2, stride=2, return_indices=True)\n    return a.sum(dim=(2, 3)) + b.amax(dim=(2, 3)) + c.mean(dim=(2, 3)), i",
     R"({"x": {"shape": ["B", 3, "D", 7], "dtype": "float32"}})",
     R"({"y": {"shape": ["B", 3], "dtype": "float32"}, "i": {"shape": ["B", 3, "D // 2", 3], "dtype": "int64"}})", 1e-4},
    {"scans_fp16", "def run(x):\n    return torch.cumprod(x, dim=0) + torch.cumsum(x.flip(1), dim=1)",
     R"({"x": {"shape": ["B", "D"], "dtype": "float16", "init": {"dist": "uniform", "low": 0.5, "high": 1.5}}})", R"({"y": {"shape": ["B", "D"], "dtype": "float16"}})", 2e-2},
    {"losses", "def run(x, t, p, q, k):\n    return F.cross_entropy(x, k) + F.kl_div(p.log_softmax(1), q.softmax(1), reduction='batchmean') + F.smooth_l1_loss(p, q) + F.triplet_margin_loss(p, q, x[:, :4])",
     R"({"x": {"shape": ["B", "D"], "dtype": "float32"}, "t": {"shape": ["B"], "dtype": "float32"}, "p": {"shape": ["B", 4], "dtype": "float32"}, "q": {"shape": ["B", 4], "dtype": "float32"}, "k": {"shape": ["B"], "dtype": "int64", "init": {"dist": "randint", "low": 0, "high": 4}}})",
     R"({"y": {"shape": [], "dtype": "float32"}})", 1e-4},
};

class OpFamily : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpFamily, RandomGenomesMatchTheReferenceOnTheHost) {
  const OpCase& c = GetParam();
  // Splits of 8 at most: every finish of a reduction also runs through the combine kernel.
  check(contract(c.reference, c.inputs, c.outputs, R"([{"B": 3, "D": 8}, {"B": 2, "D": 6}])", c.tol), 3, 9, 8);
}

INSTANTIATE_TEST_SUITE_P(Generic, OpFamily, ::testing::ValuesIn(kOps), [](const auto& info) { return std::string(info.param.name); });

// kSplit > 1 (a reduction's terms split over blocks, partials combined by a second kernel): every
// split value on every workload, K a multiple of no split, and smaller than some (then most
// partials are the identity, still written over their poison).
struct SplitCase {
  const char* name;
  const char* reference;
  const char* inputs;
  const char* outputs;
  const char* workloads;
  double tol;
  bool epilogue;  // kEpilogue pinned to 1: the combine kernel takes the elementwise tail
};

const SplitCase kSplits[] = {
    {"sum_to_scalar", "def run(x):\n    return torch.sum(x)", R"({"x": {"shape": ["B", "D"], "dtype": "float32"}})",
     R"({"y": {"shape": [], "dtype": "float32"}})", R"([{"B": 37, "D": 1001}, {"B": 1, "D": 5}, {"B": 3, "D": 20}])", 1e-4, false},
    // Ties everywhere (integers 0-3: the first 3 wins) and, in the second output, NaNs in some rows
    // (log of a negative: the first NaN wins), across the chunks' boundaries.
    {"argmax_ties_nan", "def run(x, m):\n    return torch.argmax(x, dim=1), torch.argmax(x + 0 * torch.log(m - 0.00023), dim=1)",
     R"({"x": {"shape": ["B", "D"], "dtype": "float32", "init": {"dist": "randint", "low": 0, "high": 4}},
         "m": {"shape": ["B", "D"], "dtype": "float32", "init": {"dist": "uniform", "low": 0, "high": 1}}})",
     R"({"i": {"shape": ["B"], "dtype": "int64"}, "j": {"shape": ["B"], "dtype": "int64"}})",
     R"([{"B": 8, "D": 3000}, {"B": 3, "D": 7}])", 0, false},
    {"mean_epilogue", "def run(x):\n    return torch.sqrt(torch.mean(x * x, dim=(1, 2))) * 2 + 1",
     R"({"x": {"shape": ["B", "D", 9], "dtype": "float32"}})", R"({"y": {"shape": ["B"], "dtype": "float32"}})",
     R"([{"B": 2, "D": 3001}, {"B": 5, "D": 3}])", 1e-4, true},
    {"frobenius", "def run(x):\n    return x / torch.norm(x, p='fro')", R"({"x": {"shape": ["B", "D", 5, 7], "dtype": "float32"}})",
     R"({"y": {"shape": ["B", "D", 5, 7], "dtype": "float32"}})", R"([{"B": 3, "D": 211}, {"B": 1, "D": 1}])", 1e-4, false},
    {"max", "def run(x):\n    return torch.amax(x, dim=(0, 1))", R"({"x": {"shape": ["B", "D", 3], "dtype": "float32"}})",
     R"({"y": {"shape": [3], "dtype": "float32"}})", R"([{"B": 13, "D": 517}, {"B": 2, "D": 2}])", 1e-6, false},
};

class Split : public ::testing::TestWithParam<SplitCase> {};

TEST_P(Split, EverySplitMatchesTheReferenceOnEveryWorkload) {
  const SplitCase& c = GetParam();
  const Task task = contract(c.reference, c.inputs, c.outputs, c.workloads, c.tol);
  const auto s = space_of(task);
  ASSERT_TRUE(s);
  std::mt19937_64 rng(13);
  for (const int64_t split : {8, 64, 512}) {
    std::map<std::string, int64_t> pins{{"kSplit", split}, {"kBlock", 64}};  // 64 threads: the host meets 512 blocks' barriers
    if (c.epilogue) pins["kEpilogue"] = 1;
    const Genome g = draw(*s, rng, pins);
    const std::string text = s->render(g);
    EXPECT_NE(text.find("kevo_generic_"), std::string::npos);
    EXPECT_NE(text.find("_partial\""), std::string::npos) << g.to_string() << ": no partial kernel";
    for (const Workload& w : task.workloads) expect_matches(task, *s, g, w, 21);
  }
}

INSTANTIATE_TEST_SUITE_P(Generic, Split, ::testing::ValuesIn(kSplits), [](const auto& info) { return std::string(info.param.name); });

// The argmax case's inputs (the seed above) have rows with a NaN (whose first NaN is the answer)
// and rows without.
TEST(GenericSplitInputs, TheArgmaxCaseHasRowsWithAndWithoutANaN) {
  const SplitCase& c = kSplits[1];
  const Task task = contract(c.reference, c.inputs, c.outputs, c.workloads, c.tol);
  const Workload& w = task.workloads.front();
  const std::vector<torch::Tensor> want = eval::run_graph(task.graph(w), eval::make_inputs(task, w, 21));
  EXPECT_TRUE((want[0] != want[1]).any().item<bool>());
  EXPECT_TRUE((want[0] == want[1]).any().item<bool>());
}

}  // namespace
}  // namespace kevo::lower
