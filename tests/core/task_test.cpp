// Task contracts: valid ones load with the right model; every malformed one gives one precise line.
#include "core/task.h"

#include <gtest/gtest.h>

#include <string>

namespace kevo {
namespace {

// A valid contract; each malformed case below edits one thing. Line numbers matter to the
// expected messages, so keep this layout.
const char* kBase = R"({
  "name": "softmax_rows",
  "description": "Row-wise softmax",
  "axes": {"B": {"type": "var"}, "D": {"type": "var"}},
  "inputs": {
    "x": {"shape": ["B", "D"], "dtype": "float32", "init": {"dist": "uniform", "low": 0, "high": 1}}
  },
  "outputs": {
    "y": {"shape": ["B", "D"], "dtype": "float32"}
  },
  "reference": "import torch\n\ndef run(x):\n    return torch.softmax(x, dim=1)\n",
  "workloads": [{"B": 4096, "D": 393216}, {"B": 16, "D": 16384}],
  "tolerance": {"atol": 1e-4, "rtol": 1e-4}
})";

std::string edit(const std::string& from, const std::string& to) {
  std::string s = kBase;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "test bug: '" << from << "' not in the base contract";
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

std::string error_of(const std::string& text) {
  try {
    parse_task(text, "t.json");
  } catch (const InputError& e) {
    std::string line = e.what();
    EXPECT_EQ(line.find('\n'), std::string::npos) << "not one line: " << line;
    return line;
  }
  return "(no error)";
}

TEST(Task, LoadsTheBaseContract) {
  Task t = parse_task(kBase, "t.json");
  EXPECT_EQ(t.name, "softmax_rows");
  ASSERT_EQ(t.inputs.size(), 1u);
  EXPECT_EQ(t.inputs[0].init.dist, "uniform");
  ASSERT_EQ(t.workloads.size(), 2u);
  EXPECT_EQ(t.shape_of(t.inputs[0], t.workloads[1]), (Shape{16, 16384}));
  EXPECT_EQ(t.bytes_moved(t.workloads[0]), 2LL * 4096 * 393216 * 4);
  EXPECT_EQ(t.reference_loc.line, 11);
  EXPECT_EQ(t.reference_loc.col, 16);
  Graph g = t.graph(t.workloads[1]);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "softmax");
}

TEST(Task, SizeExpressionsAndConstAxes) {
  std::string text = edit(R"("axes": {"B": {"type": "var"}, "D": {"type": "var"}})",
                          R"("axes": {"B": {"type": "var"}, "D": {"type": "const", "value": 8}})");
  text = edit(R"("workloads": [{"B": 4096, "D": 393216}, {"B": 16, "D": 16384}])", R"("workloads": [{"B": 3}])");
  text.replace(text.find(R"("axes": {"B": {"type": "var"}, "D": {"type": "var"}})"), 52,
               R"("axes": {"B": {"type": "var"}, "D": {"type": "const", "value": 8}})");
  Task t = parse_task(text, "t.json");
  EXPECT_EQ(t.shape_of(t.outputs[0], t.workloads[0]), (Shape{3, 8}));
}

TEST(Task, WorkloadsCarryWeightsAndCheckedOnlyShapes) {
  Task t = parse_task(edit(R"([{"B": 4096, "D": 393216}, {"B": 16, "D": 16384}])",
                           R"([{"B": 4096, "D": 393216, "weight": 3.5}, {"axes": {"B": 16, "D": 16384}, "timed": false}])"),
                      "t.json");
  ASSERT_EQ(t.workloads.size(), 2u);
  EXPECT_DOUBLE_EQ(t.workloads[0].weight, 3.5);
  EXPECT_TRUE(t.workloads[0].timed);
  EXPECT_EQ(t.workloads[0].axes.size(), 2u);  // "weight" is no axis
  EXPECT_DOUBLE_EQ(t.workloads[1].weight, 1.0);
  EXPECT_FALSE(t.workloads[1].timed);
  EXPECT_TRUE(t.is_timed(0));
  EXPECT_FALSE(t.is_timed(1));
  EXPECT_FALSE(t.is_timed(2));
  Task plain = parse_task(kBase, "t.json");
  EXPECT_DOUBLE_EQ(plain.workloads[1].weight, 1.0);
  EXPECT_TRUE(plain.workloads[1].timed);
}

