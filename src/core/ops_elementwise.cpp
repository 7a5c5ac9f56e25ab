// Op family 'elementwise': activations, unary math, clamp, square and tril/triu, with torch's dtype rules.
#include <string>
#include <utility>
#include <vector>

#include "core/op_families.h"

namespace kevo {

namespace {

// What an op does with an integer or bool input, as torch does it.
enum class IntInputs {
  Reject,   // activations: torch has no integer kernels
  Keep,     // relu, abs, neg: integers keep their dtype; bool is an error
  ToFloat,  // exp, sigmoid, ...: integers and bools compute in float32
};

int lower_elementwise(Lowering& L, const std::string& op, int x, IntInputs ints,
                      std::map<std::string, AttrValue> attrs) {
  DType t = L.dtype(x);
  if (is_floating(t) || ints == IntInputs::Reject) return lower_unary(L, op, x, std::move(attrs));
  if (ints == IntInputs::ToFloat) t = DType::Float32;
  else if (t == DType::Bool) L.fail(op + " does not support bool tensors");
  return L.emit1(op, {x}, std::move(attrs), t, L.shape(x));
}

// The F.* activations take `inplace`; graphs are pure, so only its default is accepted.
void check_not_inplace(const Args& a) {
  if (a.has("inplace") && a.boolean("inplace")) a.fail("inplace", "inplace=True is not supported");
}

struct Param {
  const char* name;
  const char* default_text;
};

// An activation or unary math op whose parameters are all numbers, passed on as double attrs.
struct Activation {
  const char* op;                           // canonical node
  std::vector<std::string> names;           // spellings without `inplace`
  std::vector<std::string> inplace_names;   // F.* spellings that also take inplace=False
  std::vector<Param> params;                // after `input`
  IntInputs ints;
};

LowerFn activation_lowering(const Activation& act) {
  return [op = std::string(act.op), params = act.params, ints = act.ints](Lowering& L, const Args& a) {
    check_not_inplace(a);
    std::map<std::string, AttrValue> attrs;
    for (const Param& p : params) attrs[p.name] = a.number(p.name);
    return Value::of_tensor(lower_elementwise(L, op, a.tensor("input"), ints, std::move(attrs)));
  };
}

void add_activation(OpTable& t, const Activation& act) {
  std::string sig = "input";
  for (const Param& p : act.params) sig += std::string(", ") + p.name + "=" + p.default_text;
  LowerFn fn = activation_lowering(act);
  if (!act.names.empty()) t.add(act.names, sig, fn);
  if (!act.inplace_names.empty()) t.add(act.inplace_names, sig + ", inplace=False", fn);
}

const std::vector<Activation>& activations() {
  using I = IntInputs;
  static const std::vector<Activation> table = {
      {"relu", {"torch.relu", "Tensor.relu"}, {"torch.nn.functional.relu"}, {}, I::Keep},
      {"leaky_relu", {}, {"torch.nn.functional.leaky_relu"}, {{"negative_slope", "0.01"}}, I::Reject},
      {"sigmoid", {"torch.sigmoid", "Tensor.sigmoid", "torch.nn.functional.sigmoid"}, {}, {}, I::ToFloat},
      {"tanh", {"torch.tanh", "Tensor.tanh", "torch.nn.functional.tanh"}, {}, {}, I::ToFloat},
      {"silu", {}, {"torch.nn.functional.silu"}, {}, I::Reject},
      {"mish", {}, {"torch.nn.functional.mish"}, {}, I::Reject},
      {"elu", {}, {"torch.nn.functional.elu"}, {{"alpha", "1.0"}}, I::Reject},
      {"celu", {"torch.celu"}, {"torch.nn.functional.celu"}, {{"alpha", "1.0"}}, I::Reject},
      {"selu", {"torch.selu"}, {"torch.nn.functional.selu"}, {}, I::Reject},
      {"hardsigmoid", {}, {"torch.nn.functional.hardsigmoid"}, {}, I::Reject},
      {"hardswish", {}, {"torch.nn.functional.hardswish"}, {}, I::Reject},
      {"softplus", {"torch.nn.functional.softplus"}, {}, {{"beta", "1.0"}, {"threshold", "20.0"}}, I::Reject},
      {"softsign", {"torch.nn.functional.softsign"}, {}, {}, I::Reject},
      {"exp", {"torch.exp", "Tensor.exp"}, {}, {}, I::ToFloat},
      {"log", {"torch.log", "Tensor.log"}, {}, {}, I::ToFloat},
      {"sqrt", {"torch.sqrt", "Tensor.sqrt"}, {}, {}, I::ToFloat},
      {"rsqrt", {"torch.rsqrt", "Tensor.rsqrt"}, {}, {}, I::ToFloat},
      {"erf", {"torch.erf", "Tensor.erf"}, {}, {}, I::ToFloat},
      {"sin", {"torch.sin", "Tensor.sin"}, {}, {}, I::ToFloat},
      {"cos", {"torch.cos", "Tensor.cos"}, {}, {}, I::ToFloat},
      {"abs", {"torch.abs", "torch.absolute", "Tensor.abs", "Tensor.absolute"}, {}, {}, I::Keep},
      {"neg", {"torch.neg", "torch.negative", "Tensor.neg", "Tensor.negative"}, {}, {}, I::Keep},
  };
  return table;
}

// hardtanh's bounds, shared by F.relu6 (which is hardtanh(0, 6)).
Value lower_hardtanh(Lowering& L, const Args& a, double min_val, double max_val) {
  check_not_inplace(a);
  if (min_val > max_val) L.fail("hardtanh: min_val cannot be greater than max_val");
  return Value::of_tensor(lower_unary(L, "hardtanh", a.tensor("input"), {{"min_val", min_val}, {"max_val", max_val}}));
}

// A clamp bound: None, or a Python number (kept as int or float so integer clamps stay exact).
AttrValue clamp_bound(const Args& a, const std::string& name) {
  const Value& v = a.get(name);
  switch (v.kind) {
    case Value::Kind::None: return std::monostate{};
    case Value::Kind::Int: return v.i;
    case Value::Kind::Float: return v.f;
    case Value::Kind::Tensor: a.fail(name, "a Tensor bound is not supported; pass a Python number");
    default: a.fail(name, "must be a number or None, got " + v.type_name());
  }
}

Value lower_clamp(Lowering& L, const Args& a, AttrValue min, AttrValue max) {
  int x = a.tensor("input");
  bool has_min = !std::holds_alternative<std::monostate>(min), has_max = !std::holds_alternative<std::monostate>(max);
  if (!has_min && !has_max) L.fail("clamp needs min or max");
  // torch promotes the input with the bounds as with Python scalars: a float bound lifts an
  // integer or bool tensor to float32, an int bound lifts a bool tensor to int64.
  DType t = L.dtype(x);
  if (!is_floating(t) && (std::holds_alternative<double>(min) || std::holds_alternative<double>(max)))
    t = DType::Float32;
  else if (t == DType::Bool)
    t = DType::Int64;
  return Value::of_tensor(L.emit1("clamp", {x}, {{"min", min}, {"max", max}}, t, L.shape(x)));
}

// tril/triu keep the elements on one side of a diagonal of the last two dims and zero the rest.
LowerFn triangle(const std::string& op) {
  return [op](Lowering& L, const Args& a) {
    int x = a.tensor("input");
    if (L.rank(x) < 2)
      a.fail("input", op + ": input tensor must have at least 2 dimensions, got shape " + shape_string(L.shape(x)));
    return Value::of_tensor(L.emit1(op, {x}, {{"diagonal", a.integer("diagonal")}}, L.dtype(x), L.shape(x)));
  };
}

}  // namespace

void register_elementwise_ops(OpTable& t) {
  for (const Activation& act : activations()) add_activation(t, act);

  t.add({"torch.nn.functional.gelu"}, "input, approximate='none'", [](Lowering& L, const Args& a) {
    std::string approximate = a.str("approximate");
    if (approximate != "none" && approximate != "tanh")
      a.fail("approximate", "must be 'none' or 'tanh', got '" + approximate + "'");
    return Value::of_tensor(lower_unary(L, "gelu", a.tensor("input"), {{"approximate", approximate}}));
  });
  t.add({"torch.nn.functional.hardtanh"}, "input, min_val=-1.0, max_val=1.0, inplace=False",
        [](Lowering& L, const Args& a) { return lower_hardtanh(L, a, a.number("min_val"), a.number("max_val")); });
  t.add({"torch.nn.functional.relu6"}, "input, inplace=False",
        [](Lowering& L, const Args& a) { return lower_hardtanh(L, a, 0.0, 6.0); });

  t.add({"torch.tril", "Tensor.tril"}, "input, diagonal=0", triangle("tril"));
  t.add({"torch.triu", "Tensor.triu"}, "input, diagonal=0", triangle("triu"));
  // torch.square is pow(x, 2): integers stay integers, a bool tensor gives int64.
  t.add({"torch.square", "Tensor.square"}, "input", [](Lowering& L, const Args& a) {
    return lower_binary(L, "pow", Value::of_tensor(a.tensor("input")), Value::integer(2));
  });
  t.add({"torch.clamp", "torch.clip", "Tensor.clamp", "Tensor.clip"}, "input, min=None, max=None",
        [](Lowering& L, const Args& a) { return lower_clamp(L, a, clamp_bound(a, "min"), clamp_bound(a, "max")); });
  t.add({"torch.clamp_min", "Tensor.clamp_min"}, "input, min",
        [](Lowering& L, const Args& a) { return lower_clamp(L, a, clamp_bound(a, "min"), std::monostate{}); });
  t.add({"torch.clamp_max", "Tensor.clamp_max"}, "input, max",
        [](Lowering& L, const Args& a) { return lower_clamp(L, a, std::monostate{}, clamp_bound(a, "max")); });
}

}  // namespace kevo
