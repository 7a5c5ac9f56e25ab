// Dtype conversions, mixed-precision type promotion, Python numbers meeting half-precision
// tensors, LibTorch's missing CPU half kernels, and the copies that are the tensor itself.
#include "op_test_util.h"

namespace kevo {
namespace {

using namespace kevo::testing;  // the helpers of op_test_util.h
using torch::Tensor;

struct DtypeOps : ::testing::Test {
  void SetUp() override {
    torch::manual_seed(23);
    x = torch::randn({3, 4}) * 4;
    h = torch::randn({3, 4}).to(torch::kFloat16);
    b = torch::randn({3, 4}).to(torch::kBFloat16);
    i = torch::randint(-5, 5, {3, 4}, torch::kInt64);
    in = {{"x", x}, {"h", h}, {"b", b}, {"i", i}};
  }
  Tensor x, h, b, i;
  NamedTensors in;
};

TEST_F(DtypeOps, ConversionsFollowTensorTo) {
  expect_returns("x.half()", in, x.to(torch::kFloat16));
  expect_returns("x.bfloat16()", in, x.to(torch::kBFloat16));
  expect_returns("h.float()", in, h.to(torch::kFloat32));
  expect_returns("x.double()", in, x.to(torch::kFloat64));
  expect_returns("x.long()", in, x.to(torch::kInt64));  // truncates toward zero
  expect_returns("x.int()", in, x.to(torch::kInt32));
  expect_returns("i.bool()", in, i.to(torch::kBool));
  expect_returns("x.to(torch.float16)", in, x.to(torch::kFloat16));
  expect_returns("x.to(dtype=torch.bfloat16)", in, x.to(torch::kBFloat16));
  expect_returns("h.to(torch.float)", in, h.to(torch::kFloat32));
  expect_returns("x.to(h)", in, x.to(torch::kFloat16));
  expect_returns("x.to('cuda', torch.half)", in, x.to(torch::kFloat16));
  expect_returns("x.to(x.device, torch.half, non_blocking=True)", in, x.to(torch::kFloat16));
  expect_returns("x.to(device=torch.device('cuda', 0), dtype=torch.float64, copy=True)", in, x.to(torch::kFloat64));
  expect_returns("x.type(torch.float16)", in, x.to(torch::kFloat16));
  expect_returns("x.type_as(b)", in, x.to(torch::kBFloat16));
  expect_returns("h.to(x.dtype)", in, h.to(torch::kFloat32));
  // The vLLM idiom: remember the dtype, compute in float32, convert back.
  expect_returns("(h.float() * 2).to(h.dtype)", in, (h.to(torch::kFloat32) * 2).to(torch::kFloat16));
  Node n = lowered("x.half()", in);
  EXPECT_EQ(n.op, "cast");
  EXPECT_EQ(attr_str(n, "dtype"), "float16");
  // A conversion to the dtype the tensor has, or to a device, is the tensor itself.
  for (const char* expr : {"x.float()", "x.to(torch.float32)", "x.to(x.device)", "x.to('cuda')", "h.type_as(h)",
                           "x.cpu()", "x.cuda()", "x.type(torch.float32)"}) {
    SCOPED_TRACE(expr);
    Graph g = lower_for(returning(expr, in), in);
    EXPECT_TRUE(g.nodes.empty()) << g.to_string();
  }
  expect_errors_at(in, {
      {"x.to(torch.int8)", "int8", "dtype torch.int8 is not supported (kevo knows float32, float64, float16"},
      {"x.to(torch.float16, torch.float32)", "float16", "to() was given more than one dtype"},
      {"x.to(1.5)", "1.5", "must be a device (x.device, 'cuda', torch.device(...)), got float"},
      {"x.type()", "x.type", "type() without a dtype returns a type name"},
      {"x.half(1)", "1", "takes at most 1 positional argument"},
      {"x.to(torch.float16, memory_format=torch.float16)", "memory_format", "memory formats are not supported"},
  });
}

// torch's promotion: two floating types give the wider (float16 with bfloat16 gives float32);
// a Python number or a 0-dim tensor of the same category keeps the tensor's dtype. A half result
// is computed in float32 and rounded once, as on the GPU (0.1 is not rounded to float16 first).
TEST_F(DtypeOps, MixedPrecisionPromotesAsTorch) {
  struct Case {
    const char* expr;
    Tensor expected;
  };
  Tensor scalar = torch::tensor(2.0f);
  const Tensor hf = h.to(torch::kFloat32), bf = b.to(torch::kFloat32);
  auto half = [](const Tensor& t) { return t.to(torch::kFloat16); };
  for (const Case& c : std::vector<Case>{
           {"h + b", h + b},
           {"h + x", h + x},
           {"b * x", b * x},
           {"h * 0.1", half(hf * 0.1)},
           {"b * 3", (bf * 3).to(torch::kBFloat16)},
           {"0.5 - h", half(0.5 - hf)},
           {"h / 3", half(hf / 3)},
           {"h ** 2", half(hf.pow(2))},
           {"h + torch.tensor(2.0)", half(hf + scalar)},
           {"h + x[0, 0]", half(hf + x[0][0])},
           {"i + h", half(i + hf)},
           {"i * 2.5", i * 2.5},
           {"torch.where(h > 0, h, 0.0)", torch::where(h > 0, h, torch::scalar_tensor(0.0, torch::kFloat16))},
           {"torch.maximum(h, b)", torch::maximum(h.to(torch::kFloat32), b.to(torch::kFloat32))},
           {"h > 0.5", h > 0.5},
       }) {
    SCOPED_TRACE(c.expr);
    expect_returns(c.expr, in, c.expected);
  }
  EXPECT_EQ(lower_for(returning("h + b", in), in).values.back().dtype, DType::Float32);
  EXPECT_EQ(lower_for(returning("h * 0.1", in), in).values.back().dtype, DType::Float16);
}

// On the CPU every half op runs in float32 and is rounded once (LibTorch 1.13 has no CPU float16
// softmax, layer norm, gelu or matmul, and the half kernels it has differ between CPUs).
TEST_F(DtypeOps, HalfPrecisionOpsRunOnTheCpu) {
  Tensor w = torch::randn({4, 5}).to(torch::kFloat16);
  NamedTensors more = {{"h", h}, {"w", w}, {"b", b}};
  auto rounded = [](const Tensor& t) { return t.to(torch::kFloat16); };
  Tensor hf = h.to(torch::kFloat32);
  expect_returns("torch.softmax(h, -1)", more, rounded(torch::softmax(hf, -1)), 1e-3, 1e-3);
  expect_returns("F.gelu(h)", more, rounded(torch::gelu(hf)), 1e-3, 1e-3);
  expect_returns("F.layer_norm(h, (4,))", more, rounded(torch::layer_norm(hf, {4})), 2e-3, 2e-3);
  expect_returns("h @ w", more, rounded(torch::matmul(hf, w.to(torch::kFloat32))), 2e-3, 2e-3);
  expect_returns("torch.sigmoid(h).sum(-1)", more, rounded(torch::sigmoid(hf)).sum(-1), 2e-3, 2e-3);
  expect_returns("F.silu(b)", more, torch::silu(b.to(torch::kFloat32)).to(torch::kBFloat16));
  // Integer outputs of a half input keep their dtype.
  expect_returns("torch.max(h, dim=1)", more,
                 std::vector<Tensor>{std::get<0>(torch::max(hf, 1)).to(torch::kFloat16), std::get<1>(torch::max(hf, 1))});
}

TEST_F(DtypeOps, CloneAndDetachAreTheTensorItself) {
  for (const char* expr : {"x.clone()", "x.clone().detach()", "torch.clone(x)", "x.detach()", "torch.detach(x)"}) {
    SCOPED_TRACE(expr);
    Graph g = lower_for(returning(expr, in), in);
    EXPECT_TRUE(g.nodes.empty()) << g.to_string();
    EXPECT_EQ(g.outputs[0], g.inputs[0]);
  }
  // KernelBench level 2, 20: the residual is x itself.
  Tensor bias = torch::randn({4});
  NamedTensors with_bias = {{"x", x}, {"bias", bias}};
  expect_returns("(x + bias + x.clone().detach()) * x.clone().detach()", with_bias, (x + bias + x) * x);
}

}  // namespace
}  // namespace kevo
