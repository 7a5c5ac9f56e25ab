// Op family 'dtype': conversions (.float(), .half(), .to(...)), and the copies that change nothing
// a graph can see (clone, detach, .cpu(), .cuda()).
#include <string>

#include "core/op_families.h"

namespace kevo {

namespace {

Value cast(Lowering& L, int x, DType t) { return Value::of_tensor(lower_cast(L, x, t)); }

LowerFn cast_to(DType t) {
  return [t](Lowering& L, const Args& a) { return cast(L, a.tensor("input"), t); };
}

// A device argument: accepted and ignored (the reference runs wherever the oracle runs it).
void check_device(const Args& a, const std::string& name, const Value& v) {
  if (v.kind == Value::Kind::Device || v.kind == Value::Kind::String || v.kind == Value::Kind::None ||
      v.kind == Value::Kind::Int)
    return;
  a.fail(name, "must be a device (x.device, 'cuda', torch.device(...)), got " + v.type_name());
}

// Tensor.to(dtype), to(device, dtype), to(other), and keywords: only the dtype matters to a graph.
Value lower_to(Lowering& L, const Args& a) {
  int x = a.tensor("input");
  std::optional<DType> target = a.opt_dtype("dtype");
  check_device(a, "device", a.get("device"));
  int bools = 0;
  for (const Value& v : a.get("args").items) {
    std::optional<DType> t = v.kind == Value::Kind::Tensor ? L.dtype(v.tensor) : python_type_dtype(v);
    if (!t) {
      if (v.kind == Value::Kind::Bool && ++bools <= 2) continue;  // non_blocking, copy
      check_device(a, "args", v);
    }
    if (t && target) a.fail("args", "to() was given more than one dtype");
    if (t) target = t;
  }
  a.boolean("non_blocking");
  a.boolean("copy");
  if (!a.is_none("memory_format")) a.fail("memory_format", "memory formats are not supported (graphs have no layout)");
  return target ? cast(L, x, *target) : Value::of_tensor(x);
}

Value lower_type(Lowering& L, const Args& a) {
  if (a.is_none("dtype"))
    a.fail("dtype", "type() without a dtype returns a type name; pass a dtype such as torch.float16");
  a.boolean("non_blocking");
  return cast(L, a.tensor("input"), a.dtype("dtype"));
}

// clone and detach copy values a pure graph never mutates: the tensor itself.
Value identity(Lowering&, const Args& a) {
  if (a.has("memory_format") && !a.is_none("memory_format"))
    a.fail("memory_format", "memory formats are not supported (graphs have no layout)");
  return Value::of_tensor(a.tensor("input"));
}

Value lower_device_move(Lowering&, const Args& a) {
  check_device(a, "device", a.get("device"));
  a.boolean("non_blocking");
  return Value::of_tensor(a.tensor("input"));
}

}  // namespace

// torch returns x itself when it already has the dtype, and so does kevo.
int lower_cast(Lowering& L, int x, DType t) {
  if (L.dtype(x) == t) return x;
  return L.emit1("cast", {x}, {{"dtype", dtype_name(t)}}, t, L.shape(x));
}

void register_dtype_ops(OpTable& t) {
  const std::pair<const char*, DType> methods[] = {
      {"float", DType::Float32}, {"double", DType::Float64}, {"half", DType::Float16}, {"bfloat16", DType::BFloat16},
      {"long", DType::Int64},    {"int", DType::Int32},      {"bool", DType::Bool}};
  for (const auto& [name, dtype] : methods) t.add({std::string("Tensor.") + name}, "input", cast_to(dtype));
  t.add({"Tensor.to"}, "input, *args=(), dtype=None, device=None, non_blocking=False, copy=False, memory_format=None",
        lower_to);
  t.add({"Tensor.type"}, "input, dtype=None, non_blocking=False", lower_type);
  t.add({"Tensor.type_as"}, "input, other",
        [](Lowering& L, const Args& a) { return cast(L, a.tensor("input"), L.dtype(a.tensor("other"))); });
  t.add({"torch.clone", "Tensor.clone"}, "input, *, memory_format=None", identity);
  t.add({"torch.detach", "Tensor.detach"}, "input", identity);
  t.add({"Tensor.cpu"}, "input, *, memory_format=None", identity);
  t.add({"Tensor.cuda"}, "input, device=None, non_blocking=False", lower_device_move);
  t.add({"torch.device"}, "type, index=None", [](Lowering&, const Args& a) {
    std::string type = a.str("type");
    if (!a.is_none("index")) a.integer("index");
    return Value::device(type);
  });
}

}  // namespace kevo
