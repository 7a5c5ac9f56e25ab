// Op family 'factory': tensors a reference makes itself: torch.tensor(...) constants, zeros, ones,
// full and their *_like forms. Random and uninitialised ones (rand, empty) are refused.
#include <string>
#include <vector>

#include "core/op_families.h"

namespace kevo {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

AttrValue number_attr(const Value& v) {
  if (v.kind == Value::Kind::Bool) return v.b;
  if (v.kind == Value::Kind::Int) return v.i;
  return v.f;
}

// The dtype torch infers for a Python number: bool, int64, or the default float32.
DType inferred(const Value& v) {
  return v.kind == Value::Kind::Bool ? DType::Bool : v.kind == Value::Kind::Int ? DType::Int64 : DType::Float32;
}

int full(Lowering& L, const Shape& shape, const Value& value, DType dtype) {
  return L.emit1("full", {}, {{"shape", shape}, {"value", number_attr(value)}}, dtype, shape);
}

// Device, requires_grad and pin_memory change nothing a graph computes; they are type-checked.
void check_creation_flags(const Args& a) {
  for (const char* flag : {"requires_grad", "pin_memory"})
    if (a.has(flag)) a.boolean(flag);
  if (a.has("device")) {
    const Value& d = a.get("device");
    if (d.kind != Value::Kind::None && d.kind != Value::Kind::Device && d.kind != Value::Kind::String &&
        d.kind != Value::Kind::Int)
      a.fail("device", "must be a device (x.device, 'cuda', torch.device(...)), got " + d.type_name());
  }
  if (a.has("memory_format") && !a.is_none("memory_format"))
    a.fail("memory_format", "memory formats are not supported (graphs have no layout)");
}

// The nested list's shape and the dtype torch would infer for it (float beats int beats bool).
void list_shape(const Args& a, const Value& v, size_t depth, Shape& shape, DType& dtype) {
  if (v.kind != Value::Kind::Tuple) {
    if (!v.is_number()) a.fail("data", "must hold numbers, got " + v.type_name());
    if (depth != shape.size()) a.fail("data", "is not rectangular: a number where a list was expected");
    DType t = inferred(v);
    dtype = (t == DType::Float32 || dtype == DType::Float32) ? DType::Float32
            : (t == DType::Int64 || dtype == DType::Int64)   ? DType::Int64
                                                             : dtype;
    return;
  }
  int64_t n = static_cast<int64_t>(v.items.size());
  if (depth == shape.size()) {
    shape.push_back(n);
  } else if (shape[depth] != n) {
    a.fail("data",
           "expected sequence of length " + str(shape[depth]) + " at dim " + str(depth) + " (got " + str(n) + ")");
  }
  for (const Value& item : v.items) list_shape(a, item, depth + 1, shape, dtype);
}

// A nested list of numbers as rank-0 `full` nodes stacked (unsqueeze, then cat) dim by dim.
int list_tensor(Lowering& L, const Value& v, DType dtype) {
  if (v.kind != Value::Kind::Tuple) return full(L, {}, v, dtype);
  std::vector<int> parts;
  for (const Value& item : v.items) {
    int p = list_tensor(L, item, dtype);
    Shape s = L.shape(p);
    s.insert(s.begin(), 1);
    parts.push_back(L.emit1("unsqueeze", {p}, {{"dim", int64_t{0}}}, dtype, s));
  }
  Shape s = parts.empty() ? Shape{0} : L.shape(parts[0]);
  s[0] = static_cast<int64_t>(v.items.size());
  if (parts.empty()) return full(L, s, Value::integer(0), dtype);
  if (parts.size() == 1) return parts[0];
  return L.emit1("cat", parts, {{"dim", int64_t{0}}}, dtype, s);
}

Value lower_tensor(Lowering& L, const Args& a) {
  check_creation_flags(a);
  const Value& data = a.get("data");
  std::optional<DType> dtype = a.opt_dtype("dtype");
  if (data.kind == Value::Kind::Tensor) {
    // torch.tensor(t) copies t (torch warns to use clone); the copy is t itself in a graph.
    int x = data.tensor;
    return Value::of_tensor(dtype ? lower_cast(L, x, *dtype) : x);
  }
  if (data.is_number()) return Value::of_tensor(full(L, {}, data, dtype.value_or(inferred(data))));
  if (data.kind != Value::Kind::Tuple)
    a.fail("data", "must be a number or a (nested) list of numbers, got " + data.type_name());
  Shape shape;
  DType t = DType::Bool;
  list_shape(a, data, 0, shape, t);
  if (numel(shape) == 0) t = DType::Float32;  // torch.tensor([]) holds no number to infer from
  return Value::of_tensor(list_tensor(L, data, dtype.value_or(t)));
}

// The sizes of zeros/ones/full: zeros(2, 3) and zeros((2, 3)) alike.
Shape size_arg(const Args& a, const std::string& name) {
  Shape s = a.int_list(name);
  for (int64_t d : s)
    if (d < 0) a.fail(name, "Trying to create tensor with negative dimension " + str(d) + ": " + shape_string(s));
  return s;
}

LowerFn filled(double value) {
  return [value](Lowering& L, const Args& a) {
    check_creation_flags(a);
    Shape s = size_arg(a, "size");
    return Value::of_tensor(full(L, s, Value::number(value), a.opt_dtype("dtype").value_or(DType::Float32)));
  };
}

Value lower_full(Lowering& L, const Args& a) {
  check_creation_flags(a);
  const Value& v = a.get("fill_value");
  if (!v.is_number()) a.fail("fill_value", "must be a number, got " + v.type_name());
  return Value::of_tensor(full(L, size_arg(a, "size"), v, a.opt_dtype("dtype").value_or(inferred(v))));
}

// zeros_like and the like: the input's shape, and its dtype unless one is given.
LowerFn filled_like(std::optional<double> value) {
  return [value](Lowering& L, const Args& a) {
    check_creation_flags(a);
    int x = a.tensor("input");
    Value v = value ? Value::number(*value) : a.get("fill_value");
    if (!v.is_number()) a.fail("fill_value", "must be a number, got " + v.type_name());
    return Value::of_tensor(full(L, L.shape(x), v, a.opt_dtype("dtype").value_or(L.dtype(x))));
  };
}

// Values no candidate could reproduce: random draws and uninitialised memory.
LowerFn refused(const std::string& why) {
  return [why](Lowering& L, const Args&) -> Value { L.fail(why); };
}

}  // namespace

