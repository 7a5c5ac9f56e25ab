// LibTorch execution of op family 'shape': views and layout changes.
#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;

void unary(TorchOpTable& t, const std::string& op, T (*fn)(const Node&, const T&)) {
  t.add(op, [fn](const Node& n, const In& in) { return std::vector<T>{fn(n, in[0])}; });
}
}  // namespace

void register_torch_shape_ops(TorchOpTable& t) {
  unary(t, "reshape", [](const Node& n, const T& x) { return x.reshape(attr_ints(n, "shape")); });
  unary(t, "transpose", [](const Node& n, const T& x) { return x.transpose(attr_int(n, "dim0"), attr_int(n, "dim1")); });
  unary(t, "permute", [](const Node& n, const T& x) { return x.permute(attr_ints(n, "dims")); });
  unary(t, "unsqueeze", [](const Node& n, const T& x) { return x.unsqueeze(attr_int(n, "dim")); });
  // The dims are ascending; squeezing from the last keeps the earlier indices valid.
  unary(t, "squeeze", [](const Node& n, const T& x) {
    T y = x;
    const std::vector<int64_t>& dims = attr_ints(n, "dims");
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) y = y.squeeze(*it);
    return y;
  });
  unary(t, "expand", [](const Node& n, const T& x) { return x.expand(attr_ints(n, "shape")); });
  unary(t, "contiguous", [](const Node&, const T& x) { return x.contiguous(); });
  unary(t, "flip", [](const Node& n, const T& x) { return x.flip(attr_ints(n, "dims")); });
}

}  // namespace kevo::eval
