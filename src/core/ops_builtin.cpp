// Built-in callables: binary arithmetic and comparisons, where, math.*, and size queries.
#include <cmath>

#include "core/op_families.h"

namespace kevo {

namespace {

LowerFn binary(const std::string& op) {
  return [op](Lowering& L, const Args& a) { return lower_binary(L, op, a.get("input"), a.get("other")); };
}

LowerFn math_fn(double (*fn)(double), bool positive_only = false) {
  return [fn, positive_only](Lowering& L, const Args& a) {
    double x = a.number("x");
    if (positive_only && x < 0) a.fail("x", "math domain error");
    return Value::number(fn(x));
  };
}

}  // namespace

void register_builtin_ops(OpTable& t) {
  const char* binaries[][2] = {{"add", "add"},       {"sub", "sub"},         {"subtract", "sub"},
                               {"mul", "mul"},       {"multiply", "mul"},    {"div", "div"},
                               {"divide", "div"},    {"true_divide", "div"}, {"pow", "pow"},
                               {"maximum", "maximum"}, {"minimum", "minimum"}, {"floor_divide", "floor_divide"},
                               {"remainder", "remainder"}, {"eq", "eq"},     {"ne", "ne"},
                               {"lt", "lt"},         {"le", "le"},           {"gt", "gt"},
                               {"ge", "ge"}};
  for (auto& [name, op] : binaries)
    t.add({std::string("torch.") + name, std::string("Tensor.") + name}, "input, other", binary(op));

  // torch.where(cond, a, b): a and b may be Python scalars; they broadcast with cond.
  t.add({"torch.where", "Tensor.where"}, "condition, input, other", [](Lowering& L, const Args& a) {
    int cond = a.tensor("condition");
    if (L.dtype(cond) != DType::Bool) a.fail("condition", "must be a bool tensor, got " + dtype_name(L.dtype(cond)));
    const Value& x = a.get("input");
    const Value& y = a.get("other");
    for (const char* n : {"input", "other"}) {
      const Value& v = a.get(n);
      if (v.kind != Value::Kind::Tensor && !v.is_number()) a.fail(n, "must be a Tensor or a number, got " + v.type_name());
    }
    DType t;
    if (x.kind == Value::Kind::Tensor && y.kind == Value::Kind::Tensor) t = promote_types(L.dtype(x.tensor), L.dtype(y.tensor));
    else if (x.kind == Value::Kind::Tensor) t = L.dtype(x.tensor);
    else if (y.kind == Value::Kind::Tensor) t = L.dtype(y.tensor);
    else t = (x.kind == Value::Kind::Float || y.kind == Value::Kind::Float) ? DType::Float32 : DType::Int64;
    if (x.kind == Value::Kind::Tensor && y.kind != Value::Kind::Tensor && y.kind == Value::Kind::Float && !is_floating(t))
      t = DType::Float32;
    if (y.kind == Value::Kind::Tensor && x.kind != Value::Kind::Tensor && x.kind == Value::Kind::Float && !is_floating(t))
      t = DType::Float32;
    int tx = x.kind == Value::Kind::Tensor ? x.tensor : L.constant(x, t);
    int ty = y.kind == Value::Kind::Tensor ? y.tensor : L.constant(y, t);
    Shape s = broadcast_shapes(L, broadcast_shapes(L, L.shape(cond), L.shape(tx)), L.shape(ty));
    return Value::of_tensor(L.emit1("where", {cond, tx, ty}, {}, t, s));
  });

  t.add({"math.sqrt"}, "x", math_fn(std::sqrt, true));
  t.add({"math.exp"}, "x", math_fn(std::exp));
  t.add({"math.log"}, "x", math_fn(std::log, true));
  t.add({"math.tanh"}, "x", math_fn(std::tanh));
  t.add({"math.erf"}, "x", math_fn(std::erf));

  t.add({"Tensor.size"}, "self, dim=None", [](Lowering& L, const Args& a) {
    const Shape& s = L.shape(a.tensor("self"));
    if (a.is_none("dim")) {
      std::vector<Value> dims;
      for (int64_t d : s) dims.push_back(Value::integer(d));
      return Value::tuple(std::move(dims));
    }
    return Value::integer(s[normalize_dim(L, a.integer("dim"), static_cast<int64_t>(s.size()))]);
  });
  t.add({"Tensor.dim"}, "self", [](Lowering& L, const Args& a) { return Value::integer(L.rank(a.tensor("self"))); });
  t.add({"Tensor.numel", "torch.numel"}, "input", [](Lowering& L, const Args& a) {
    return Value::integer(numel(L.shape(a.tensor("input"))));
  });
}

}  // namespace kevo