TEST(Task, VarAxesDeclareRangesAndDefaultToTheWorkloads) {
  Task t = parse_task(edit(R"("D": {"type": "var"})", R"("D": {"type": "var", "min": 1024, "max": 1048576, "multiple_of": 128})"),
                      "t.json");
  ASSERT_EQ(t.axes.size(), 2u);
  const Axis& b = t.axes[0];
  const Axis& d = t.axes[1];
  EXPECT_FALSE(b.declared);
  EXPECT_EQ(b.min, 1);
  EXPECT_EQ(b.max, 4096);  // the largest workload value
  EXPECT_EQ(b.multiple_of, 1);
  EXPECT_TRUE(d.declared);
  EXPECT_EQ(d.min, 1024);
  EXPECT_EQ(d.max, 1048576);
  EXPECT_EQ(d.multiple_of, 128);
  EXPECT_TRUE(d.admits(1024));
  EXPECT_TRUE(d.admits(1048576));
  EXPECT_FALSE(d.admits(1024 + 64));
  EXPECT_FALSE(d.admits(896));
  EXPECT_FALSE(d.admits(1048576 + 128));
  EXPECT_TRUE(b.admits(1));
  EXPECT_FALSE(b.admits(4097));
}

struct Malformed {
  const char* what;
  std::string text;
  std::string expected;  // the whole line; for JSON syntax errors, up to "invalid JSON:"
};

class MalformedContract : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedContract, GivesOneLineWithPlaceAndReason) {
  std::string got = error_of(GetParam().text);
  const std::string& want = GetParam().expected;
  // nlohmann-json words its syntax errors differently across versions; the place and the
  // "invalid JSON:" reason are ours and must match exactly.
  const std::string ours = "invalid JSON:";
  if (want.size() >= ours.size() && want.compare(want.size() - ours.size(), ours.size(), ours) == 0)
    EXPECT_EQ(got.substr(0, want.size()), want) << got;
  else
    EXPECT_EQ(got, want);
}

