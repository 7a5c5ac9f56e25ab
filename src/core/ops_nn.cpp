// Op family 'nn': normalizations, matmul/linear/conv2d, pooling and losses, with torch's shape rules.
#include <algorithm>

#include "core/op_families.h"

namespace kevo {

namespace {

Value out(int id) { return Value::of_tensor(id); }

std::string str(int64_t v) { return std::to_string(v); }

int float_tensor(const Lowering& L, const Args& a, const std::string& name) {
  int t = a.tensor(name);
  if (!is_floating(L.dtype(t))) a.fail(name, "must be a floating-point tensor, got " + dtype_name(L.dtype(t)));
  return t;
}

// A tensor operand that must share `like`'s dtype: these ops do not promote in torch.
int typed(const Lowering& L, const Args& a, const std::string& name, int like, bool optional = false) {
  int t = optional ? a.opt_tensor(name) : a.tensor(name);
  if (t >= 0 && L.dtype(t) != L.dtype(like))
    a.fail(name, "must have the input's dtype " + dtype_name(L.dtype(like)) + ", got " + dtype_name(L.dtype(t)));
  return t;
}

// An optional weight or bias of an exact shape (-1 when None).
int affine(const Lowering& L, const Args& a, const std::string& name, int like, const Shape& shape) {
  int t = typed(L, a, name, like, /*optional=*/true);
  if (t >= 0 && L.shape(t) != shape)
    a.fail(name, "must have shape " + shape_string(shape) + ", got " + shape_string(L.shape(t)));
  return t;
}

void require_rank(const Lowering& L, const Args& a, const std::string& name, int t, int64_t rank,
                  const std::string& what) {
  if (L.rank(t) != rank) a.fail(name, "must be " + what + ", got shape " + shape_string(L.shape(t)));
}

// Type-checks a flag torch accepts but that does not change the result (e.g. cudnn_enabled).
void ignored_flag(const Args& a, const std::string& name) {
  if (a.has(name)) a.boolean(name);
}

// An int or a tuple of `n` ints (a 1-tuple repeats), each at least `min`.
std::vector<int64_t> int_tuple(const Args& a, const std::string& name, size_t n, int64_t min) {
  std::vector<int64_t> v = a.ints(name);
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n)
    a.fail(name, "must be an int or a tuple of " + std::to_string(n) + " ints, got " + std::to_string(v.size()) +
                     " values");
  for (int64_t x : v)
    if (x < min) a.fail(name, (min > 0 ? "must be positive, got " : "must be non-negative, got ") + shape_string(v));
  return v;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i];
    if (f != 1 && f != to[to.size() - 1 - i]) return false;
  }
  return true;
}