void register_factory_ops(OpTable& t) {
  const std::string flags = "dtype=None, device=None, requires_grad=False";
  t.add({"torch.tensor"}, "data, *, " + flags + ", pin_memory=False", lower_tensor);
  t.add({"torch.zeros"}, "*size, " + flags, filled(0.0));
  t.add({"torch.ones"}, "*size, " + flags, filled(1.0));
  t.add({"torch.full"}, "size, fill_value, *, " + flags, lower_full);
  const std::string like = "dtype=None, device=None, requires_grad=False, memory_format=None";
  t.add({"torch.zeros_like"}, "input, *, " + like, filled_like(0.0));
  t.add({"torch.ones_like"}, "input, *, " + like, filled_like(1.0));
  t.add({"torch.full_like"}, "input, fill_value, *, " + like, filled_like(std::nullopt));
  const std::string random =
      "random tensors make the reference's output random, so it cannot be checked: make the "
      "values an input of the contract";
  for (const char* name : {"torch.rand", "torch.randn", "torch.randint", "torch.rand_like", "torch.randn_like",
                           "torch.randint_like", "torch.randperm", "torch.bernoulli", "torch.multinomial"})
    t.add({name}, "*args=(), **", refused(std::string(name) + ": " + random));
  for (const char* name : {"torch.empty", "torch.empty_like"})
    t.add({name}, "*args=(), **",
          refused(std::string(name) + ": uninitialised memory has no defined value: use zeros"));
}

}  // namespace kevo
