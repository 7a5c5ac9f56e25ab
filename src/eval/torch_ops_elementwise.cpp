// LibTorch execution of op family 'elementwise': activations, unary math, clamp, tril and triu.
#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;

// Ops of one tensor and no attributes, by canonical name.
const std::vector<std::pair<const char*, T (*)(const T&)>>& unary_ops() {
  static const std::vector<std::pair<const char*, T (*)(const T&)>> table = {
      {"relu", torch::relu},
      {"sigmoid", torch::sigmoid},
      {"tanh", torch::tanh},
      {"silu", torch::silu},
      {"mish", torch::mish},
      {"selu", torch::selu},
      {"hardsigmoid", torch::hardsigmoid},
      {"hardswish", torch::hardswish},
      // torch.nn.functional.softsign is this expression; ATen has no kernel for it.
      {"softsign", [](const T& x) { return x / (x.abs() + 1); }},
      {"exp", torch::exp},
      {"log", torch::log},
      {"sqrt", torch::sqrt},
      {"rsqrt", torch::rsqrt},
      {"erf", torch::erf},
      {"sin", torch::sin},
      {"cos", torch::cos},
      {"abs", torch::abs},
      {"neg", torch::neg},
  };
  return table;
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
  for (const auto& [op, fn] : unary_ops())
    t.add(op, [fn = fn](const Node&, const In& in) { return std::vector<T>{fn(in[0])}; });

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
  t.add("tril", [](const Node& n, const In& in) { return std::vector<T>{in[0].tril(attr_int(n, "diagonal"))}; });
  t.add("triu", [](const Node& n, const In& in) { return std::vector<T>{in[0].triu(attr_int(n, "diagonal"))}; });
}

}  // namespace kevo::eval
