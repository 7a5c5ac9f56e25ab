// Walks the reference program's syntax tree, binding names and lowering each call to nodes.
#include "core/interpreter.h"

#include <cmath>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/ops.h"

namespace kevo {

namespace {

const char* kKnownModules[] = {"torch", "torch.nn", "torch.nn.functional", "math"};

// torch's dtypes kevo has no type for: named, so the error says what is missing.
bool is_unsupported_torch_dtype(const std::string& attr) {
  static const char* names[] = {"int8", "uint8", "int16", "short", "uint16", "uint32", "uint64", "complex32",
                                "complex64", "complex128", "cfloat", "cdouble", "chalf", "float8_e4m3fn",
                                "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "qint8", "quint8", "qint32"};
  for (const char* n : names)
    if (attr == n) return true;
  return false;
}

std::optional<DType> torch_dtype(const std::string& attr) { return parse_torch_dtype(attr); }

bool is_known_module(const std::string& path) {
  for (const char* m : kKnownModules)
    if (path == m) return true;
  return false;
}

[[noreturn]] void fail(ref::Pos p, const std::string& message) { throw ReferenceError(p.line, p.col, message); }

class Interpreter {
 public:
  Interpreter(const ref::Program& program, Graph& graph) : program_(program), graph_(graph) {}

  void bind(const std::string& name, Value v) { env_[name] = std::move(v); }

  Value eval(const ref::Expr& e) {
    using K = ref::ExprKind;
    switch (e.kind) {
      case K::Name: return lookup(e);
      case K::Int: return Value::integer(e.int_value);
      case K::Float: return Value::number(e.float_value);
      case K::Bool: return Value::boolean(e.bool_value);
      case K::None: return Value::none();
      case K::String: return Value::string(e.name);
      case K::Tuple:
      case K::List: {
        std::vector<Value> items;
        for (const auto& it : e.items) items.push_back(eval(*it));
        return Value::tuple(std::move(items));
      }
      case K::Attribute: return attribute(e);
      case K::Call: return call(e);
      case K::Binary: return binary(e);
      case K::Unary: return unary(e);
      case K::Compare: return compare(e);
      case K::Subscript: return subscript(e);
      case K::Slice: fail(e.pos, "a slice is only allowed inside []");
      case K::Ellipsis: {
        Value v;
        v.kind = Value::Kind::Ellipsis;
        return v;
      }
    }
    fail(e.pos, "unsupported expression");
  }

 private:
  Value lookup(const ref::Expr& e) {
    auto it = env_.find(e.name);
    if (it != env_.end()) return it->second;
    auto m = program_.modules.find(e.name);
    if (m != program_.modules.end()) {
      Value v;
      v.kind = Value::Kind::Module;
      v.s = m->second;
      return v;
    }
    // Python's builtins (min, max, int, len, ...), after every name the program binds.
    if (op_table().find("builtins." + e.name)) {
      Value f;
      f.kind = Value::Kind::Function;
      f.s = "builtins." + e.name;
      return f;
    }
    fail(e.pos, "name '" + e.name + "' is not defined");
  }

  Value attribute(const ref::Expr& e) {
    Value obj = eval(*e.items[0]);
    const std::string& attr = e.name;
    if (obj.kind == Value::Kind::Module) {
      std::string path = obj.s + "." + attr;
      if (obj.s == "math") {
        if (attr == "pi") return Value::number(M_PI);
        if (attr == "e") return Value::number(M_E);
        if (attr == "inf") return Value::number(INFINITY);
      }
      if (obj.s == "torch") {
        if (std::optional<DType> t = torch_dtype(attr)) return Value::of_dtype(*t);
        if (is_unsupported_torch_dtype(attr))
          fail(e.pos, "dtype torch." + attr + " is not supported (kevo knows float32, float64, float16, bfloat16, "
                      "int64, int32 and bool)");
      }
      if (is_known_module(path)) {
        obj.s = path;
        return obj;
      }
      if (op_table().find(path)) {
        Value f;
        f.kind = Value::Kind::Function;
        f.s = path;
        return f;
      }
      fail(e.pos, "unknown function '" + path + "'");
    }
    if (obj.kind == Value::Kind::Tensor) {
      const ValueInfo& info = graph_.values[obj.tensor];
      if (attr == "shape") {
        std::vector<Value> dims;
        for (int64_t d : info.shape) dims.push_back(Value::integer(d));
        return Value::tuple(std::move(dims));
      }
      if (attr == "ndim") return Value::integer(static_cast<int64_t>(info.shape.size()));
      if (attr == "dtype") return Value::of_dtype(info.dtype);
      if (attr == "device") return Value::device("the tensor's device");
      if (attr == "T" || attr == "mT") {
        const OpDef* def = op_table().find("Tensor." + attr);
        if (!def) fail(e.pos, "Tensor has no attribute '" + attr + "'");
        return invoke(*def, {{obj, e.pos}}, {}, e.pos);
      }
      if (op_table().find("Tensor." + attr)) {
        Value m;
        m.kind = Value::Kind::Method;
        m.s = attr;
        m.tensor = obj.tensor;
        return m;
      }
      fail(e.pos, "Tensor has no method or attribute '" + attr + "'");
    }
    if (obj.kind == Value::Kind::Tuple && !obj.fields.empty()) {
      for (size_t k = 0; k < obj.fields.size(); ++k)
        if (obj.fields[k] == attr) return obj.items[k];
      std::string known;
      for (const std::string& f : obj.fields) known += (known.empty() ? "" : ", ") + f;
      fail(e.pos, "the result has no field '" + attr + "' (it has " + known + ")");
    }
    fail(e.pos, "a " + obj.type_name() + " has no attribute '" + attr + "'");
  }

  Value invoke(const OpDef& def, const std::vector<CallArg>& positional,
               const std::vector<std::pair<std::string, CallArg>>& keywords, ref::Pos pos) {
    Args args = bind_arguments(def, positional, keywords, pos);
    Lowering L(graph_, pos);
    return def.lower(L, args);
  }

  Value call(const ref::Expr& e) {
    Value callee = eval(*e.callee);
    std::vector<CallArg> positional;
    std::vector<std::pair<std::string, CallArg>> keywords;
    std::string qualified;
    if (callee.kind == Value::Kind::Method) {
      positional.push_back({Value::of_tensor(callee.tensor), e.pos});
      qualified = "Tensor." + callee.s;
    } else if (callee.kind == Value::Kind::Function) {
      qualified = callee.s;
    } else {
      fail(e.pos, "a " + callee.type_name() + " is not callable");
    }
    for (const auto& a : e.items) positional.push_back({eval(*a), a->pos});
    for (const auto& k : e.keywords) keywords.push_back({k.name, {eval(*k.value), k.pos}});
    const OpDef* def = op_table().find(qualified);
    if (!def) fail(e.pos, "unknown function '" + qualified + "'");
    return invoke(*def, positional, keywords, e.pos);
  }

  static Value fold(const ref::Expr& e, ref::BinOp op, const Value& a, const Value& b) {
    bool ints = a.kind != Value::Kind::Float && b.kind != Value::Kind::Float;
    double x = a.as_double(), y = b.as_double();
    using B = ref::BinOp;
    switch (op) {
      case B::Add: return ints ? Value::integer(a.i + b.i + a.b + b.b) : Value::number(x + y);
      case B::Sub: return ints ? Value::integer((a.i + a.b) - (b.i + b.b)) : Value::number(x - y);
      case B::Mul: return ints ? Value::integer((a.i + a.b) * (b.i + b.b)) : Value::number(x * y);
      case B::Div:
        if (y == 0) fail(e.pos, "division by zero");
        return Value::number(x / y);
      case B::FloorDiv:
      case B::Mod: {
        if (y == 0) fail(e.pos, "division by zero");
        if (ints) {
          int64_t p = a.i + a.b, q = b.i + b.b;
          int64_t d = p / q - ((p % q != 0) && ((p < 0) != (q < 0)));
          return op == B::FloorDiv ? Value::integer(d) : Value::integer(p - d * q);
        }
        double d = std::floor(x / y);
        return op == B::FloorDiv ? Value::number(d) : Value::number(x - d * y);
      }
      case B::Pow:
        if (ints && (b.i + b.b) >= 0 && (b.i + b.b) < 63) {
          double r = std::pow(x, y);
          if (std::fabs(r) < 9.2e18) return Value::integer(static_cast<int64_t>(std::llround(r)));
        }
        return Value::number(std::pow(x, y));
      case B::MatMul: break;
    }
    fail(e.pos, "'@' needs tensors");
  }

  Value binary(const ref::Expr& e) {
    Value a = eval(*e.items[0]);
    Value b = eval(*e.items[1]);
    using B = ref::BinOp;
    if (a.kind == Value::Kind::Tuple && b.kind == Value::Kind::Tuple && e.bin_op == B::Add) {
      std::vector<Value> items = a.items;
      items.insert(items.end(), b.items.begin(), b.items.end());
      return Value::tuple(std::move(items));
    }
    if (a.is_number() && b.is_number()) return fold(e, e.bin_op, a, b);
    Lowering L(graph_, e.pos);
    if (e.bin_op == B::MatMul) {
      const OpDef* def = op_table().find("torch.matmul");
      if (!def) fail(e.pos, "'@' is not available");
      return invoke(*def, {{a, e.items[0]->pos}, {b, e.items[1]->pos}}, {}, e.pos);
    }
    static const std::map<B, std::string> names = {{B::Add, "add"}, {B::Sub, "sub"}, {B::Mul, "mul"},
                                                   {B::Div, "div"}, {B::FloorDiv, "floor_divide"},
                                                   {B::Mod, "remainder"}, {B::Pow, "pow"}};
    return lower_binary(L, names.at(e.bin_op), a, b);
  }

  Value unary(const ref::Expr& e) {
    Value a = eval(*e.items[0]);
    if (e.un_op == ref::UnOp::Pos) {
      if (a.is_number() || a.kind == Value::Kind::Tensor) return a;
    } else {
      if (a.kind == Value::Kind::Int) return Value::integer(-a.i);
      if (a.kind == Value::Kind::Float) return Value::number(-a.f);
      if (a.kind == Value::Kind::Bool) return Value::integer(-static_cast<int64_t>(a.b));
      if (a.kind == Value::Kind::Tensor) {
        Lowering L(graph_, e.pos);
        if (L.dtype(a.tensor) == DType::Bool) L.fail("negation of a bool tensor is not supported");
        return Value::of_tensor(L.emit1("neg", {a.tensor}, {}, L.dtype(a.tensor), L.shape(a.tensor)));
      }
    }
    fail(e.pos, "bad operand type for unary operator: " + a.type_name());
  }

  Value compare(const ref::Expr& e) {
    Value a = eval(*e.items[0]);
    Value b = eval(*e.items[1]);
    using C = ref::CmpOp;
    if (a.is_number() && b.is_number()) {
      double x = a.as_double(), y = b.as_double();
      switch (e.cmp_op) {
        case C::Eq: return Value::boolean(x == y);
        case C::Ne: return Value::boolean(x != y);
        case C::Lt: return Value::boolean(x < y);
        case C::Le: return Value::boolean(x <= y);
        case C::Gt: return Value::boolean(x > y);
        case C::Ge: return Value::boolean(x >= y);
      }
    }
    static const std::map<C, std::string> names = {{C::Eq, "eq"}, {C::Ne, "ne"}, {C::Lt, "lt"},
                                                   {C::Le, "le"}, {C::Gt, "gt"}, {C::Ge, "ge"}};
    Lowering L(graph_, e.pos);
    return lower_binary(L, names.at(e.cmp_op), a, b);
  }

  // One entry of a tensor subscript, its slice bounds evaluated.
  TensorIndex tensor_index(const ref::Expr& idx) {
    TensorIndex t;
    t.pos = idx.pos;
    if (idx.kind == ref::ExprKind::Slice) {
      t.kind = TensorIndex::Kind::Slice;
      std::optional<int64_t>* bounds[] = {&t.start, &t.stop, &t.step};
      for (size_t k = 0; k < 3; ++k) {
        if (k >= idx.items.size() || !idx.items[k]) continue;
        Value v = eval(*idx.items[k]);
        if (v.kind == Value::Kind::None) continue;
        if (v.kind == Value::Kind::Tensor)
          fail(idx.items[k]->pos,
               "slice bounds must be Python ints; a Tensor bound would make the shape depend on data");
        if (v.kind != Value::Kind::Int) fail(idx.items[k]->pos, "slice bounds must be ints, got " + v.type_name());
        *bounds[k] = v.i;
      }
      return t;
    }
    Value v = eval(idx);
    switch (v.kind) {
      case Value::Kind::Int: t.kind = TensorIndex::Kind::Int; t.index = v.i; return t;
      case Value::Kind::None: t.kind = TensorIndex::Kind::None; return t;
      case Value::Kind::Ellipsis: t.kind = TensorIndex::Kind::Ellipsis; return t;
      case Value::Kind::Tensor:
      case Value::Kind::Tuple:
        fail(idx.pos, "indexing with a " + v.type_name() +
                          " (advanced indexing) is not supported: use ints, slices, None and ...");
      default: fail(idx.pos, "a tensor index must be an int, a slice, None or ..., got " + v.type_name());
    }
  }

  Value tensor_subscript(const ref::Expr& e, int x) {
    const ref::Expr& idx = *e.items[1];
    std::vector<TensorIndex> index;
    if (idx.kind == ref::ExprKind::Tuple) {
      for (const auto& item : idx.items) index.push_back(tensor_index(*item));
    } else {
      index.push_back(tensor_index(idx));
    }
    Lowering L(graph_, e.pos);
    return lower_subscript(L, x, index);
  }

  Value subscript(const ref::Expr& e) {
    Value obj = eval(*e.items[0]);
    if (obj.kind == Value::Kind::Tensor) return tensor_subscript(e, obj.tensor);
    if (obj.kind != Value::Kind::Tuple) fail(e.pos, "a " + obj.type_name() + " cannot be indexed");
    const ref::Expr& idx = *e.items[1];
    int64_t n = static_cast<int64_t>(obj.items.size());
    if (idx.kind == ref::ExprKind::Slice) {
      // Python's slice of a sequence, any step but zero (x.shape[::-1] reverses).
      TensorIndex t = tensor_index(idx);
      int64_t step = t.step.value_or(1);
      if (step == 0) fail(idx.pos, "slice step cannot be zero");
      auto adjust = [&](std::optional<int64_t> i, int64_t dflt) {
        if (!i) return dflt;
        int64_t k = *i < 0 ? *i + n : *i;
        return step > 0 ? std::min(std::max(k, int64_t{0}), n) : std::min(std::max(k, int64_t{-1}), n - 1);
      };
      int64_t lo = adjust(t.start, step > 0 ? 0 : n - 1), hi = adjust(t.stop, step > 0 ? n : -1);
      std::vector<Value> items;
      for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) items.push_back(obj.items[i]);
      return Value::tuple(std::move(items));
    }
    Value i = eval(idx);
    if (i.kind != Value::Kind::Int) fail(idx.pos, "tuple indices must be ints, got " + i.type_name());
    int64_t k = i.i < 0 ? i.i + n : i.i;
    if (k < 0 || k >= n) fail(idx.pos, "index " + std::to_string(i.i) + " is out of range");
    return obj.items[k];
  }

  const ref::Program& program_;
  Graph& graph_;
  std::map<std::string, Value> env_;
};

void collect_outputs(const Value& v, ref::Pos pos, std::vector<int>& out) {
  if (v.kind == Value::Kind::Tensor) {
    out.push_back(v.tensor);
    return;
  }
  if (v.kind == Value::Kind::Tuple) {
    for (const Value& item : v.items) {
      if (item.kind != Value::Kind::Tensor) fail(pos, "run() must return tensors, got a " + item.type_name());
      out.push_back(item.tensor);
    }
    return;
  }
  fail(pos, "run() must return tensors, got a " + v.type_name());
}

}  // namespace

Graph lower_reference(const ref::Program& program, const std::vector<InputSpec>& inputs) {
  Graph graph;
  Interpreter in(program, graph);
  if (program.params.size() != inputs.size())
    fail(program.function_pos, program.function_name + "() takes " + std::to_string(program.params.size()) +
                                   " parameters but the contract declares " + std::to_string(inputs.size()) +
                                   " inputs");
  for (size_t i = 0; i < program.params.size(); ++i) {
    const InputSpec* spec = nullptr;
    for (const InputSpec& s : inputs)
      if (s.name == program.params[i]) spec = &s;
    if (!spec) fail(program.param_pos[i], "parameter '" + program.params[i] + "' is not an input of the contract");
    ValueInfo v;
    v.name = spec->name;
    v.dtype = spec->dtype;
    v.shape = spec->shape;
    int id = graph.add_value(std::move(v));
    graph.inputs.push_back(id);
    in.bind(program.params[i], Value::of_tensor(id));
  }
  for (const ref::Stmt& s : program.body) {
    switch (s.kind) {
      case ref::StmtKind::Pass: break;
      case ref::StmtKind::Assign: {
        Value v = in.eval(*s.value);
        if (s.targets.size() == 1) {
          in.bind(s.targets[0], v);
          if (v.kind == Value::Kind::Tensor && graph.values[v.tensor].producer >= 0 &&
              graph.values[v.tensor].name[0] == '%')
            graph.values[v.tensor].name = s.targets[0];
          break;
        }
        if (v.kind != Value::Kind::Tuple || v.items.size() != s.targets.size())
          fail(s.pos, "cannot unpack a " + v.type_name() +
                          (v.kind == Value::Kind::Tuple ? " of " + std::to_string(v.items.size()) : std::string()) +
                          " into " + std::to_string(s.targets.size()) + " names");
        for (size_t i = 0; i < s.targets.size(); ++i) in.bind(s.targets[i], v.items[i]);
        break;
      }
      case ref::StmtKind::Return: {
        if (!s.value) fail(s.pos, "run() must return at least one tensor");
        collect_outputs(in.eval(*s.value), s.value->pos, graph.outputs);
        return graph;
      }
    }
  }
  fail(program.function_pos, program.function_name + "() never returns a value");
}

}  // namespace kevo
