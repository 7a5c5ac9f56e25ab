// LibTorch execution of op family 'pool': max, average and adaptive pooling, 1-D to 3-D.
#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;
using Ints = std::vector<int64_t>;

// The window of a max or average pool: kernel, stride, padding (dilation: max pools only).
struct Window {
  Ints k, s, p, d;
  bool ceil;
};

Window window(const Node& n) {
  Window w{attr_ints(n, "kernel_size"), attr_ints(n, "stride"), attr_ints(n, "padding"), {}, attr_bool(n, "ceil_mode")};
  if (!attr_is_none(n, "dilation")) w.d = attr_ints(n, "dilation");
  return w;
}

std::vector<T> pair(const std::tuple<T, T>& r) { return {std::get<0>(r), std::get<1>(r)}; }

// Branches instead of passing an optional divisor, whose spelling differs between LibTorch versions.
T avg_pool(const Node& n, const T& x, size_t nd) {
  Window w = window(n);
  bool include_pad = attr_bool(n, "count_include_pad");
  if (nd == 1) return torch::avg_pool1d(x, w.k, w.s, w.p, w.ceil, include_pad);
  bool divisor = !attr_is_none(n, "divisor_override");
  if (nd == 2) {
    if (!divisor) return torch::avg_pool2d(x, w.k, w.s, w.p, w.ceil, include_pad);
    return torch::avg_pool2d(x, w.k, w.s, w.p, w.ceil, include_pad, attr_int(n, "divisor_override"));
  }
  if (!divisor) return torch::avg_pool3d(x, w.k, w.s, w.p, w.ceil, include_pad);
  return torch::avg_pool3d(x, w.k, w.s, w.p, w.ceil, include_pad, attr_int(n, "divisor_override"));
}
}  // namespace

void register_torch_pool_ops(TorchOpTable& t) {
  t.add("max_pool1d", [](const Node& n, const In& in) {
    Window w = window(n);
    return std::vector<T>{torch::max_pool1d(in[0], w.k, w.s, w.p, w.d, w.ceil)};
  });
  t.add("max_pool2d", [](const Node& n, const In& in) {
    Window w = window(n);
    return std::vector<T>{torch::max_pool2d(in[0], w.k, w.s, w.p, w.d, w.ceil)};
  });
  t.add("max_pool3d", [](const Node& n, const In& in) {
    Window w = window(n);
    return std::vector<T>{torch::max_pool3d(in[0], w.k, w.s, w.p, w.d, w.ceil)};
  });
  t.add("max_pool1d_with_indices", [](const Node& n, const In& in) {
    Window w = window(n);
    return pair(torch::max_pool1d_with_indices(in[0], w.k, w.s, w.p, w.d, w.ceil));
  });
  t.add("max_pool2d_with_indices", [](const Node& n, const In& in) {
    Window w = window(n);
    return pair(torch::max_pool2d_with_indices(in[0], w.k, w.s, w.p, w.d, w.ceil));
  });
  t.add("max_pool3d_with_indices", [](const Node& n, const In& in) {
    Window w = window(n);
    return pair(torch::max_pool3d_with_indices(in[0], w.k, w.s, w.p, w.d, w.ceil));
  });
  for (size_t nd = 1; nd <= 3; ++nd)
    t.add("avg_pool" + std::to_string(nd) + "d",
          [nd](const Node& n, const In& in) { return std::vector<T>{avg_pool(n, in[0], nd)}; });

  t.add("adaptive_avg_pool1d", [](const Node& n, const In& in) {
    return std::vector<T>{torch::adaptive_avg_pool1d(in[0], attr_ints(n, "output_size"))};
  });
  t.add("adaptive_avg_pool2d", [](const Node& n, const In& in) {
    return std::vector<T>{torch::adaptive_avg_pool2d(in[0], attr_ints(n, "output_size"))};
  });
  t.add("adaptive_avg_pool3d", [](const Node& n, const In& in) {
    return std::vector<T>{torch::adaptive_avg_pool3d(in[0], attr_ints(n, "output_size"))};
  });
  // ATen's adaptive max pools always return the indices too.
  using MaxFn = std::tuple<T, T> (*)(const T&, at::IntArrayRef);
  const std::pair<const char*, MaxFn> adaptive_max[] = {
      {"adaptive_max_pool1d", [](const T& x, at::IntArrayRef s) { return torch::adaptive_max_pool1d(x, s); }},
      {"adaptive_max_pool2d", [](const T& x, at::IntArrayRef s) { return torch::adaptive_max_pool2d(x, s); }},
      {"adaptive_max_pool3d", [](const T& x, at::IntArrayRef s) { return torch::adaptive_max_pool3d(x, s); }}};
  for (const auto& [op, fn] : adaptive_max) {
    t.add(op, [fn = fn](const Node& n, const In& in) {
      return std::vector<T>{std::get<0>(fn(in[0], attr_ints(n, "output_size")))};
    });
    t.add(std::string(op) + "_with_indices",
          [fn = fn](const Node& n, const In& in) { return pair(fn(in[0], attr_ints(n, "output_size"))); });
  }
}

}  // namespace kevo::eval
