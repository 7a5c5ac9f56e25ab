// LibTorch execution of op family 'elementwise': activations, unary math and clamp.
#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;

void unary(TorchOpTable& t, const std::string& op, T (*fn)(const T&)) {
  t.add(op, [fn](const Node&, const In& in) { return std::vector<T>{fn(in[0])}; });
}

// An op whose attributes are scalars passed on to torch in a fixed order.
void with_scalars(TorchOpTable& t, const std::string& op, std::vector<std::string> keys,
                  T (*fn)(const T&, const std::vector<torch::Scalar>&)) {
  t.add(op, [keys = std::move(keys), fn](const Node& n, const In& in) {
    std::vector<torch::Scalar> s;
    for (const std::string& k : keys) s.push_back(attr_scalar(n, k));
    return std::vector<T>{fn(in[0], s)};
  });
}

// Branches instead of passing optionals, whose spelling differs between LibTorch versions.
T clamp(const Node& n, const T& x) {
  bool has_min = !attr_is_none(n, "min"), has_max = !attr_is_none(n, "max");
  if (has_min && has_max) return torch::clamp(x, attr_scalar(n, "min"), attr_scalar(n, "max"));
  if (has_min) return torch::clamp(x, attr_scalar(n, "min"));
  return torch::clamp(x, {}, attr_scalar(n, "max"));
}
}  // namespace

void register_torch_elementwise_ops(TorchOpTable& t) {
  unary(t, "relu", [](const T& x) { return torch::relu(x); });
  unary(t, "sigmoid", [](const T& x) { return torch::sigmoid(x); });
  unary(t, "tanh", [](const T& x) { return torch::tanh(x); });
  unary(t, "silu", [](const T& x) { return torch::silu(x); });
  unary(t, "mish", [](const T& x) { return torch::mish(x); });
  unary(t, "selu", [](const T& x) { return torch::selu(x); });
  unary(t, "hardsigmoid", [](const T& x) { return torch::hardsigmoid(x); });
  unary(t, "hardswish", [](const T& x) { return torch::hardswish(x); });
  // torch.nn.functional.softsign is this expression; ATen has no kernel for it.
  unary(t, "softsign", [](const T& x) { return x / (x.abs() + 1); });
  unary(t, "exp", [](const T& x) { return torch::exp(x); });
  unary(t, "log", [](const T& x) { return torch::log(x); });
  unary(t, "sqrt", [](const T& x) { return torch::sqrt(x); });
  unary(t, "rsqrt", [](const T& x) { return torch::rsqrt(x); });
  unary(t, "erf", [](const T& x) { return torch::erf(x); });
  unary(t, "sin", [](const T& x) { return torch::sin(x); });
  unary(t, "cos", [](const T& x) { return torch::cos(x); });
  unary(t, "abs", [](const T& x) { return torch::abs(x); });
  unary(t, "neg", [](const T& x) { return torch::neg(x); });

  using S = std::vector<torch::Scalar>;
  with_scalars(t, "leaky_relu", {"negative_slope"}, [](const T& x, const S& s) { return torch::leaky_relu(x, s[0]); });
  with_scalars(t, "elu", {"alpha"}, [](const T& x, const S& s) { return torch::elu(x, s[0]); });
  with_scalars(t, "celu", {"alpha"}, [](const T& x, const S& s) { return torch::celu(x, s[0]); });
  with_scalars(t, "hardtanh", {"min_val", "max_val"},
               [](const T& x, const S& s) { return torch::hardtanh(x, s[0], s[1]); });
  with_scalars(t, "softplus", {"beta", "threshold"},
               [](const T& x, const S& s) { return torch::softplus(x, s[0], s[1]); });
  t.add("gelu", [](const Node& n, const In& in) { return std::vector<T>{torch::gelu(in[0], attr_str(n, "approximate"))}; });
  t.add("clamp", [](const Node& n, const In& in) { return std::vector<T>{clamp(n, in[0])}; });
}

}  // namespace kevo::eval
