// Op family 'conv': convolutions and transposed convolutions in 1-D, 2-D and 3-D, with torch's
// shape rules (stride, padding, output_padding, dilation, groups).
#include <string>
#include <vector>

#include "core/nn_args.h"
#include "core/op_families.h"

namespace kevo {

namespace {

using namespace nn;  // the shared argument checks of nn_args.h

// "kW", "kH, kW", "kD, kH, kW" and the matching spatial names of an input.
std::string dims_text(size_t nd, const std::string& prefix) {
  const char* names[] = {"D", "H", "W"};
  std::string s;
  for (size_t i = 3 - nd; i < 3; ++i) s += (s.empty() ? "" : ", ") + prefix + names[i];
  return s;
}

// The operands shared by every convolution: input, weight, bias; `channels` describes the
// weight's first two dims ("out_channels, in_channels/groups" or the transposed order).
struct ConvOperands {
  int x, w, b;
  size_t c;  // index of the channel dim of x (0 unbatched, 1 batched)
};

ConvOperands conv_operands(const Lowering& L, const Args& a, size_t nd, const std::string& channels) {
  ConvOperands o{float_tensor(L, a, "input"), -1, -1, 0};
  o.w = typed(L, a, "weight", o.x);
  o.b = typed(L, a, "bias", o.x, true);
  const Shape &xs = L.shape(o.x), &ws = L.shape(o.w);
  bool empty_kernel = false;
  for (size_t i = 2; i < ws.size(); ++i) empty_kernel |= ws[i] < 1;
  if (ws.size() != nd + 2 || empty_kernel)
    a.fail("weight", "must be " + str(static_cast<int64_t>(nd + 2)) + "-D [" + channels + ", " + dims_text(nd, "k") +
                         "] with a non-empty kernel, got shape " + shape_string(ws));
  if (xs.size() != nd + 1 && xs.size() != nd + 2)
    a.fail("input", "must be " + str(static_cast<int64_t>(nd + 2)) + "-D [N, C, " + dims_text(nd, "") + "] (or " +
                        str(static_cast<int64_t>(nd + 1)) + "-D unbatched [C, " + dims_text(nd, "") + "]), got shape " +
                        shape_string(xs));
  o.c = xs.size() - nd - 1;
  return o;
}

int64_t groups_arg(const Args& a) {
  int64_t groups = a.integer("groups");
  if (groups <= 0) a.fail("groups", "must be positive, got " + str(groups));
  return groups;
}

void check_bias(const Lowering& L, const Args& a, int b, int64_t out_channels) {
  if (b >= 0 && L.shape(b) != Shape{out_channels})
    a.fail("bias", "must have shape [" + str(out_channels) + "], got " + shape_string(L.shape(b)));
}

// padding: ints, 'valid', or 'same' (which torch allows only without stride).
std::vector<int64_t> conv_padding(const Args& a, size_t nd, const std::vector<int64_t>& stride,
                                  const std::vector<int64_t>& dilation, const Shape& ws) {
  const Value& p = a.get("padding");
  if (p.kind != Value::Kind::String) return int_tuple(a, "padding", nd, 0);
  if (p.s == "valid") return std::vector<int64_t>(nd, 0);
  if (p.s != "same")
    a.fail("padding", "must be 'valid', 'same', an int or a tuple of " + str(static_cast<int64_t>(nd)) +
                          " ints, got '" + p.s + "'");
  if (stride != std::vector<int64_t>(nd, 1))
    a.fail("padding", "padding='same' is not supported for strided convolutions");
  std::vector<int64_t> pad;
  for (size_t i = 0; i < nd; ++i) {
    int64_t total = dilation[i] * (ws[2 + i] - 1);
    // torch pads one extra element at the end here; the canonical node holds symmetric padding only.
    if (total % 2 != 0)
      a.fail("padding",
             "padding='same' with kernel size " + str(ws[2 + i]) + " and dilation " + str(dilation[i]) +
                 " needs uneven padding, which kevo does not support: use an odd kernel or explicit padding");
    pad.push_back(total / 2);
  }
  return pad;
}

Value lower_conv(Lowering& L, const Args& a, size_t nd) {
  const std::string op = "conv" + str(static_cast<int64_t>(nd)) + "d";
  ConvOperands o = conv_operands(L, a, nd, "out_channels, in_channels/groups");
  const Shape &xs = L.shape(o.x), &ws = L.shape(o.w);
  int64_t groups = groups_arg(a);
  if (ws[0] % groups != 0)
    a.fail("weight", "out_channels " + str(ws[0]) + " of weight " + shape_string(ws) +
                         " are not divisible by groups=" + str(groups));
  if (xs[o.c] != ws[1] * groups)
    a.fail("input", "has " + str(xs[o.c]) + " channels (shape " + shape_string(xs) + ") but weight " +
                        shape_string(ws) + " with groups=" + str(groups) + " expects " + str(ws[1] * groups));
  check_bias(L, a, o.b, ws[0]);
  std::vector<int64_t> stride = int_tuple(a, "stride", nd, 1), dilation = int_tuple(a, "dilation", nd, 1);
  std::vector<int64_t> padding = conv_padding(a, nd, stride, dilation, ws);
  Shape s(xs.begin(), xs.begin() + o.c);
  s.push_back(ws[0]);
  for (size_t i = 0; i < nd; ++i) {
    int64_t padded = xs[o.c + 1 + i] + 2 * padding[i], span = dilation[i] * (ws[2 + i] - 1) + 1;
    if (padded < span)
      L.fail(op + ": input " + shape_string(xs) + " with padding " + shape_string(padding) +
             " is smaller than the (dilated) kernel " + shape_string(Shape(ws.begin() + 2, ws.end())));
    s.push_back((padded - span) / stride[i] + 1);
  }
  return out(L.emit1(op, {o.x, o.w, o.b},
                     {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}},
                     L.dtype(o.x), s));
}

// The gradient of a convolution: each input element scatters the kernel into the output, so
// out = (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.
Value lower_conv_transpose(Lowering& L, const Args& a, size_t nd) {
  const std::string op = "conv_transpose" + str(static_cast<int64_t>(nd)) + "d";
  ConvOperands o = conv_operands(L, a, nd, "in_channels, out_channels/groups");
  const Shape &xs = L.shape(o.x), &ws = L.shape(o.w);
  int64_t groups = groups_arg(a);
  if (ws[0] % groups != 0)
    a.fail("weight", "in_channels " + str(ws[0]) + " of weight " + shape_string(ws) +
                         " are not divisible by groups=" + str(groups));
  if (xs[o.c] != ws[0])
    a.fail("input", "has " + str(xs[o.c]) + " channels (shape " + shape_string(xs) + ") but the transposed weight " +
                        shape_string(ws) + " expects " + str(ws[0]));
  int64_t out_channels = ws[1] * groups;
  check_bias(L, a, o.b, out_channels);
  if (a.get("padding").kind == Value::Kind::String)
    a.fail("padding",
           "must be an int or a tuple of ints for a transposed convolution, got '" + a.get("padding").s + "'");
  std::vector<int64_t> stride = int_tuple(a, "stride", nd, 1), dilation = int_tuple(a, "dilation", nd, 1);
  std::vector<int64_t> padding = int_tuple(a, "padding", nd, 0), extra = int_tuple(a, "output_padding", nd, 0);
  for (size_t i = 0; i < nd; ++i)
    if (extra[i] >= stride[i] && extra[i] >= dilation[i])
      a.fail("output_padding", "output padding must be smaller than either stride or dilation, got output_padding " +
                                   shape_string(extra) + ", stride " + shape_string(stride) + ", dilation " +
                                   shape_string(dilation));
  Shape s(xs.begin(), xs.begin() + o.c);
  s.push_back(out_channels);
  for (size_t i = 0; i < nd; ++i) {
    int64_t size = (xs[o.c + 1 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ws[2 + i] - 1) + extra[i] + 1;
    if (size < 1)
      L.fail(op + ": input " + shape_string(xs) + " with padding " + shape_string(padding) +
             " gives an output size of " + str(size) + " in spatial dim " + str(static_cast<int64_t>(i)) +
             ": too small");
    s.push_back(size);
  }
  return out(L.emit1(
      op, {o.x, o.w, o.b},
      {{"stride", stride}, {"padding", padding}, {"output_padding", extra}, {"dilation", dilation}, {"groups", groups}},
      L.dtype(o.x), s));
}

LowerFn conv(size_t nd) {
  return [nd](Lowering& L, const Args& a) { return lower_conv(L, a, nd); };
}

LowerFn conv_transpose(size_t nd) {
  return [nd](Lowering& L, const Args& a) { return lower_conv_transpose(L, a, nd); };
}

}  // namespace

void register_conv_ops(OpTable& t) {
  for (size_t nd = 1; nd <= 3; ++nd) {
    std::string d = std::to_string(nd) + "d";
    t.add({"torch.nn.functional.conv" + d, "torch.conv" + d},
          "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", conv(nd));
    t.add({"torch.nn.functional.conv_transpose" + d, "torch.conv_transpose" + d},
          "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1", conv_transpose(nd));
  }
}

}  // namespace kevo
