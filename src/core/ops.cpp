// Interpretation values, argument binding, the op table and the shape/type rules ops share.
#include "core/ops.h"

#include <cctype>
#include <cmath>

#include "core/error.h"
#include "core/op_families.h"

namespace kevo {

// --- Value ----------------------------------------------------------------------------------

Value Value::boolean(bool v) { Value x; x.kind = Kind::Bool; x.b = v; return x; }
Value Value::integer(int64_t v) { Value x; x.kind = Kind::Int; x.i = v; return x; }
Value Value::number(double v) { Value x; x.kind = Kind::Float; x.f = v; return x; }
Value Value::string(std::string v) { Value x; x.kind = Kind::String; x.s = std::move(v); return x; }
Value Value::tuple(std::vector<Value> v) { Value x; x.kind = Kind::Tuple; x.items = std::move(v); return x; }
Value Value::of_tensor(int id) { Value x; x.kind = Kind::Tensor; x.tensor = id; return x; }
Value Value::of_dtype(DType t) { Value x; x.kind = Kind::DType; x.dtype = t; return x; }
Value Value::device(std::string name) { Value x; x.kind = Kind::Device; x.s = std::move(name); return x; }
Value Value::of_tensors(const std::vector<int>& ids) {
  if (ids.size() == 1) return of_tensor(ids[0]);
  std::vector<Value> items;
  for (int id : ids) items.push_back(of_tensor(id));
  return tuple(std::move(items));
}

double Value::as_double() const {
  switch (kind) {
    case Kind::Int: return static_cast<double>(i);
    case Kind::Float: return f;
    case Kind::Bool: return b ? 1.0 : 0.0;
    default: return 0.0;
  }
}

std::string Value::type_name() const {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::Tuple: return "tuple";
    case Kind::Tensor: return "Tensor";
    case Kind::Module: return "module";
    case Kind::Function: return "function";
    case Kind::Method: return "method";
    case Kind::DType: return "dtype";
    case Kind::Device: return "device";
    case Kind::Ellipsis: return "ellipsis";
  }
  return "?";
}

// --- Args -----------------------------------------------------------------------------------

void Args::set(const std::string& name, Value v, ref::Pos pos) {
  values_[name] = std::move(v);
  positions_[name] = pos;
}

const Value& Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error(op_ + " has no parameter '" + name + "'");
  return it->second;
}

ref::Pos Args::pos(const std::string& name) const {
  auto it = positions_.find(name);
  return it == positions_.end() ? call_pos_ : it->second;
}

void Args::fail(const std::string& name, const std::string& message) const {
  ref::Pos p = pos(name);
  throw ReferenceError(p.line, p.col, "argument '" + name + "' of " + op_ + ": " + message);
}

namespace {
[[noreturn]] void wrong_type(const Args& a, const std::string& name, const std::string& want) {
  a.fail(name, "must be " + want + ", got " + a.get(name).type_name());
}
}  // namespace

int Args::tensor(const std::string& name) const {
  const Value& v = get(name);
  if (v.kind != Value::Kind::Tensor) wrong_type(*this, name, "a Tensor");
  return v.tensor;
}

int Args::opt_tensor(const std::string& name) const { return is_none(name) ? -1 : tensor(name); }

int64_t Args::integer(const std::string& name) const {
  const Value& v = get(name);
  if (v.kind != Value::Kind::Int) wrong_type(*this, name, "int");
  return v.i;
}

std::optional<int64_t> Args::opt_integer(const std::string& name) const {
  if (is_none(name)) return std::nullopt;
  return integer(name);
}

double Args::number(const std::string& name) const {
  const Value& v = get(name);
  if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Float) wrong_type(*this, name, "a number");
  return v.as_double();
}

std::optional<double> Args::opt_number(const std::string& name) const {
  if (is_none(name)) return std::nullopt;
  return number(name);
}

bool Args::boolean(const std::string& name) const {
  const Value& v = get(name);
  if (v.kind != Value::Kind::Bool) wrong_type(*this, name, "bool");
  return v.b;
}

std::string Args::str(const std::string& name) const {
  const Value& v = get(name);
  if (v.kind != Value::Kind::String) wrong_type(*this, name, "str");
  return v.s;
}

std::vector<int64_t> Args::ints(const std::string& name) const {
  const Value& v = get(name);
  if (v.kind == Value::Kind::Int) return {v.i};
  if (v.kind != Value::Kind::Tuple) wrong_type(*this, name, "an int or a tuple of ints");
  std::vector<int64_t> out;
  for (const Value& item : v.items) {
    if (item.kind != Value::Kind::Int) wrong_type(*this, name, "an int or a tuple of ints");
    out.push_back(item.i);
  }
  return out;
}

