// LibTorch execution of op family 'matmul': matmul, bmm, linear, einsum, attention.
#include <torch/version.h>

#include <cmath>

#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;

std::vector<T> one(T t) { return {std::move(t)}; }

// LibTorch 2.1 has torch's own scaled_dot_product_attention (with a scale argument).
#define KEVO_HAS_SDPA (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1))

#if !KEVO_HAS_SDPA
// softmax(q k^T * scale + mask) v, as torch's math path computes it; float16 and bfloat16 in
// float32, rounded once at the end, as the fused kernels do.
T attention_math(const T& q, const T& k, const T& v, const T& mask, bool causal, double scale) {
  bool reduced = q.scalar_type() == torch::kHalf || q.scalar_type() == torch::kBFloat16;
  auto wide = [&](const T& t) { return reduced && t.defined() && t.is_floating_point() ? t.to(torch::kFloat32) : t; };
  T scores = torch::matmul(wide(q), wide(k).transpose(-2, -1)) * scale;
  int64_t Lq = q.size(-2), S = k.size(-2);
  if (causal) {
    T keep = torch::ones({Lq, S}, q.options().dtype(torch::kBool)).tril();
    scores = scores.masked_fill(keep.logical_not(), -INFINITY);
  }
  if (mask.defined()) {
    scores =
        mask.scalar_type() == torch::kBool ? scores.masked_fill(mask.logical_not(), -INFINITY) : scores + wide(mask);
  }
  return torch::matmul(torch::softmax(scores, -1), wide(v)).to(q.scalar_type());
}
#endif

T attention(const Node& n, const In& in) {
  const T &q = in[0], &k = in[1], &v = in[2], &mask = in[3];
  bool causal = attr_bool(n, "is_causal");
  double scale = attr_is_none(n, "scale") ? 1.0 / std::sqrt(static_cast<double>(q.size(-1))) : attr_float(n, "scale");
#if KEVO_HAS_SDPA
  // What Python's eager F.scaled_dot_product_attention runs (fused kernels on the GPU): the
  // oracle's baseline must be the one users would measure.
  if (mask.defined()) return at::scaled_dot_product_attention(q, k, v, mask, 0.0, causal, scale);
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal, scale);
#else
  return attention_math(q, k, v, mask, causal, scale);
#endif
}
}  // namespace

void register_torch_matmul_ops(TorchOpTable& t) {
  t.add("matmul", [](const Node&, const In& in) { return one(torch::matmul(in[0], in[1])); });
  t.add("bmm", [](const Node&, const In& in) { return one(torch::bmm(in[0], in[1])); });
  t.add("linear", [](const Node&, const In& in) { return one(torch::linear(in[0], in[1], in[2])); });
  t.add("einsum", [](const Node& n, const In& in) { return one(torch::einsum(attr_str(n, "equation"), in)); });
  t.add("scaled_dot_product_attention", [](const Node& n, const In& in) { return one(attention(n, in)); });
}

}  // namespace kevo::eval
