// LibTorch execution of op family 'reduction': reductions, max/min with indices, softmax, scans.
#include <algorithm>
#include <functional>

#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;

// An op reducing over the node's `dim` list with its `keepdim`.
void reduction(TorchOpTable& t, const std::string& op, T (*fn)(const Node&, const T&, at::IntArrayRef, bool)) {
  t.add(op, [fn](const Node& n, const In& in) {
    return std::vector<T>{fn(n, in[0], attr_ints(n, "dim"), attr_bool(n, "keepdim"))};
  });
}

// An op along the node's single `dim`.
void along_dim(TorchOpTable& t, const std::string& op, T (*fn)(const T&, int64_t)) {
  t.add(op, [fn](const Node& n, const In& in) { return std::vector<T>{fn(in[0], attr_int(n, "dim"))}; });
}

// torch.prod reduces one dim at a time; the highest dim first keeps the lower indices valid.
T prod(const T& x, at::IntArrayRef dims, bool keepdim) {
  if (dims.empty()) return torch::prod(x);
  std::vector<int64_t> order(dims.begin(), dims.end());
  std::sort(order.rbegin(), order.rend());
  T r = x;
  for (int64_t d : order) r = torch::prod(r, d, keepdim);
  return r;
}

T arg_extremum(const Node& n, const T& x, T (*fn)(const T&, int64_t, bool), T (*flat)(const T&)) {
  bool keepdim = attr_bool(n, "keepdim");
  if (!attr_is_none(n, "dim")) return fn(x, attr_int(n, "dim"), keepdim);
  T r = flat(x);
  return keepdim ? r.reshape(std::vector<int64_t>(static_cast<size_t>(x.dim()), 1)) : r;
}

template <typename Fn>
void with_indices(TorchOpTable& t, const std::string& op, Fn fn) {
  t.add(op, [fn](const Node& n, const In& in) {
    auto r = fn(in[0], attr_int(n, "dim"), attr_bool(n, "keepdim"));
    return std::vector<T>{std::get<0>(r), std::get<1>(r)};
  });
}
}  // namespace

void register_torch_reduction_ops(TorchOpTable& t) {
  reduction(t, "sum", [](const Node&, const T& x, at::IntArrayRef d, bool k) { return torch::sum(x, d, k); });
  reduction(t, "mean", [](const Node&, const T& x, at::IntArrayRef d, bool k) { return torch::mean(x, d, k); });
  reduction(t, "prod", [](const Node&, const T& x, at::IntArrayRef d, bool k) { return prod(x, d, k); });
  reduction(t, "amax", [](const Node&, const T& x, at::IntArrayRef d, bool k) { return torch::amax(x, d, k); });
  reduction(t, "amin", [](const Node&, const T& x, at::IntArrayRef d, bool k) { return torch::amin(x, d, k); });
  reduction(t, "logsumexp",
            [](const Node&, const T& x, at::IntArrayRef d, bool k) { return torch::logsumexp(x, d, k); });
  reduction(t, "norm", [](const Node& n, const T& x, at::IntArrayRef d, bool k) {
    return at::linalg_vector_norm(x, attr_scalar(n, "p"), d, k);
  });

  t.add("argmax", [](const Node& n, const In& in) {
    return std::vector<T>{arg_extremum(n, in[0], [](const T& x, int64_t d, bool k) { return torch::argmax(x, d, k); },
                                       [](const T& x) { return torch::argmax(x); })};
  });
  t.add("argmin", [](const Node& n, const In& in) {
    return std::vector<T>{arg_extremum(n, in[0], [](const T& x, int64_t d, bool k) { return torch::argmin(x, d, k); },
                                       [](const T& x) { return torch::argmin(x); })};
  });
  with_indices(t, "max_dim", [](const T& x, int64_t d, bool k) { return torch::max(x, d, k); });
  with_indices(t, "min_dim", [](const T& x, int64_t d, bool k) { return torch::min(x, d, k); });

  along_dim(t, "softmax", [](const T& x, int64_t d) { return torch::softmax(x, d); });
  along_dim(t, "log_softmax", [](const T& x, int64_t d) { return torch::log_softmax(x, d); });
  along_dim(t, "cumsum", [](const T& x, int64_t d) { return torch::cumsum(x, d); });
  along_dim(t, "cumprod", [](const T& x, int64_t d) { return torch::cumprod(x, d); });
}

}  // namespace kevo::eval
