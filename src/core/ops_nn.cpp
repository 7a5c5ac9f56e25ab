// Op family 'nn': normalizations (layer, group, instance, batch) and dropout, with torch's rules.
#include <algorithm>
#include <cstdio>

#include "core/nn_args.h"
#include "core/op_families.h"

namespace kevo {

namespace {

using namespace nn;  // the shared argument checks of nn_args.h

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

// --- dropout ---------------------------------------------------------------------------------

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Dropout draws a random mask in training mode: such a reference has no single right answer, so
// kevo refuses it. Out of training, or with p=0, it is the input itself; p=1 zeroes it (x * 0,
// as ATen computes it, so NaN stays NaN).
Value lower_dropout(Lowering& L, const Args& a, const std::string& training_flag) {
  int x = a.tensor("input");
  if (a.has("inplace") && a.boolean("inplace")) a.fail("inplace", "inplace=True is not supported");
  double p = a.number("p");
  if (!(p >= 0.0 && p <= 1.0)) a.fail("p", "dropout probability has to be between 0 and 1, but got " + number_text(p));
  bool training = a.boolean(training_flag);
  if (!training || p == 0.0) return out(x);
  if (p < 1.0)
    L.fail(a.op() + " with p=" + number_text(p) + " in training mode makes the reference's output random, so it cannot "
           "be checked: pass " + training_flag + "=False (the module in eval mode) or p=0");
  return lower_binary(L, "mul", out(x), Value::number(0.0));
}

LowerFn dropout(const std::string& training_flag) {
  return [training_flag](Lowering& L, const Args& a) { return lower_dropout(L, a, training_flag); };
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

  for (const char* name : {"dropout", "dropout1d", "dropout2d", "dropout3d"})
    t.add({F + name}, "input, p=0.5, training=True, inplace=False", dropout("training"));
  for (const char* name : {"alpha_dropout", "feature_alpha_dropout"})
    t.add({F + name}, "input, p=0.5, training=False, inplace=False", dropout("training"));
  for (const char* name :
       {"torch.dropout", "torch.feature_dropout", "torch.alpha_dropout", "torch.feature_alpha_dropout"})
    t.add({name}, "input, p, train", dropout("train"));
}

}  // namespace kevo
