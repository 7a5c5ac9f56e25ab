// LibTorch execution of op family 'loss': losses and the distances they are built on.
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

// The operands in their promoted dtype: LibTorch versions differ in whether the loss kernels
// promote by themselves.
std::vector<T> promoted(const In& in) {
  torch::ScalarType common = in[0].scalar_type();
  for (const T& t : in)
    if (t.defined()) common = torch::promote_types(common, t.scalar_type());
  std::vector<T> out;
  for (const T& t : in) out.push_back(t.defined() ? t.to(common) : t);
  return out;
}

// Pointwise losses broadcast input and target first, as torch.nn.functional does.
void pointwise_loss(TorchOpTable& t, const std::string& op, T (*fn)(const Node&, const T&, const T&)) {
  t.add(op, [fn](const Node& n, const In& in) {
    std::vector<T> b = torch::broadcast_tensors(promoted({in[0], in[1]}));
    return one(fn(n, b[0], b[1]));
  });
}
}  // namespace

void register_torch_loss_ops(TorchOpTable& t) {
  pointwise_loss(t, "mse_loss",
                 [](const Node& n, const T& x, const T& y) { return torch::mse_loss(x, y, reduction(n)); });
  pointwise_loss(t, "l1_loss",
                 [](const Node& n, const T& x, const T& y) { return torch::l1_loss(x, y, reduction(n)); });
  pointwise_loss(t, "soft_margin_loss",
                 [](const Node& n, const T& x, const T& y) { return torch::soft_margin_loss(x, y, reduction(n)); });
  pointwise_loss(t, "smooth_l1_loss", [](const Node& n, const T& x, const T& y) {
    return torch::smooth_l1_loss(x, y, reduction(n), attr_float(n, "beta"));
  });
  pointwise_loss(t, "huber_loss", [](const Node& n, const T& x, const T& y) {
    return torch::huber_loss(x, y, reduction(n), attr_float(n, "delta"));
  });
  pointwise_loss(t, "hinge_embedding_loss", [](const Node& n, const T& x, const T& y) {
    return torch::hinge_embedding_loss(x, y, attr_float(n, "margin"), reduction(n));
  });
  // kl_div is not broadcast by F.kl_div either; its elementwise formula broadcasts on its own.
  t.add("kl_div", [](const Node& n, const In& in) {
    const std::string& r = attr_str(n, "reduction");
    bool log_target = attr_bool(n, "log_target");
    std::vector<T> p = promoted({in[0], in[1]});
    if (r != "batchmean") return one(torch::kl_div(p[0], p[1], reduction(r), log_target));
    T sum = torch::kl_div(p[0], p[1], at::Reduction::Sum, log_target);
    return one(in[0].dim() == 0 ? sum : sum / in[0].size(0));
  });
  t.add("cross_entropy", [](const Node& n, const In& in) {
    std::vector<T> p = in[1].is_floating_point() ? promoted({in[0], in[1]}) : std::vector<T>{in[0], in[1]};
    return one(torch::cross_entropy_loss(p[0], p[1], in[2], reduction(n), attr_int(n, "ignore_index"),
                                         attr_float(n, "label_smoothing")));
  });
  t.add("nll_loss", [](const Node& n, const In& in) {
    return one(torch::nll_loss_nd(in[0], in[1], in[2], reduction(n), attr_int(n, "ignore_index")));
  });
  // F.binary_cross_entropy expands the weight to the input's shape before ATen sees it.
  t.add("binary_cross_entropy", [](const Node& n, const In& in) {
    T w = in[2].defined() ? in[2].expand_as(in[0]) : in[2];
    return one(torch::binary_cross_entropy(in[0], in[1], w, reduction(n)));
  });
  t.add("binary_cross_entropy_with_logits", [](const Node& n, const In& in) {
    return one(torch::binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3], reduction(n)));
  });
  t.add("margin_ranking_loss", [](const Node& n, const In& in) {
    std::vector<T> p = promoted(in);
    return one(torch::margin_ranking_loss(p[0], p[1], p[2], attr_float(n, "margin"), reduction(n)));
  });
  t.add("cosine_embedding_loss", [](const Node& n, const In& in) {
    std::vector<T> p = promoted(in);
    return one(torch::cosine_embedding_loss(p[0], p[1], p[2], attr_float(n, "margin"), reduction(n)));
  });
  t.add("triplet_margin_loss", [](const Node& n, const In& in) {
    return one(torch::triplet_margin_loss(in[0], in[1], in[2], attr_float(n, "margin"), attr_float(n, "p"),
                                          attr_float(n, "eps"), attr_bool(n, "swap"), reduction(n)));
  });
  t.add("pairwise_distance", [](const Node& n, const In& in) {
    return one(
        torch::pairwise_distance(in[0], in[1], attr_float(n, "p"), attr_float(n, "eps"), attr_bool(n, "keepdim")));
  });
  t.add("cosine_similarity", [](const Node& n, const In& in) {
    return one(torch::cosine_similarity(in[0], in[1], attr_int(n, "dim"), attr_float(n, "eps")));
  });
}

}  // namespace kevo::eval
