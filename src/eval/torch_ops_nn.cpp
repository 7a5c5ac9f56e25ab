// LibTorch execution of op family 'nn': normalizations, matmul/linear/conv2d, pooling, losses.
#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;

std::vector<T> one(T t) { return {std::move(t)}; }

int64_t reduction(const std::string& r) {
  if (r == "none") return at::Reduction::None;
  return r == "sum" ? at::Reduction::Sum : at::Reduction::Mean;
}
int64_t reduction(const Node& n) { return reduction(attr_str(n, "reduction")); }

// Input and target in their promoted dtype: LibTorch versions differ in whether the loss kernels
// promote by themselves.
std::vector<T> promoted(const T& a, const T& b) {
  torch::ScalarType common = torch::promote_types(a.scalar_type(), b.scalar_type());
  return {a.to(common), b.to(common)};
}

// Pointwise losses also broadcast input and target first, as torch.nn.functional does.
void pointwise_loss(TorchOpTable& t, const std::string& op, T (*fn)(const Node&, const T&, const T&)) {
  t.add(op, [fn](const Node& n, const In& in) {
    std::vector<T> p = promoted(in[0], in[1]);
    std::vector<T> b = torch::broadcast_tensors(p);
    return one(fn(n, b[0], b[1]));
  });
}
}  // namespace

void register_torch_nn_ops(TorchOpTable& t) {
  // Undefined tensors stand for None weights and biases; ATen treats them as absent.
  t.add("layer_norm", [](const Node& n, const In& in) {
    return one(torch::layer_norm(in[0], attr_ints(n, "normalized_shape"), in[1], in[2], attr_float(n, "eps")));
  });
  t.add("group_norm", [](const Node& n, const In& in) {
    return one(torch::group_norm(in[0], attr_int(n, "num_groups"), in[1], in[2], attr_float(n, "eps")));
  });
  t.add("instance_norm", [](const Node& n, const In& in) {
    return one(torch::instance_norm(in[0], in[1], in[2], {}, {}, /*use_input_stats=*/true, 0.1, attr_float(n, "eps"),
                                    /*cudnn_enabled=*/true));
  });
  t.add("batch_norm", [](const Node& n, const In& in) {
    return one(torch::batch_norm(in[0], in[1], in[2], {}, {}, /*training=*/true, 0.1, attr_float(n, "eps"),
                                 /*cudnn_enabled=*/true));
  });

  t.add("matmul", [](const Node&, const In& in) { return one(torch::matmul(in[0], in[1])); });
  t.add("bmm", [](const Node&, const In& in) { return one(torch::bmm(in[0], in[1])); });
  t.add("linear", [](const Node&, const In& in) { return one(torch::linear(in[0], in[1], in[2])); });
  t.add("conv2d", [](const Node& n, const In& in) {
    return one(torch::conv2d(in[0], in[1], in[2], attr_ints(n, "stride"), attr_ints(n, "padding"),
                             attr_ints(n, "dilation"), attr_int(n, "groups")));
  });

  t.add("max_pool2d", [](const Node& n, const In& in) {
    return one(torch::max_pool2d(in[0], attr_ints(n, "kernel_size"), attr_ints(n, "stride"), attr_ints(n, "padding"),
                                 attr_ints(n, "dilation"), attr_bool(n, "ceil_mode")));
  });
  t.add("avg_pool2d", [](const Node& n, const In& in) {
    const T& x = in[0];
    auto k = attr_ints(n, "kernel_size"), s = attr_ints(n, "stride"), p = attr_ints(n, "padding");
    bool ceil = attr_bool(n, "ceil_mode"), include_pad = attr_bool(n, "count_include_pad");
    if (attr_is_none(n, "divisor_override")) return one(torch::avg_pool2d(x, k, s, p, ceil, include_pad));
    return one(torch::avg_pool2d(x, k, s, p, ceil, include_pad, attr_int(n, "divisor_override")));
  });
  t.add("avg_pool1d", [](const Node& n, const In& in) {
    return one(torch::avg_pool1d(in[0], attr_ints(n, "kernel_size"), attr_ints(n, "stride"), attr_ints(n, "padding"),
                                 attr_bool(n, "ceil_mode"), attr_bool(n, "count_include_pad")));
  });

  pointwise_loss(t, "mse_loss", [](const Node& n, const T& x, const T& y) { return torch::mse_loss(x, y, reduction(n)); });
  pointwise_loss(t, "smooth_l1_loss", [](const Node& n, const T& x, const T& y) {
    return torch::smooth_l1_loss(x, y, reduction(n), attr_float(n, "beta"));
  });
  // kl_div is not broadcast by F.kl_div either; its elementwise formula broadcasts on its own.
  t.add("kl_div", [](const Node& n, const In& in) {
    const std::string& r = attr_str(n, "reduction");
    bool log_target = attr_bool(n, "log_target");
    std::vector<T> p = promoted(in[0], in[1]);
    if (r != "batchmean") return one(torch::kl_div(p[0], p[1], reduction(r), log_target));
    T sum = torch::kl_div(p[0], p[1], at::Reduction::Sum, log_target);
    return one(in[0].dim() == 0 ? sum : sum / in[0].size(0));
  });
  t.add("cross_entropy", [](const Node& n, const In& in) {
    std::vector<T> p = in[1].is_floating_point() ? promoted(in[0], in[1]) : std::vector<T>{in[0], in[1]};
    return one(torch::cross_entropy_loss(p[0], p[1], in[2], reduction(n), attr_int(n, "ignore_index"),
                                         attr_float(n, "label_smoothing")));
  });
}

}  // namespace kevo::eval