// Binds the lowering of an op whose torch.nn.functional spelling checks more than its torch. one.
LowerFn spelled(Value (*lower)(Lowering&, const Args&, bool), bool is_functional) {
  return [lower, is_functional](Lowering& L, const Args& a) { return lower(L, a, is_functional); };
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// --- normalizations ------------------------------------------------------------------------

Value lower_layer_norm(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input");
  ignored_flag(a, "cudnn_enable");
  const Shape& xs = L.shape(x);
  // A bare int is the usual slip here (int_list would refuse it too): say how to write one dim.
  if (a.get("normalized_shape").kind == Value::Kind::Int)
    a.fail("normalized_shape",
           "must be a tuple or list of ints, got int (torch does not take a bare int here: write (n,))");
  Shape ns = a.int_list("normalized_shape");
  if (ns.empty()) a.fail("normalized_shape", "must have at least one dim");
  if (ns.size() > xs.size() || !std::equal(ns.begin(), ns.end(), xs.end() - ns.size()))
    a.fail("normalized_shape",
           "normalized_shape " + shape_string(ns) + " does not match the last dims of input " + shape_string(xs));
  int w = affine(L, a, "weight", x, ns), b = affine(L, a, "bias", x, ns);
  return out(L.emit1("layer_norm", {x, w, b}, {{"normalized_shape", ns}, {"eps", a.number("eps")}}, L.dtype(x), xs));
}

// `functional`: the torch.nn.functional spelling, whose Python wrapper adds a check ATen lacks.
Value lower_group_norm(Lowering& L, const Args& a, bool functional) {
  int x = float_tensor(L, a, "input");
  ignored_flag(a, "cudnn_enabled");
  const Shape& xs = L.shape(x);
  if (xs.size() < 2) a.fail("input", "must have shape [N, C, *], got " + shape_string(xs));
  int64_t groups = a.integer("num_groups");
  if (groups <= 0) a.fail("num_groups", "must be positive, got " + str(groups));
  if (xs[1] % groups != 0)
    a.fail("num_groups", "the " + str(xs[1]) + " channels of input " + shape_string(xs) +
                             " are not divisible by num_groups=" + str(groups));
  // F.group_norm's check, worded by torch in terms of its [N*C/G, G, *] view of the input.
  int64_t per_group = xs[0] * xs[1] / groups;
  for (size_t d = 2; d < xs.size(); ++d) per_group *= xs[d];
  if (functional && per_group == 1)
    L.fail("expected more than 1 value per channel when training, got input size " + shape_string(xs));
  int w = affine(L, a, "weight", x, {xs[1]}), b = affine(L, a, "bias", x, {xs[1]});
  return out(L.emit1("group_norm", {x, w, b}, {{"num_groups", groups}, {"eps", a.number("eps")}}, L.dtype(x), xs));
}

// batch_norm and instance_norm: always with statistics of the input itself (kevo models the
// training-mode module, whose running-statistics update would be a side effect).
Value lower_stats_norm(Lowering& L, const Args& a, bool functional, const std::string& op, const std::string& mode_flag,
                       const std::string& mode_message, bool over_batch) {
  int x = float_tensor(L, a, "input");
  for (const char* s : {"running_mean", "running_var"})
    if (!a.is_none(s))
      a.fail(s, "running statistics are not supported: the reference runs in training mode with batch statistics");
  if (!a.boolean(mode_flag)) a.fail(mode_flag, mode_message);
  a.number("momentum");
  ignored_flag(a, "cudnn_enabled");
  const Shape& xs = L.shape(x);
  if (xs.size() < 2) a.fail("input", "must have shape [N, C, *], got " + shape_string(xs));
  int64_t per_channel = over_batch ? xs[0] : 1;
  for (size_t d = 2; d < xs.size(); ++d) per_channel *= xs[d];
  if (functional && per_channel == 1)
    L.fail(std::string("expected more than 1 ") + (over_batch ? "value per channel" : "spatial element") +
           " when training, got input size " + shape_string(xs));
  int w = affine(L, a, "weight", x, {xs[1]}), b = affine(L, a, "bias", x, {xs[1]});
  return out(L.emit1(op, {x, w, b}, {{"eps", a.number("eps")}}, L.dtype(x), xs));
}

Value lower_batch_norm(Lowering& L, const Args& a, bool functional) {
  return lower_stats_norm(L, a, functional, "batch_norm", "training",
                          "must be True when running_mean and running_var are None (kevo runs batch norm in "
                          "training mode, with batch statistics)",
                          true);
}

Value lower_instance_norm(Lowering& L, const Args& a, bool functional) {
  return lower_stats_norm(L, a, functional, "instance_norm", "use_input_stats",
                          "must be True (kevo normalizes with the input's own statistics)", false);
}

// --- matrix products and convolution ---------------------------------------------------------

// torch.matmul's rules: 1-D operands gain a dim that is removed again, batch dims broadcast.
Shape matmul_shape(const Lowering& L, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty())
    L.fail("both arguments to matmul need to be at least 1-D, got shapes " + shape_string(a) + " and " +
           shape_string(b));
  int64_t ka = a.back(), kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  if (ka != kb)
    L.fail("shapes " + shape_string(a) + " and " + shape_string(b) + " cannot be multiplied (" + str(ka) +
           " != " + str(kb) + ")");
  Shape batch_a(a.begin(), a.end() - std::min<size_t>(a.size(), 2));
  Shape batch_b(b.begin(), b.end() - std::min<size_t>(b.size(), 2));
  Shape s = broadcast_shapes(L, batch_a, batch_b);
  if (a.size() >= 2) s.push_back(a[a.size() - 2]);
  if (b.size() >= 2) s.push_back(b.back());
  return s;
}

