// Op family 'pool': max and average pooling in 1-D, 2-D and 3-D, and adaptive pooling, with
// torch's output-size rules.
#include <string>
#include <vector>

#include "core/nn_args.h"
#include "core/op_families.h"

namespace kevo {

namespace {

using namespace nn;  // the shared argument checks of nn_args.h

// torch's pooling_output_shape: with ceil_mode the last window must start inside the input or
// the left padding.
int64_t pool_output(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil) {
  int64_t o = floor_div(in + 2 * pad - dilation * (k - 1) - 1 + (ceil ? stride - 1 : 0), stride) + 1;
  if (ceil && (o - 1) * stride >= in + pad) --o;
  return o;
}

int pooled_input(const Lowering& L, const Args& a, size_t nd) {
  int x = float_tensor(L, a, "input");
  const Shape& xs = L.shape(x);
  if (xs.size() != nd + 1 && xs.size() != nd + 2)
    a.fail("input", "must be " + std::to_string(nd + 1) + "-D or " + std::to_string(nd + 2) +
                        "-D (batched), got shape " + shape_string(xs));
  return x;
}

// The output shape of pooling over the last `nd` dims; adds the window's attributes to `attrs`.
Shape pool_shape(Lowering& L, const Args& a, const std::string& op, int x, size_t nd,
                 std::map<std::string, AttrValue>& attrs) {
  const Shape& xs = L.shape(x);
  std::vector<int64_t> kernel = int_tuple(a, "kernel_size", nd, 1);
  bool default_stride = a.is_none("stride") || a.ints("stride").empty();
  std::vector<int64_t> stride = default_stride ? kernel : int_tuple(a, "stride", nd, 1);
  std::vector<int64_t> padding = int_tuple(a, "padding", nd, 0);
  std::vector<int64_t> dilation = a.has("dilation") ? int_tuple(a, "dilation", nd, 1) : std::vector<int64_t>(nd, 1);
  bool ceil = a.boolean("ceil_mode");
  // torch checks the undilated kernel here (pool2d_shape_check), also where dilation is given.
  for (size_t i = 0; i < nd; ++i)
    if (padding[i] > kernel[i] / 2)
      a.fail("padding",
             "must be at most half the kernel size " + shape_string(kernel) + ", got " + shape_string(padding));
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
  return s;
}

// Values, and with return_indices=True also each maximum's flat index in its input plane (int64).
Value lower_max_pool(Lowering& L, const Args& a, size_t nd) {
  const std::string op = "max_pool" + str(static_cast<int64_t>(nd)) + "d";
  int x = pooled_input(L, a, nd);
  std::map<std::string, AttrValue> attrs;
  Shape s = pool_shape(L, a, op, x, nd, attrs);
  if (!(a.has("return_indices") && a.boolean("return_indices"))) return out(L.emit1(op, {x}, attrs, L.dtype(x), s));
  return Value::of_tensors(L.emit(op + "_with_indices", {x}, attrs, {{L.dtype(x), s}, {DType::Int64, s}}));
}

Value lower_avg_pool(Lowering& L, const Args& a, size_t nd) {
  const std::string op = "avg_pool" + str(static_cast<int64_t>(nd)) + "d";
  int x = pooled_input(L, a, nd);
  std::map<std::string, AttrValue> attrs = {{"count_include_pad", a.boolean("count_include_pad")}};
  if (a.has("divisor_override")) {  // avg_pool1d has none
    AttrValue divisor;
    if (auto d = a.opt_integer("divisor_override")) {
      if (*d == 0) a.fail("divisor_override", "must not be zero");
      divisor = *d;
    }
    attrs["divisor_override"] = divisor;
  }
  Shape s = pool_shape(L, a, op, x, nd, attrs);
  return out(L.emit1(op, {x}, std::move(attrs), L.dtype(x), s));
}

// Adaptive pooling: output_size is an int or a tuple whose None entries keep the input's size;
// windows are [floor(i * in / out), ceil((i + 1) * in / out)).
Value lower_adaptive_pool(Lowering& L, const Args& a, const std::string& kind, size_t nd) {
  const std::string op = "adaptive_" + kind + "_pool" + str(static_cast<int64_t>(nd)) + "d";
  int x = pooled_input(L, a, nd);
  const Shape& xs = L.shape(x);
  const Value& v = a.get("output_size");
  std::vector<Value> items = v.kind == Value::Kind::Tuple ? v.items : std::vector<Value>(nd, v);
  if (items.size() == 1) items.assign(nd, items[0]);
  if (items.size() != nd)
    a.fail("output_size", "must be an int or a tuple of " + std::to_string(nd) + " ints (or None), got " +
                              std::to_string(items.size()) + " values");
  Shape size;
  for (size_t i = 0; i < nd; ++i) {
    const Value& item = items[i];
    int64_t in = xs[xs.size() - nd + i];
    if (item.kind == Value::Kind::None)
      size.push_back(in);
    else if (item.kind == Value::Kind::Int && item.i > 0)
      size.push_back(item.i);
    else
      a.fail("output_size", "must hold positive ints or None, got " +
                                (item.kind == Value::Kind::Int ? str(item.i) : item.type_name()));
  }
  for (size_t i = 0; i < nd; ++i)
    if (xs[xs.size() - nd + i] < 1) a.fail("input", "has an empty spatial dim: " + shape_string(xs));
  Shape s(xs.begin(), xs.end() - nd);
  s.insert(s.end(), size.begin(), size.end());
  std::map<std::string, AttrValue> attrs = {{"output_size", size}};
  if (!(a.has("return_indices") && a.boolean("return_indices"))) return out(L.emit1(op, {x}, attrs, L.dtype(x), s));
  return Value::of_tensors(L.emit(op + "_with_indices", {x}, attrs, {{L.dtype(x), s}, {DType::Int64, s}}));
}

LowerFn max_pool(size_t nd) {
  return [nd](Lowering& L, const Args& a) { return lower_max_pool(L, a, nd); };
}
LowerFn avg_pool(size_t nd) {
  return [nd](Lowering& L, const Args& a) { return lower_avg_pool(L, a, nd); };
}
LowerFn adaptive_pool(const std::string& kind, size_t nd) {
  return [kind, nd](Lowering& L, const Args& a) { return lower_adaptive_pool(L, a, kind, nd); };
}

}  // namespace

void register_pool_ops(OpTable& t) {
  const std::string F = "torch.nn.functional.";
  for (size_t nd = 1; nd <= 3; ++nd) {
    const std::string d = std::to_string(nd) + "d";
    t.add({F + "max_pool" + d},
          "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False",
          max_pool(nd));
    t.add({"torch.max_pool" + d}, "input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False",
          max_pool(nd));
    t.add({F + "adaptive_avg_pool" + d}, "input, output_size", adaptive_pool("avg", nd));
    t.add({F + "adaptive_max_pool" + d}, "input, output_size, return_indices=False", adaptive_pool("max", nd));
  }
  t.add({F + "avg_pool1d", "torch.avg_pool1d"},
        "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True", avg_pool(1));
  for (size_t nd = 2; nd <= 3; ++nd)
    t.add({F + "avg_pool" + std::to_string(nd) + "d"},
          "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None",
          avg_pool(nd));
  t.add({"torch.adaptive_avg_pool1d"}, "input, output_size", adaptive_pool("avg", 1));
  t.add({"torch.adaptive_max_pool1d"}, "input, output_size", adaptive_pool("max", 1));
}

}  // namespace kevo
