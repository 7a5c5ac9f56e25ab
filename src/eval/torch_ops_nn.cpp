// LibTorch execution of op family 'nn': normalizations (dropout lowers to no node).
#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;

std::vector<T> one(T t) { return {std::move(t)}; }
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
}

}  // namespace kevo::eval