Value lower_matmul(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), y = typed(L, a, "other", x);
  return out(L.emit1("matmul", {x, y}, {}, L.dtype(x), matmul_shape(L, L.shape(x), L.shape(y))));
}

Value lower_mm(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), y = typed(L, a, "mat2", x);
  require_rank(L, a, "input", x, 2, "a matrix");
  require_rank(L, a, "mat2", y, 2, "a matrix");
  return out(L.emit1("matmul", {x, y}, {}, L.dtype(x), matmul_shape(L, L.shape(x), L.shape(y))));
}

Value lower_bmm(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), y = typed(L, a, "mat2", x);
  require_rank(L, a, "input", x, 3, "a 3-D batch of matrices");
  require_rank(L, a, "mat2", y, 3, "a 3-D batch of matrices");
  const Shape &xs = L.shape(x), &ys = L.shape(y);
  if (xs[0] != ys[0])
    L.fail("bmm batch sizes differ: " + shape_string(xs) + " and " + shape_string(ys) + " (bmm does not broadcast)");
  return out(L.emit1("bmm", {x, y}, {}, L.dtype(x), matmul_shape(L, xs, ys)));
}

Value lower_linear(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), w = typed(L, a, "weight", x), b = typed(L, a, "bias", x, true);
  const Shape &xs = L.shape(x), &ws = L.shape(w);
  if (xs.empty()) a.fail("input", "must have at least one dim, got a scalar");
  if (ws.size() != 1 && ws.size() != 2)
    a.fail("weight", "must be [out_features, in_features] (or 1-D [in_features]), got shape " + shape_string(ws));
  if (xs.back() != ws.back())
    L.fail("linear: input " + shape_string(xs) + " has " + str(xs.back()) + " features but weight " +
           shape_string(ws) + " expects " + str(ws.back()));
  Shape s(xs.begin(), xs.end() - 1);
  if (ws.size() == 2) s.push_back(ws[0]);
  if (b >= 0 && !broadcasts_to(L.shape(b), s))
    a.fail("bias", "shape " + shape_string(L.shape(b)) + " does not broadcast to the output shape " + shape_string(s));
  return out(L.emit1("linear", {x, w, b}, {}, L.dtype(x), s));
}

// padding: ints, 'valid', or 'same' (which torch allows only without stride).
std::vector<int64_t> conv_padding(const Args& a, const std::vector<int64_t>& stride,
                                  const std::vector<int64_t>& dilation, const Shape& ws) {
  const Value& p = a.get("padding");
  if (p.kind != Value::Kind::String) return int_tuple(a, "padding", 2, 0);
  if (p.s == "valid") return {0, 0};
  if (p.s != "same") a.fail("padding", "must be 'valid', 'same', an int or a tuple of 2 ints, got '" + p.s + "'");
  if (stride != std::vector<int64_t>{1, 1}) a.fail("padding", "padding='same' is not supported for strided convolutions");
  std::vector<int64_t> pad;
  for (size_t i = 0; i < 2; ++i) {
    int64_t total = dilation[i] * (ws[2 + i] - 1);
    // torch pads one extra row/column at the end here; the canonical node holds symmetric padding only.
    if (total % 2 != 0)
      a.fail("padding", "padding='same' with kernel size " + str(ws[2 + i]) + " and dilation " + str(dilation[i]) +
                            " needs uneven padding, which kevo does not support: use an odd kernel or explicit padding");
    pad.push_back(total / 2);
  }
  return pad;
}

