// LibTorch execution of op family 'conv': convolutions and transposed convolutions, 1-D to 3-D.
#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;
using Ints = std::vector<int64_t>;

using ConvFn = T (*)(const T&, const T&, const T&, const Ints&, const Ints&, const Ints&, int64_t);
using TransposedFn = T (*)(const T&, const T&, const T&, const Ints&, const Ints&, const Ints&, int64_t, const Ints&);

void conv(TorchOpTable& t, const std::string& op, ConvFn fn) {
  t.add(op, [fn](const Node& n, const In& in) {
    return std::vector<T>{fn(in[0], in[1], in[2], attr_ints(n, "stride"), attr_ints(n, "padding"),
                             attr_ints(n, "dilation"), attr_int(n, "groups"))};
  });
}

void conv_transpose(TorchOpTable& t, const std::string& op, TransposedFn fn) {
  t.add(op, [fn](const Node& n, const In& in) {
    return std::vector<T>{fn(in[0], in[1], in[2], attr_ints(n, "stride"), attr_ints(n, "padding"),
                             attr_ints(n, "output_padding"), attr_int(n, "groups"), attr_ints(n, "dilation"))};
  });
}
}  // namespace

void register_torch_conv_ops(TorchOpTable& t) {
  conv(t, "conv1d", [](const T& x, const T& w, const T& b, const Ints& s, const Ints& p, const Ints& d, int64_t g) {
    return torch::conv1d(x, w, b, s, p, d, g);
  });
  conv(t, "conv2d", [](const T& x, const T& w, const T& b, const Ints& s, const Ints& p, const Ints& d, int64_t g) {
    return torch::conv2d(x, w, b, s, p, d, g);
  });
  conv(t, "conv3d", [](const T& x, const T& w, const T& b, const Ints& s, const Ints& p, const Ints& d, int64_t g) {
    return torch::conv3d(x, w, b, s, p, d, g);
  });
  conv_transpose(t, "conv_transpose1d",
                 [](const T& x, const T& w, const T& b, const Ints& s, const Ints& p, const Ints& o, int64_t g,
                    const Ints& d) { return torch::conv_transpose1d(x, w, b, s, p, o, g, d); });
  conv_transpose(t, "conv_transpose2d",
                 [](const T& x, const T& w, const T& b, const Ints& s, const Ints& p, const Ints& o, int64_t g,
                    const Ints& d) { return torch::conv_transpose2d(x, w, b, s, p, o, g, d); });
  conv_transpose(t, "conv_transpose3d",
                 [](const T& x, const T& w, const T& b, const Ints& s, const Ints& p, const Ints& o, int64_t g,
                    const Ints& d) { return torch::conv_transpose3d(x, w, b, s, p, o, g, d); });
}

}  // namespace kevo::eval