// torch takes sizes and dim lists as a sequence only (view(6) is the varargs spelling of view((6,))).
std::vector<int64_t> Args::int_list(const std::string& name) const {
  if (get(name).kind != Value::Kind::Tuple) wrong_type(*this, name, "a tuple of ints");
  return ints(name);
}

std::optional<std::vector<int64_t>> Args::opt_ints(const std::string& name) const {
  if (is_none(name)) return std::nullopt;
  return ints(name);
}

std::optional<DType> python_type_dtype(const Value& v) {
  if (v.kind == Value::Kind::DType) return v.dtype;
  if (v.kind == Value::Kind::Function && v.s == "builtins.float") return DType::Float64;
  if (v.kind == Value::Kind::Function && v.s == "builtins.int") return DType::Int64;
  return std::nullopt;
}

DType Args::dtype(const std::string& name) const {
  std::optional<DType> t = python_type_dtype(get(name));
  if (!t) wrong_type(*this, name, "a dtype such as torch.float16");
  return *t;
}

std::optional<DType> Args::opt_dtype(const std::string& name) const {
  if (is_none(name)) return std::nullopt;
  return dtype(name);
}

std::vector<int> Args::tensors(const std::string& name) const {
  const Value& v = get(name);
  if (v.kind != Value::Kind::Tuple) wrong_type(*this, name, "a tuple or list of Tensors");
  std::vector<int> out;
  for (const Value& item : v.items) {
    if (item.kind != Value::Kind::Tensor)
      fail(name, "must be a tuple or list of Tensors, got one of type " + item.type_name());
    out.push_back(item.tensor);
  }
  return out;
}

// --- Lowering -------------------------------------------------------------------------------

std::vector<int> Lowering::emit(const std::string& op, std::vector<int> inputs,
                                std::map<std::string, AttrValue> attrs,
                                std::vector<std::pair<DType, Shape>> outputs) {
  Node n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.pos = pos_;
  int node_id = static_cast<int>(graph_.nodes.size());
  for (auto& [dtype, shape] : outputs) {
    for (int64_t d : shape)
      if (d < 0) fail(op + " would produce a negative size " + shape_string(shape));
    ValueInfo v;
    v.name = "%" + std::to_string(graph_.values.size());
    v.dtype = dtype;
    v.shape = std::move(shape);
    v.producer = node_id;
    n.outputs.push_back(graph_.add_value(std::move(v)));
  }
  graph_.nodes.push_back(std::move(n));
  return graph_.nodes.back().outputs;
}

int Lowering::emit1(const std::string& op, std::vector<int> inputs, std::map<std::string, AttrValue> attrs,
                    DType dtype, Shape shape) {
  return emit(op, std::move(inputs), std::move(attrs), {{dtype, std::move(shape)}})[0];
}

namespace {
AttrValue scalar_attr(const Value& scalar) {
  if (scalar.kind == Value::Kind::Bool) return scalar.b;
  if (scalar.kind == Value::Kind::Int) return scalar.i;
  return scalar.f;
}
}  // namespace

int Lowering::constant(const Value& scalar, DType dtype) {
  return emit1("constant", {}, {{"value", scalar_attr(scalar)}}, dtype, {});
}

void Lowering::fail(const std::string& message) const { fail(pos_, message); }
void Lowering::fail(ref::Pos at, const std::string& message) const {
  throw ReferenceError(at.line, at.col, message);
}

// --- signatures and binding -----------------------------------------------------------------