Value lower_conv2d(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), w = typed(L, a, "weight", x), b = typed(L, a, "bias", x, true);
  const Shape &xs = L.shape(x), &ws = L.shape(w);
  if (ws.size() != 4 || ws[2] < 1 || ws[3] < 1)
    a.fail("weight", "must be 4-D [out_channels, in_channels/groups, kH, kW] with a non-empty kernel, got shape " +
                         shape_string(ws));
  if (xs.size() != 3 && xs.size() != 4)
    a.fail("input", "must be 4-D [N, C, H, W] (or 3-D unbatched [C, H, W]), got shape " + shape_string(xs));
  int64_t groups = a.integer("groups");
  if (groups <= 0) a.fail("groups", "must be positive, got " + str(groups));
  size_t c = xs.size() - 3;
  if (ws[0] % groups != 0)
    a.fail("weight", "out_channels " + str(ws[0]) + " of weight " + shape_string(ws) +
                         " are not divisible by groups=" + str(groups));
  if (xs[c] != ws[1] * groups)
    a.fail("input", "has " + str(xs[c]) + " channels (shape " + shape_string(xs) + ") but weight " +
                        shape_string(ws) + " with groups=" + str(groups) + " expects " + str(ws[1] * groups));
  if (b >= 0 && L.shape(b) != Shape{ws[0]})
    a.fail("bias", "must have shape [" + str(ws[0]) + "], got " + shape_string(L.shape(b)));
  std::vector<int64_t> stride = int_tuple(a, "stride", 2, 1), dilation = int_tuple(a, "dilation", 2, 1);
  std::vector<int64_t> padding = conv_padding(a, stride, dilation, ws);
  Shape s(xs.begin(), xs.begin() + c);
  s.push_back(ws[0]);
  for (size_t i = 0; i < 2; ++i) {
    int64_t padded = xs[c + 1 + i] + 2 * padding[i], span = dilation[i] * (ws[2 + i] - 1) + 1;
    if (padded < span)
      L.fail("conv2d: input " + shape_string(xs) + " with padding " + shape_string(padding) +
             " is smaller than the (dilated) kernel " + shape_string({ws[2], ws[3]}));
    s.push_back((padded - span) / stride[i] + 1);
  }
  return out(L.emit1("conv2d", {x, w, b},
                     {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}},
                     L.dtype(x), s));
}

// --- pooling ---------------------------------------------------------------------------------

// torch's pooling_output_shape: with ceil_mode the last window must start inside the input or
// the left padding.
int64_t pool_output(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil) {
  int64_t o = floor_div(in + 2 * pad - dilation * (k - 1) - 1 + (ceil ? stride - 1 : 0), stride) + 1;
  if (ceil && (o - 1) * stride >= in + pad) --o;
  return o;
}

// Pooling over the last `nd` dims; `attrs` brings the op's own attributes.
Value lower_pool(Lowering& L, const Args& a, const std::string& op, size_t nd, std::map<std::string, AttrValue> attrs) {
  int x = float_tensor(L, a, "input");
  const Shape& xs = L.shape(x);
  if (xs.size() != nd + 1 && xs.size() != nd + 2)
    a.fail("input", "must be " + std::to_string(nd + 1) + "-D or " + std::to_string(nd + 2) +
                        "-D (batched), got shape " + shape_string(xs));
  std::vector<int64_t> kernel = int_tuple(a, "kernel_size", nd, 1);
  bool default_stride = a.is_none("stride") || a.ints("stride").empty();
  std::vector<int64_t> stride = default_stride ? kernel : int_tuple(a, "stride", nd, 1);
  std::vector<int64_t> padding = int_tuple(a, "padding", nd, 0);
  std::vector<int64_t> dilation = a.has("dilation") ? int_tuple(a, "dilation", nd, 1) : std::vector<int64_t>(nd, 1);
  bool ceil = a.boolean("ceil_mode");
  // torch checks the undilated kernel here (pool2d_shape_check), also where dilation is given.
  for (size_t i = 0; i < nd; ++i)
    if (padding[i] > kernel[i] / 2)
      a.fail("padding", "must be at most half the kernel size " + shape_string(kernel) + ", got " + shape_string(padding));
  Shape s(xs.begin(), xs.end() - nd), spatial;
  for (size_t i = 0; i < nd; ++i)
    spatial.push_back(pool_output(xs[xs.size() - nd + i], kernel[i], padding[i], stride[i], dilation[i], ceil));
  for (int64_t o : spatial)
    if (o < 1)
      L.fail(op + ": input " + shape_string(xs) + " is too small for kernel " + shape_string(kernel) +
             " (output size would be " + shape_string(spatial) + ")");
  s.insert(s.end(), spatial.begin(), spatial.end());
  attrs["kernel_size"] = kernel;
  attrs["stride"] = stride;
  attrs["padding"] = padding;
  attrs["ceil_mode"] = ceil;
  if (a.has("dilation")) attrs["dilation"] = dilation;
  return out(L.emit1(op, {x}, std::move(attrs), L.dtype(x), s));
}

