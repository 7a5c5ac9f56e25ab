// LibTorch execution of the built-in ops: binary arithmetic, comparisons, where.
#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;

void binary(TorchOpTable& t, const std::string& op, T (*fn)(const T&, const T&)) {
  t.add(op, [fn](const Node&, const In& in) { return std::vector<T>{fn(in[0], in[1])}; });
}
}  // namespace

void register_torch_builtin_ops(TorchOpTable& t) {
  binary(t, "add", [](const T& a, const T& b) { return torch::add(a, b); });
  binary(t, "sub", [](const T& a, const T& b) { return torch::sub(a, b); });
  binary(t, "mul", [](const T& a, const T& b) { return torch::mul(a, b); });
  binary(t, "div", [](const T& a, const T& b) { return torch::div(a, b); });
  binary(t, "floor_divide", [](const T& a, const T& b) { return torch::floor_divide(a, b); });
  binary(t, "remainder", [](const T& a, const T& b) { return torch::remainder(a, b); });
  binary(t, "pow", [](const T& a, const T& b) { return torch::pow(a, b); });
  binary(t, "maximum", [](const T& a, const T& b) { return torch::maximum(a, b); });
  binary(t, "minimum", [](const T& a, const T& b) { return torch::minimum(a, b); });
  binary(t, "eq", [](const T& a, const T& b) { return torch::eq(a, b); });
  binary(t, "ne", [](const T& a, const T& b) { return torch::ne(a, b); });
  binary(t, "lt", [](const T& a, const T& b) { return torch::lt(a, b); });
  binary(t, "le", [](const T& a, const T& b) { return torch::le(a, b); });
  binary(t, "gt", [](const T& a, const T& b) { return torch::gt(a, b); });
  binary(t, "ge", [](const T& a, const T& b) { return torch::ge(a, b); });
  // LibTorch 1.13's where needs one dtype (a Python number meeting it would trip an assert).
  t.add("where", [](const Node&, const In& in) {
    torch::ScalarType common = torch::result_type(in[1], in[2]);
    return std::vector<T>{torch::where(in[0], in[1].to(common), in[2].to(common))};
  });
}

}  // namespace kevo::eval