namespace {

struct Param {
  std::string name;
  bool has_default = false;
  Value default_value;
  bool keyword_only = false;
  bool varargs = false;  // `*shape`
  bool kwargs = false;   // `**`: any other keyword is accepted (ops that refuse every call)
};

// Parses a default literal of a signature: None, True, False, ints, floats, 'str', (a, b).
Value parse_default(const std::string& text) {
  std::string t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.erase(0, 1);
  if (t == "None") return Value::none();
  if (t == "True") return Value::boolean(true);
  if (t == "False") return Value::boolean(false);
  if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"')) return Value::string(t.substr(1, t.size() - 2));
  if (!t.empty() && t.front() == '(') {
    std::vector<Value> items;
    std::string inner = t.substr(1, t.size() - 2), cur;
    for (char c : inner + ",") {
      if (c == ',') {
        if (cur.find_first_not_of(' ') != std::string::npos) items.push_back(parse_default(cur));
        cur.clear();
      } else {
        cur += c;
      }
    }
    return Value::tuple(std::move(items));
  }
  if (t.find_first_of(".eE") != std::string::npos) return Value::number(std::stod(t));
  return Value::integer(std::stoll(t));
}

std::vector<Param> parse_signature(const std::string& sig) {
  std::vector<Param> params;
  bool keyword_only = false;
  std::string cur;
  int depth = 0;
  auto flush = [&] {
    size_t a = cur.find_first_not_of(' ');
    if (a == std::string::npos) return;
    std::string item = cur.substr(a);
    cur.clear();
    if (item == "*") {
      keyword_only = true;
      return;
    }
    Param p;
    p.keyword_only = keyword_only;
    if (item.rfind("**", 0) == 0) {
      p.kwargs = true;
      p.keyword_only = true;
      p.name = item.substr(2);
      params.push_back(std::move(p));
      return;
    }
    if (item[0] == '*') {
      p.varargs = true;
      item = item.substr(1);
      keyword_only = true;
    }
    size_t eq = item.find('=');
    p.name = item.substr(0, eq);
    while (!p.name.empty() && p.name.back() == ' ') p.name.pop_back();
    if (eq != std::string::npos) {
      p.has_default = true;
      p.default_value = parse_default(item.substr(eq + 1));
    }
    params.push_back(std::move(p));
  };
  for (char c : sig) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      flush();
      cur.clear();
    } else {
      cur += c;
    }
  }
  flush();
  return params;
}

}  // namespace

Args bind_arguments(const OpDef& op, const std::vector<CallArg>& positional,
                    const std::vector<std::pair<std::string, CallArg>>& keywords, ref::Pos call_pos) {
  std::vector<Param> params = parse_signature(op.signature);
  Args args(op.name, call_pos);
  auto fail = [&](ref::Pos p, const std::string& m) { throw ReferenceError(p.line, p.col, op.name + "(): " + m); };

  size_t next = 0;
  for (const Param& p : params) {
    if (p.keyword_only && !p.varargs) break;
    if (p.varargs) {
      // torch accepts view(2, 3) and view((2, 3)) alike.
      std::vector<Value> rest;
      ref::Pos first = next < positional.size() ? positional[next].pos : call_pos;
      for (; next < positional.size(); ++next) rest.push_back(positional[next].value);
      if (rest.size() == 1 && rest[0].kind == Value::Kind::Tuple) args.set(p.name, rest[0], first);
      else if (!rest.empty()) args.set(p.name, Value::tuple(std::move(rest)), first);
      break;
    }
    if (next >= positional.size()) break;
    args.set(p.name, positional[next].value, positional[next].pos);
    ++next;
  }
  if (next < positional.size()) {
    size_t max_pos = 0;
    for (const Param& p : params)
      if (!p.keyword_only) ++max_pos;
    fail(positional[next].pos, "takes at most " + std::to_string(max_pos) + " positional argument" +
                                   (max_pos == 1 ? "" : "s") + " but " + std::to_string(positional.size()) +
                                   " were given");
  }
  for (const auto& [name, arg] : keywords) {
    const Param* match = nullptr;
    bool any_keyword = false;
    for (const Param& p : params) {
      if (p.name == name && !(p.name == "self") && !p.kwargs) match = &p;
      any_keyword |= p.kwargs;
    }
    if (!match && !any_keyword) fail(arg.pos, "unexpected keyword argument '" + name + "'");
    if (args.has(name)) fail(arg.pos, "got multiple values for argument '" + name + "'");
    args.set(name, arg.value, arg.pos);
  }
  for (const Param& p : params) {
    if (p.kwargs || args.has(p.name)) continue;
    if (p.has_default) {
      args.set(p.name, p.default_value, call_pos);
    } else {
      fail(call_pos, "missing required argument '" + p.name + "'");
    }
  }
  return args;
}

// --- the table ------------------------------------------------------------------------------

void OpTable::add(const std::vector<std::string>& qualified_names, const std::string& signature, LowerFn fn) {
  for (const std::string& q : qualified_names) ops_.add(q, OpDef{q.substr(q.rfind('.') + 1), signature, fn});
}

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    register_builtin_ops(t);
    register_elementwise_ops(t);
    register_reduction_ops(t);
    register_nn_ops(t);
    register_matmul_ops(t);
    register_conv_ops(t);
    register_pool_ops(t);
    register_loss_ops(t);
    register_shape_ops(t);
    register_slice_ops(t);
    register_dtype_ops(t);
    register_factory_ops(t);
    return t;
  }();
  return table;
}

// --- shape and type rules -------------------------------------------------------------------