Value lower_max_pool2d(Lowering& L, const Args& a) {
  if (a.has("return_indices") && a.boolean("return_indices"))
    a.fail("return_indices", "return_indices=True is not supported");
  return lower_pool(L, a, "max_pool2d", 2, {});
}

Value lower_avg_pool2d(Lowering& L, const Args& a) {
  AttrValue divisor;
  if (auto d = a.opt_integer("divisor_override")) {
    if (*d == 0) a.fail("divisor_override", "must not be zero");
    divisor = *d;
  }
  return lower_pool(L, a, "avg_pool2d", 2,
                    {{"count_include_pad", a.boolean("count_include_pad")}, {"divisor_override", divisor}});
}

Value lower_avg_pool1d(Lowering& L, const Args& a) {
  return lower_pool(L, a, "avg_pool1d", 1, {{"count_include_pad", a.boolean("count_include_pad")}});
}

// --- losses ----------------------------------------------------------------------------------

std::string reduction_arg(const Args& a, bool batchmean) {
  for (const char* legacy : {"size_average", "reduce"})
    if (!a.is_none(legacy)) a.fail(legacy, "is deprecated and not supported: use reduction=");
  std::string r = a.str("reduction");
  if (r == "mean" || r == "sum" || r == "none" || (batchmean && r == "batchmean")) return r;
  std::string allowed = batchmean ? "'mean', 'sum', 'none' or 'batchmean'" : "'mean', 'sum' or 'none'";
  a.fail("reduction", "must be " + allowed + ", got '" + r + "'");
}

// Losses of input and target elementwise (broadcast and type-promoted as torch does), then reduced.
Value lower_pointwise_loss(Lowering& L, const Args& a, const std::string& op, std::map<std::string, AttrValue> attrs,
                           bool batchmean = false) {
  int x = a.tensor("input"), y = a.tensor("target");
  DType dtype = promote_types(L.dtype(x), L.dtype(y));
  if (!is_floating(dtype))
    L.fail(op + " needs a floating-point input or target, got " + dtype_name(L.dtype(x)) + " and " +
           dtype_name(L.dtype(y)));
  std::string r = reduction_arg(a, batchmean);
  Shape s = broadcast_shapes(L, L.shape(x), L.shape(y));
  attrs["reduction"] = r;
  return out(L.emit1(op, {x, y}, std::move(attrs), dtype, r == "none" ? s : Shape{}));
}

Value lower_smooth_l1_loss(Lowering& L, const Args& a) {
  double beta = a.number("beta");
  if (beta < 0) a.fail("beta", "must be non-negative, got " + std::to_string(beta));
  return lower_pointwise_loss(L, a, "smooth_l1_loss", {{"beta", beta}});
}