std::vector<Malformed> malformed_cases() {
  return {
      {"bad JSON", edit(R"("description": "Row-wise softmax",)", R"("description": "Row-wise softmax")"),
       "t.json:4:8: invalid JSON:"},
      {"empty file", "", "t.json:1:1: invalid JSON:"},
      {"not an object", "[1, 2]", "t.json:1:1: must be an object, got an array"},
      {"missing workloads", edit(R"(  "workloads": [{"B": 4096, "D": 393216}, {"B": 16, "D": 16384}],
)", ""), "t.json:1:1: missing required field 'workloads'"},
      {"unknown field", edit(R"("tolerance")", R"("tolerence")"),
       "t.json:13:3: tolerence: unknown field 'tolerence' (expected one of: axes, constraints, description, inputs, "
       "name, notes, op_type, outputs, reference, tags, tolerance, workloads)"},
      {"unknown op", edit("torch.softmax(x, dim=1)", "torch.softmaxx(x, dim=1)"),
       "t.json:11:16: reference:4:18: unknown function 'torch.softmaxx' (workload 0)"},
      {"wrong arity", edit("torch.softmax(x, dim=1)", "torch.relu(x, x)"),
       "t.json:11:16: reference:4:26: relu(): takes at most 1 positional argument but 2 were given (workload 0)"},
      {"bad keyword", edit("torch.softmax(x, dim=1)", "torch.softmax(x, axis=1)"),
       "t.json:11:16: reference:4:29: softmax(): unexpected keyword argument 'axis' (workload 0)"},
      {"output shape differs", edit("torch.softmax(x, dim=1)", "torch.sum(x, dim=1, keepdim=True)"),
       "t.json:9:10: outputs.y: the reference returns float32[4096, 1] but the contract declares float32[4096, "
       "393216] (workload 0)"},
      {"output dtype differs", edit("torch.softmax(x, dim=1)", "torch.argmax(x, dim=1, keepdim=True)"),
       "t.json:9:10: outputs.y: the reference returns int64[4096, 1] but the contract declares float32[4096, "
       "393216] (workload 0)"},
      {"unknown axis", edit(R"("y": {"shape": ["B", "D"])", R"("y": {"shape": ["B", "Q"])"),
       "t.json:9:26: outputs.y.shape[1]: unknown axis 'Q'"},
      {"domain min above max",
       edit(R"("init": {"dist": "uniform", "low": 0, "high": 1}})",
            R"("init": {"dist": "uniform", "low": 0, "high": 1}, "domain": {"min": 2, "max": 1}})"),
       "t.json:6:112: inputs.x.domain: min must be below max"},
      {"domain of an unknown bound",
       edit(R"("init": {"dist": "uniform", "low": 0, "high": 1}})",
            R"("init": {"dist": "uniform", "low": 0, "high": 1}, "domain": {"lo": 0}})"),
       "t.json:6:113: inputs.x.domain.lo: unknown field 'lo' (expected one of: max, min)"},
      {"domain bound not a number",
       edit(R"("init": {"dist": "uniform", "low": 0, "high": 1}})",
            R"("init": {"dist": "uniform", "low": 0, "high": 1}, "domain": {"min": "zero"}})"),
       "t.json:6:120: inputs.x.domain.min: must be a number, got a string"},
      {"zero size", edit(R"({"B": 16, "D": 16384})", R"({"B": 0, "D": 16384})"),
       "t.json:12:49: workloads[1].B: size must be positive, got 0"},
      {"negative size", edit(R"({"B": 16, "D": 16384})", R"({"B": -16, "D": 16384})"),
       "t.json:12:49: workloads[1].B: size must be positive, got -16"},
      {"size over int64", edit(R"({"B": 16, "D": 16384})", R"({"B": 16, "D": 18446744073709551615})"),
       "t.json:12:58: workloads[1].D: size 18446744073709551615 overflows 64 bits"},
      {"element count overflows", edit(R"({"B": 16, "D": 16384})", R"({"B": 4294967296, "D": 4294967296})"),
       "t.json:12:43: workloads[1]: the size of 'x' overflows 64 bits"},
      {"byte count overflows", edit(R"({"B": 16, "D": 16384})", R"({"B": 4294967296, "D": 1073741824})"),
       "t.json:12:43: workloads[1]: the byte count of 'x' overflows 64 bits"},
      {"no workloads", edit(R"([{"B": 4096, "D": 393216}, {"B": 16, "D": 16384}])", "[]"),
       "t.json:12:16: workloads: a contract needs at least one workload"},
      {"workload misses an axis", edit(R"({"B": 16, "D": 16384})", R"({"B": 16})"),
       "t.json:12:43: workloads[1]: workload gives no size for axis 'D'"},
      {"workload names an unknown axis", edit(R"({"B": 16, "D": 16384})", R"({"B": 16, "D": 16384, "E": 2})"),
       "t.json:12:65: workloads[1].E: unknown axis 'E'"},
      {"NaN tolerance", edit(R"("atol": 1e-4)", R"("atol": NaN)"),
       "t.json:13:25: invalid JSON:"},
      {"tolerance as a string", edit(R"("atol": 1e-4)", R"("atol": "nan")"),
       "t.json:13:25: tolerance.atol: must be a number, got a string"},
      {"infinite tolerance", edit(R"("atol": 1e-4)", R"("atol": 1e999)"),
       "t.json:13:25: invalid JSON: number overflow parsing '1e999'"},
      {"negative tolerance", edit(R"("rtol": 1e-4)", R"("rtol": -1)"),
       "t.json:13:39: tolerance.rtol: must not be negative"},
      {"unsupported dtype", edit(R"("dtype": "float32", "init")", R"("dtype": "complex64", "init")"),
       "t.json:6:41: inputs.x.dtype: unsupported dtype 'complex64' (supported: float32, float64, float16, bfloat16, "
       "int64, int32, bool)"},
      {"never returns", edit("    return torch.softmax(x, dim=1)\\n", "    y = torch.softmax(x, dim=1)\\n"),
       "t.json:11:16: reference:3:1: run() never returns a value"},
      {"syntax error", edit("torch.softmax(x, dim=1)", "torch.softmax(x, dim=1"),
       "t.json:11:16: reference:4:25: '(' was never closed"},
      {"parameter not an input", edit("def run(x):", "def run(x, w):"),
       "t.json:11:16: reference:3:12: parameter 'w' is not a declared input"},
      {"input not a parameter", edit("def run(x):", "def run():"),
       "t.json:11:16: reference:3:5: run() has no parameter for input 'x'"},
      {"returns two tensors for one output", edit("return torch.softmax(x, dim=1)", "return x, x"),
       "t.json:11:16: reference: returns 2 tensors but the contract declares 1 output (workload 0)"},
      {"unknown init distribution", edit(R"("dist": "uniform")", R"("dist": "gaussian")"),
       "t.json:6:69: inputs.x.init.dist: unknown distribution 'gaussian' (expected uniform, normal, kaiming_uniform, "
       "fan_in_uniform, randint, choice, ones, zeros or constant)"},
      {"empty uniform range", edit(R"("low": 0, "high": 1)", R"("low": 1, "high": 1)"),
       "t.json:6:60: inputs.x.init: low must be below high"},
      {"const axis without value", edit(R"("D": {"type": "var"}})", R"("D": {"type": "const"}})"),
       "t.json:4:39: axes.D: a const axis needs a 'value'"},
      {"bad axis type", edit(R"("D": {"type": "var"}})", R"("D": {"type": "dynamic"}})"),
       "t.json:4:48: axes.D.type: axis type must be \"var\" or \"const\", got \"dynamic\""},
      {"name reused", edit(R"("y": {"shape")", R"("x": {"shape")"),
       "t.json:9:5: outputs.x: the name 'x' is declared twice"},
      {"bad size expression", edit(R"("y": {"shape": ["B", "D"])", R"("y": {"shape": ["B", "D -"])"),
       "t.json:9:26: outputs.y.shape[1]: bad size expression in 'D -' at offset 3: expression ends early"},
      {"size expression not positive", edit(R"("y": {"shape": ["B", "D"])", R"("y": {"shape": ["B", "D - 16384"])"),
       "t.json:12:43: workloads[1]: dim 1 of 'y' (D - 16384) is 0 in this workload; sizes must be positive"},
      {"field given twice", edit(R"("description": "Row-wise softmax",)", R"("description": "a", "description": "b",)"),
       "t.json:3:23: description: the field 'description' is given twice"},
      {"name not a string", edit(R"("name": "softmax_rows")", R"("name": 7)"), "t.json:2:11: name: must be a string, got a number"},
      {"deeply nested JSON", std::string(100000, '[') + std::string(100000, ']'),
       "t.json:1:1: JSON nested deeper than 64 levels"},
      {"input name not an identifier", edit(R"("x": {"shape": ["B", "D"], "dtype")", R"("x-1": {"shape": ["B", "D"], "dtype")"),
       "t.json:6:5: inputs.x-1: 'x-1' is not a valid Python identifier"},
      {"bad reference shape op", edit("torch.softmax(x, dim=1)", "torch.softmax(x, dim=2)"),
       "t.json:11:16: reference:4:29: dim 2 is out of range for a tensor of rank 2 (workload 0)"},
      // The operators and language of KernelBench levels 1 and 2 and half precision: bad arguments.
      {"conv_transpose output_padding not below stride", edit("torch.softmax(x, dim=1)", "F.conv_transpose1d(x[None], x[:, :3, None], output_padding=1)"),
       "t.json:11:16: reference:4:56: argument 'output_padding' of conv_transpose1d: output padding must be "
       "smaller than either stride or dilation, got output_padding [1], stride [1], dilation [1] (workload 0)"},
      {"max_pool3d of a matrix", edit("torch.softmax(x, dim=1)", "F.max_pool3d(x, 2)"),
       "t.json:11:16: reference:4:25: argument 'input' of max_pool3d: must be 4-D or 5-D (batched), got "
       "shape [4096, 393216] (workload 0)"},
      {"narrow past the end", edit("torch.softmax(x, dim=1)", "x.narrow(1, 0, 400000)"),
       "t.json:11:16: reference:4:27: argument 'length' of narrow: start (0) + length (400000) exceeds "
       "dimension size (393216) (workload 0)"},
      {"chunk into zero", edit("torch.softmax(x, dim=1)", "x.chunk(0, 1)[0]"),
       "t.json:11:16: reference:4:20: argument 'chunks' of chunk: chunk expects `chunks` to be greater than "
       "0, got: 0 (workload 0)"},
      {"cat of mismatched sizes", edit("torch.softmax(x, dim=1)", "torch.cat((x, x[:, :2]))"),
       "t.json:11:16: reference:4:22: argument 'tensors' of cat: Sizes of tensors must match except in "
       "dimension 0. Expected size 393216 but got size 2 for tensor number 1 in the list. (workload 0)"},
      {"dropout in training mode", edit("torch.softmax(x, dim=1)", "F.dropout(x, 0.1)"),
       "t.json:11:16: reference:4:12: dropout with p=0.1 in training mode makes the reference's output "
       "random, so it cannot be checked: pass training=False (the module in eval mode) or p=0 (workload 0)"},
      {"index out of bounds", edit("torch.softmax(x, dim=1)", "x[5000]"),
       "t.json:11:16: reference:4:14: index 5000 is out of bounds for dimension 0 with size 4096 (workload 0)"},
      {"einsum sizes disagree", edit("torch.softmax(x, dim=1)", "torch.einsum('ij,jk->ik', x, x)"),
       "t.json:11:16: reference:4:25: argument 'equation' of einsum: einsum(): subscript j has size 4096 "
       "for operand 1 which does not broadcast with previously seen size 393216 (workload 0)"},
      {"attention with dropout", edit("torch.softmax(x, dim=1)", "F.scaled_dot_product_attention(x, x, x, dropout_p=0.1)"),
       "t.json:11:16: reference:4:52: argument 'dropout_p' of scaled_dot_product_attention: dropout makes "
       "the reference's output random, so it cannot be checked: pass dropout_p=0.0 (workload 0)"},
      {"unsupported torch dtype", edit("torch.softmax(x, dim=1)", "x.to(torch.int8)"),
       "t.json:11:16: reference:4:23: dtype torch.int8 is not supported (kevo knows float32, float64, "
       "float16, bfloat16, int64, int32 and bool) (workload 0)"},
      {"random tensor", edit("torch.softmax(x, dim=1)", "x + torch.rand(3)"),
       "t.json:11:16: reference:4:16: torch.rand: random tensors make the reference's output random, so it "
       "cannot be checked: make the values an input of the contract (workload 0)"},
      {"conv3d with a 2-D weight", edit("torch.softmax(x, dim=1)", "F.conv3d(x, x)"),
       "t.json:11:16: reference:4:24: argument 'weight' of conv3d: must be 5-D [out_channels, "
       "in_channels/groups, kD, kH, kW] with a non-empty kernel, got shape [4096, 393216] (workload 0)"},
      {"adaptive pool to size zero", edit("torch.softmax(x, dim=1)", "F.adaptive_avg_pool2d(x[None], (0, 1))"),
       "t.json:11:16: reference:4:43: argument 'output_size' of adaptive_avg_pool2d: must hold positive "
       "ints or None, got 0 (workload 0)"},
      {"ragged torch.tensor", edit("torch.softmax(x, dim=1)", "x + torch.tensor([[1.0], [2.0, 3.0]])"),
       "t.json:11:16: reference:4:29: argument 'data' of tensor: expected sequence of length 1 at dim 1 "
       "(got 2) (workload 0)"},
      {"negative slice step", edit("torch.softmax(x, dim=1)", "x[:, ::-1]"),
       "t.json:11:16: reference:4:17: step must be greater than zero, got -1 (torch has no negative steps: "
       "use flip) (workload 0)"},
      {"triplet loss of mixed ranks", edit("torch.softmax(x, dim=1)", "F.triplet_margin_loss(x, x, x[0])"),
       "t.json:11:16: reference:4:12: the anchor, positive, and negative tensors are expected to have the "
       "same number of dimensions, but got: anchor 2D, positive 2D, and negative 1D inputs (workload 0)"},
      {"avg_pool3d divisor zero", edit("torch.softmax(x, dim=1)", "F.avg_pool3d(x[None, None], 2, divisor_override=0)"),
       "t.json:11:16: reference:4:43: argument 'divisor_override' of avg_pool3d: must not be zero (workload 0)"},
      {"stack of unequal shapes", edit("torch.softmax(x, dim=1)", "torch.stack((x, x[1:]))"),
       "t.json:11:16: reference:4:24: argument 'tensors' of stack: stack expects each tensor to be equal "
       "size, but got [4096, 393216] at entry 0 and [4095, 393216] at entry 1 (workload 0)"},
      {"zero weight", edit(R"({"B": 16, "D": 16384})", R"({"B": 16, "D": 16384, "weight": 0})"),
       "t.json:12:75: workloads[1].weight: must be positive (how often the shape occurs), got 0"},
      {"negative weight", edit(R"({"B": 16, "D": 16384})", R"({"B": 16, "D": 16384, "weight": -2.5})"),
       "t.json:12:75: workloads[1].weight: must be positive (how often the shape occurs), got -2.5"},
      {"weight not a number", edit(R"({"B": 16, "D": 16384})", R"({"B": 16, "D": 16384, "weight": "often"})"),
       "t.json:12:75: workloads[1].weight: must be a number, got a string"},
      {"timed not a boolean", edit(R"({"B": 16, "D": 16384})", R"({"B": 16, "D": 16384, "timed": 0})"),
       "t.json:12:74: workloads[1].timed: must be true or false, got a number"},
      {"no timed workload",
       edit(R"([{"B": 4096, "D": 393216}, {"B": 16, "D": 16384}])",
            R"([{"B": 4096, "D": 393216, "timed": false}, {"B": 16, "D": 16384, "timed": false}])"),
       "t.json:12:16: workloads: no workload is timed: the fitness needs at least one (drop \"timed\": false from one)"},
      {"misspelt weight", edit(R"({"B": 16, "D": 16384})", R"({"B": 16, "D": 16384, "wieght": 2})"),
       "t.json:12:65: workloads[1].wieght: unknown axis 'wieght'"},
      {"axis min not positive", edit(R"("D": {"type": "var"})", R"("D": {"type": "var", "min": 0})"),
       "t.json:4:62: axes.D.min: size must be positive, got 0"},
      {"axis min above max", edit(R"("D": {"type": "var"})", R"("D": {"type": "var", "min": 64, "max": 32})"),
       "t.json:4:39: axes.D: min (64) is above max (32)"},
      {"axis multiple_of fits no size", edit(R"("D": {"type": "var"})", R"("D": {"type": "var", "min": 33, "max": 63, "multiple_of": 32})"),
       "t.json:4:39: axes.D: no size in [33, 63] is a multiple of 32"},
      {"axis max not an integer", edit(R"("D": {"type": "var"})", R"("D": {"type": "var", "max": 1.5})"),
       "t.json:4:62: axes.D.max: size must be an integer, got 1.5"},
      {"range on a const axis", edit(R"("D": {"type": "var"})", R"("D": {"type": "const", "value": 4, "max": 8})"),
       "t.json:4:69: axes.D.max: a const axis has one size; ranges are for var axes"},
      {"workload below min", edit(R"("B": {"type": "var"})", R"("B": {"type": "var", "min": 32})"),
       "t.json:12:49: workloads[1].B: 16 is below the axis's min 32 (axes.B)"},
      {"workload above max", edit(R"("D": {"type": "var"})", R"("D": {"type": "var", "max": 65536})"),
       "t.json:12:34: workloads[0].D: 393216 is above the axis's max 65536 (axes.D)"},
      {"workload off the multiple", edit(R"("D": {"type": "var"})", R"("D": {"type": "var", "multiple_of": 3})"),
       "t.json:12:58: workloads[1].D: 16384 is not a multiple of 3 (axes.D)"},
      {"axis named weight", edit(R"("D": {"type": "var"}})", R"("D": {"type": "var"}, "weight": {"type": "var"}})"),
       "t.json:4:56: axes.weight: axis name 'weight' is reserved: a workload's \"weight\" says how it is used"},
  };
}

INSTANTIATE_TEST_SUITE_P(Contracts, MalformedContract, ::testing::ValuesIn(malformed_cases()),
                         [](const ::testing::TestParamInfo<Malformed>& info) {
                           std::string name;
                           for (char c : std::string(info.param.what)) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

TEST(Task, MissingFileIsAnInputError) {
  try {
    load_task("/nonexistent/kevo/task.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/kevo/task.json: cannot open the file");
  }
}

TEST(Task, BundledContractsLoad) {
  for (const char* name : {"01_relu", "02_gelu", "03_softmax", "04_rms_norm", "05_layer_norm", "06_sum_dim1",
                           "07_argmax_dim1", "08_gelu_tanh_explicit", "09_cumsum", "10_mse_loss", "11_hinge_loss",
                           "12_max_pool2d", "13_linear_leaky_relu", "14_conv2d_relu_bias"}) {
    std::string path = std::string(KEVO_SOURCE_ROOT) + "/tasks/" + name + ".json";
    try {
      Task t = load_task(path);
      EXPECT_GE(t.workloads.size(), 2u) << name;
      EXPECT_DOUBLE_EQ(t.tolerance.atol, 1e-4) << name;
      EXPECT_DOUBLE_EQ(t.tolerance.rtol, 1e-4) << name;
    } catch (const InputError& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

// tasks/half/: every contract loads, and its tensors have the precision its name says (the
// softmax_fp32_math tasks return float32 probabilities of half-precision logits).
TEST(Task, HalfPrecisionContractsLoad) {
  const std::string dir = std::string(KEVO_SOURCE_ROOT) + "/tasks/half/";
  int loaded = 0;
  for (const char* stem : {"relu", "gelu", "softmax", "rms_norm", "layer_norm", "linear_leaky_relu", "conv2d_relu_bias",
                           "fused_add_rms_norm", "silu_and_mul", "softmax_fp32_math"}) {
    for (const auto& [suffix, dtype] : {std::pair<std::string, DType>{"_fp16", DType::Float16}, {"_bf16", DType::BFloat16}}) {
      std::string name = stem + suffix;
      try {
        Task t = load_task(dir + name + ".json");
        EXPECT_EQ(t.name, name);
        for (const TensorDecl& in : t.inputs) EXPECT_EQ(in.dtype, dtype) << name << " input " << in.name;
        for (const TensorDecl& out : t.outputs)
          EXPECT_EQ(out.dtype, std::string(stem) == "softmax_fp32_math" ? DType::Float32 : dtype) << name;
        ++loaded;
      } catch (const InputError& e) {
        ADD_FAILURE() << e.what();
      }
    }
  }
  EXPECT_EQ(loaded, 20);
}

}  // namespace
}  // namespace kevo