Shape broadcast_shapes(const Lowering& L, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      L.fail("shapes " + shape_string(a) + " and " + shape_string(b) + " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_dim(const Lowering& L, int64_t dim, int64_t rank, ref::Pos at) {
  int64_t r = std::max<int64_t>(rank, 1);  // torch lets a scalar take dim 0 or -1
  if (dim < -r || dim >= r)
    L.fail(at, "dim " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(rank));
  return dim < 0 ? dim + r : dim;
}

int64_t normalize_dim(const Lowering& L, int64_t dim, int64_t rank) { return normalize_dim(L, dim, rank, L.pos()); }

std::vector<int64_t> normalize_dims(const Lowering& L, const std::vector<int64_t>& dims, int64_t rank, ref::Pos at) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    int64_t n = normalize_dim(L, d, rank, at);
    for (int64_t seen : out)
      if (seen == n) L.fail(at, "dim " + std::to_string(d) + " appears more than once");
    out.push_back(n);
  }
  return out;
}

std::vector<int64_t> normalize_dims(const Lowering& L, const std::vector<int64_t>& dims, int64_t rank) {
  return normalize_dims(L, dims, rank, L.pos());
}

int64_t dim_arg(const Lowering& L, const Args& a, const std::string& name, int x) {
  return normalize_dim(L, a.integer(name), L.rank(x), a.pos(name));
}

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool reduced = false;
    for (int64_t d : dims) reduced |= d == static_cast<int64_t>(i);
    if (!reduced) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

namespace {
int category(DType t) { return t == DType::Bool ? 0 : is_integral(t) ? 1 : 2; }
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (category(a) != category(b)) return category(a) > category(b) ? a : b;
  if (category(a) == 1) return DType::Int64;
  // Floating pairs: the wider wins; float16 with bfloat16 gives float32, as in torch.
  auto width = [](DType t) { return dtype_size(t); };
  if (width(a) == width(b)) return DType::Float32;
  return width(a) > width(b) ? a : b;
}

namespace {
// The dtype a tensor takes when it meets a Python scalar, following torch: a scalar of a higher
// category lifts the result to that category's default type.
DType with_scalar(DType t, const Value& s) {
  int sc = s.kind == Value::Kind::Bool ? 0 : s.kind == Value::Kind::Int ? 1 : 2;
  if (sc <= category(t)) return t;
  return sc == 2 ? DType::Float32 : DType::Int64;
}

DType scalar_dtype(const Value& s) {
  return s.kind == Value::Kind::Bool ? DType::Bool : s.kind == Value::Kind::Int ? DType::Int64 : DType::Float32;
}

bool is_comparison(const std::string& op) {
  return op == "eq" || op == "ne" || op == "lt" || op == "le" || op == "gt" || op == "ge";
}
}  // namespace

Value lower_binary(Lowering& L, const std::string& op, const Value& a, const Value& b) {
  bool at = a.kind == Value::Kind::Tensor, bt = b.kind == Value::Kind::Tensor;
  if (!at && !a.is_number()) L.fail(op + ": unsupported operand type " + a.type_name());
  if (!bt && !b.is_number()) L.fail(op + ": unsupported operand type " + b.type_name());
  if (!at && !bt) L.fail(op + ": needs at least one Tensor operand");

  DType compute;
  if (at && bt) {
    DType da = L.dtype(a.tensor), db = L.dtype(b.tensor);
    // A rank-0 tensor does not lift a higher-rank tensor of the same category.
    bool a0 = L.rank(a.tensor) == 0, b0 = L.rank(b.tensor) == 0;
    if (a0 != b0 && category(da) == category(db)) compute = a0 ? db : da;
    else compute = promote_types(da, db);
  } else {
    compute = at ? with_scalar(L.dtype(a.tensor), b) : with_scalar(L.dtype(b.tensor), a);
  }
  if (op == "div" && !is_floating(compute)) compute = DType::Float32;  // true division

  int ta = at ? a.tensor : L.constant(a, compute == DType::Bool ? scalar_dtype(a) : compute);
  int tb = bt ? b.tensor : L.constant(b, compute == DType::Bool ? scalar_dtype(b) : compute);
  Shape shape = broadcast_shapes(L, L.shape(ta), L.shape(tb));
  DType out = is_comparison(op) ? DType::Bool : compute;
  return Value::of_tensor(L.emit1(op, {ta, tb}, {}, out, shape));
}

int lower_unary(Lowering& L, const std::string& op, int x, std::map<std::string, AttrValue> attrs) {
  DType t = L.dtype(x);
  if (!is_floating(t)) L.fail(op + " needs a floating-point tensor, got " + dtype_name(t));
  return L.emit1(op, {x}, std::move(attrs), t, L.shape(x));
}

}  // namespace kevo