// The target holds class indices (int64, input's shape without the class dim) or, when it has
// the input's shape, class probabilities: torch decides by shape alone.
Value lower_cross_entropy(Lowering& L, const Args& a) {
  int x = float_tensor(L, a, "input"), t = a.tensor("target");
  std::string r = reduction_arg(a, false);
  const Shape &xs = L.shape(x), &ts = L.shape(t);
  if (xs.empty()) a.fail("input", "must have shape [C], [N, C] or [N, C, d1, ...], got a scalar");
  size_t cdim = xs.size() == 1 ? 0 : 1;
  Shape rest = xs;
  rest.erase(rest.begin() + cdim);
  int64_t ignore_index = a.integer("ignore_index");
  double smoothing = a.number("label_smoothing");
  if (smoothing < 0.0 || smoothing > 1.0)
    a.fail("label_smoothing", "must be between 0.0 and 1.0, got " + std::to_string(smoothing));
  DType dtype = L.dtype(x);
  if (ts == xs) {
    if (!is_floating(L.dtype(t)))
      a.fail("target", "has the input's shape, so it holds class probabilities and must be floating-point, got " +
                           dtype_name(L.dtype(t)));
    dtype = promote_types(dtype, L.dtype(t));
    if (ignore_index >= 0) a.fail("ignore_index", "is not supported with class-probability targets");
  } else {
    if (L.dtype(t) != DType::Int64)
      a.fail("target", "must be int64 class indices of shape " + shape_string(rest) +
                           " or class probabilities of shape " + shape_string(xs) + ", got " + dtype_name(L.dtype(t)) +
                           shape_string(ts));
    if (ts != rest)
      a.fail("target", "shape " + shape_string(ts) + " does not match input " + shape_string(xs) +
                           ": class indices need shape " + shape_string(rest));
  }
  int w = affine(L, a, "weight", x, {xs[cdim]});
  return out(L.emit1("cross_entropy", {x, t, w},
                     {{"ignore_index", ignore_index}, {"reduction", r}, {"label_smoothing", smoothing}}, dtype,
                     r == "none" ? rest : Shape{}));
}

}  // namespace

void register_nn_ops(OpTable& t) {
  const std::string F = "torch.nn.functional.";
  t.add({F + "layer_norm"}, "input, normalized_shape, weight=None, bias=None, eps=1e-05", lower_layer_norm);
  t.add({"torch.layer_norm"}, "input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True",
        lower_layer_norm);
  t.add({F + "group_norm"}, "input, num_groups, weight=None, bias=None, eps=1e-05", spelled(lower_group_norm, true));
  t.add({"torch.group_norm"}, "input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True",
        spelled(lower_group_norm, false));
  t.add({F + "instance_norm"},
        "input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, "
        "eps=1e-05",
        spelled(lower_instance_norm, true));
  t.add({"torch.instance_norm"},
        "input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled",
        spelled(lower_instance_norm, false));
  t.add({F + "batch_norm"},
        "input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05",
        spelled(lower_batch_norm, true));
  t.add({"torch.batch_norm"}, "input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled",
        spelled(lower_batch_norm, false));

  t.add({"torch.matmul", "Tensor.matmul"}, "input, other", lower_matmul);
  t.add({"torch.mm", "Tensor.mm"}, "input, mat2", lower_mm);
  t.add({"torch.bmm", "Tensor.bmm"}, "input, mat2", lower_bmm);
  t.add({F + "linear"}, "input, weight, bias=None", lower_linear);
  t.add({F + "conv2d", "torch.conv2d"}, "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1",
        lower_conv2d);

  t.add({F + "max_pool2d"},
        "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False",
        lower_max_pool2d);
  t.add({"torch.max_pool2d"}, "input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False", lower_max_pool2d);
  t.add({F + "avg_pool2d"},
        "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None",
        lower_avg_pool2d);
  t.add({F + "avg_pool1d", "torch.avg_pool1d"},
        "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True", lower_avg_pool1d);

  const std::string legacy = "input, target, size_average=None, reduce=None, reduction='mean'";
  t.add({F + "mse_loss"}, legacy, [](Lowering& L, const Args& a) { return lower_pointwise_loss(L, a, "mse_loss", {}); });
  t.add({F + "smooth_l1_loss"}, legacy + ", beta=1.0", lower_smooth_l1_loss);
  t.add({F + "kl_div"}, legacy + ", log_target=False", [](Lowering& L, const Args& a) {
    return lower_pointwise_loss(L, a, "kl_div", {{"log_target", a.boolean("log_target")}}, /*batchmean=*/true);
  });
  t.add({F + "cross_entropy"},
        "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', "
        "label_smoothing=0.0",
        lower_cross_entropy);
}

}  // namespace kevo
