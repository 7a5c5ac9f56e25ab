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

// Python's min() and max() of numbers (shapes, sizes): min(a, b, ...) or min(a_tuple).
LowerFn python_extremum(bool is_max) {
  return [is_max](Lowering&, const Args& a) {
    const Value& v = a.get("args");
    if (v.items.empty()) a.fail("args", std::string(is_max ? "max" : "min") + "() arg is an empty sequence");
    Value best = v.items[0];
    for (const Value& item : v.items) {
      if (item.kind == Value::Kind::Tensor)
        a.fail("args", std::string("Python's ") + (is_max ? "max() of tensors is not supported: use torch.maximum or "
                                                           "torch.amax"
                                                         : "min() of tensors is not supported: use torch.minimum or "
                                                           "torch.amin"));
      if (!item.is_number()) a.fail("args", "must be numbers, got " + item.type_name());
      if (is_max ? item.as_double() > best.as_double() : item.as_double() < best.as_double()) best = item;
    }
    return best;
  };
}

// int(), float(), abs() and len() of Python values; abs() of a tensor is torch.abs.
void register_python_builtins(OpTable& t) {
  t.add({"builtins.min"}, "*args", python_extremum(false));
  t.add({"builtins.max"}, "*args", python_extremum(true));
  t.add({"builtins.int"}, "x", [](Lowering&, const Args& a) {
    double x = a.number("x");
    if (!std::isfinite(x)) a.fail("x", "cannot convert a non-finite float to an integer");
    return Value::integer(static_cast<int64_t>(std::trunc(x)));
  });
  t.add({"builtins.float"}, "x", [](Lowering&, const Args& a) { return Value::number(a.number("x")); });
  t.add({"builtins.len"}, "obj", [](Lowering& L, const Args& a) {
    const Value& v = a.get("obj");
    if (v.kind == Value::Kind::Tuple) return Value::integer(static_cast<int64_t>(v.items.size()));
    if (v.kind != Value::Kind::Tensor) a.fail("obj", "object of type '" + v.type_name() + "' has no len()");
    if (L.rank(v.tensor) == 0) a.fail("obj", "len() of a 0-d tensor");
    return Value::integer(L.shape(v.tensor)[0]);
  });
  t.add({"builtins.abs"}, "x", [](Lowering& L, const Args& a) {
    const Value& v = a.get("x");
    if (v.kind == Value::Kind::Int) return Value::integer(v.i < 0 ? -v.i : v.i);
    if (v.kind == Value::Kind::Bool) return Value::integer(v.b);
    if (v.kind == Value::Kind::Float) return Value::number(std::fabs(v.f));
    const OpDef* torch_abs = op_table().find("torch.abs");
    return torch_abs->lower(L, bind_arguments(*torch_abs, {{v, a.pos("x")}}, {}, a.call_pos()));
  });
}

}  // namespace

void register_builtin_ops(OpTable& t) {
  register_python_builtins(t);
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
