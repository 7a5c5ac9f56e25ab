// The op vocabulary of reference programs: how a call lowers to graph nodes, with shape rules.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/name_table.h"
#include "core/reference_ast.h"

namespace kevo {

// A value while a reference program is interpreted.
struct Value {
  enum class Kind { None, Bool, Int, Float, String, Tuple, Tensor, Module, Function, Method, DType, Device, Ellipsis };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;              // String; Module path; Function's qualified name; Method's name; Device
  std::vector<Value> items;   // Tuple (tuples and lists alike)
  std::vector<std::string> fields;  // Tuple: the field names of a named tuple (values, indices), else empty
  int tensor = -1;            // Tensor: value id in the graph; Method: its receiver
  DType dtype = DType::Float32;  // DType: torch.float16 and the like

  static Value none() { return {}; }
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  static Value tuple(std::vector<Value> v);
  static Value of_tensor(int id);
  static Value of_tensors(const std::vector<int>& ids);  // one tensor, or a tuple of several
  static Value of_dtype(DType t);
  // A device (torch.device('cuda'), x.device): accepted where torch takes one, and ignored, since
  // the reference runs wherever the oracle runs it.
  static Value device(std::string name);

  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  double as_double() const;  // Int, Float or Bool
  std::string type_name() const;  // "int", "float", "Tensor", "tuple", ... for messages
};

// The dtype a value names: torch.float16 and the like, or Python's float (float64) and int (int64),
// which torch accepts as dtypes too.
std::optional<DType> python_type_dtype(const Value& v);

// Arguments of one call bound to the op's signature (positional and keyword, defaults applied).
class Args {
 public:
  Args(std::string op, ref::Pos call_pos) : op_(std::move(op)), call_pos_(call_pos) {}

  void set(const std::string& name, Value v, ref::Pos pos);
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  const Value& get(const std::string& name) const;
  bool is_none(const std::string& name) const { return get(name).kind == Value::Kind::None; }
  ref::Pos pos(const std::string& name) const;  // where the argument was written, else the call
  const std::string& op() const { return op_; }
  ref::Pos call_pos() const { return call_pos_; }

  // Typed access; a wrong type throws ReferenceError "argument 'dim' of softmax must be int, got float".
  int tensor(const std::string& name) const;
  int opt_tensor(const std::string& name) const;  // -1 for None
  int64_t integer(const std::string& name) const;
  std::optional<int64_t> opt_integer(const std::string& name) const;
  double number(const std::string& name) const;  // int or float
  std::optional<double> opt_number(const std::string& name) const;
  bool boolean(const std::string& name) const;
  std::string str(const std::string& name) const;
  std::vector<int64_t> ints(const std::string& name) const;      // an int, or a tuple/list of ints
  std::vector<int64_t> int_list(const std::string& name) const;  // a tuple/list of ints only
  std::optional<std::vector<int64_t>> opt_ints(const std::string& name) const;
  DType dtype(const std::string& name) const;  // torch.float16 and the like
  std::optional<DType> opt_dtype(const std::string& name) const;
  std::vector<int> tensors(const std::string& name) const;  // a tuple or list of tensors
  [[noreturn]] void fail(const std::string& name, const std::string& message) const;

 private:
  std::string op_;
  ref::Pos call_pos_;
  std::map<std::string, Value> values_;
  std::map<std::string, ref::Pos> positions_;
};

// Given to an op's lowering function: adds nodes to the graph and reports errors at the call.
class Lowering {
 public:
  Lowering(Graph& g, ref::Pos pos) : graph_(g), pos_(pos) {}

  Graph& graph() { return graph_; }
  const ValueInfo& info(int tensor) const { return graph_.values.at(tensor); }
  const Shape& shape(int tensor) const { return info(tensor).shape; }
  DType dtype(int tensor) const { return info(tensor).dtype; }
  int64_t rank(int tensor) const { return static_cast<int64_t>(shape(tensor).size()); }
  ref::Pos pos() const { return pos_; }

  // Adds a node; returns the ids of its outputs (one per entry of `outputs`).
  std::vector<int> emit(const std::string& op, std::vector<int> inputs,
                        std::map<std::string, AttrValue> attrs,
                        std::vector<std::pair<DType, Shape>> outputs);
  int emit1(const std::string& op, std::vector<int> inputs, std::map<std::string, AttrValue> attrs,
            DType dtype, Shape shape);
  // A rank-0 constant tensor holding a Python scalar.
  int constant(const Value& scalar, DType dtype);
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail(ref::Pos at, const std::string& message) const;

 private:
  Graph& graph_;
  ref::Pos pos_;
};

using LowerFn = std::function<Value(Lowering&, const Args&)>;

struct OpDef {
  std::string name;       // the name users call it by, for messages ("softmax")
  std::string signature;  // Python-like: "input, dim=None, keepdim=False"; `*` starts keyword-only
                          // parameters; `*shape` collects the remaining positionals into a tuple
                          // (`*args=()` may be empty); `**` accepts any other keyword
  LowerFn lower;
};

// The registry of callables, keyed by qualified name: "torch.sum", "torch.nn.functional.relu",
// "Tensor.sum" (a method: `self` binds to the receiver), "math.sqrt".
class OpTable {
 public:
  void add(const std::vector<std::string>& qualified_names, const std::string& signature, LowerFn fn);
  const OpDef* find(const std::string& qualified_name) const { return ops_.find(qualified_name); }
  std::vector<std::string> names() const { return ops_.names(); }

 private:
  NameTable<OpDef> ops_;
};

const OpTable& op_table();

// Binds call arguments to a signature; throws ReferenceError for unknown or duplicate keywords,
// too many or missing positionals.
struct CallArg {
  Value value;
  ref::Pos pos;
};
Args bind_arguments(const OpDef& op, const std::vector<CallArg>& positional,
                    const std::vector<std::pair<std::string, CallArg>>& keywords, ref::Pos call_pos);

// One entry of a tensor subscript x[...]: an int, a slice, None or an ellipsis.
struct TensorIndex {
  enum class Kind { Int, Slice, None, Ellipsis };
  Kind kind = Kind::Int;
  int64_t index = 0;                          // Int
  std::optional<int64_t> start, stop, step;  // Slice; absent bounds are None
  ref::Pos pos;                              // where the entry was written
};
// Lowers basic indexing as torch does it: ints select (removing the dim), slices slice, None
// adds a dim of size 1, `...` stands for every dim not indexed otherwise (ops_slice.cpp).
Value lower_subscript(Lowering& L, int x, const std::vector<TensorIndex>& index);

// --- shape and type rules shared by the op families ---------------------------------------
Shape broadcast_shapes(const Lowering& L, const Shape& a, const Shape& b);
// Python-style negative dims. An error points at `at`, where the dim argument was written; the
// overloads without it point at the call.
int64_t normalize_dim(const Lowering& L, int64_t dim, int64_t rank, ref::Pos at);
int64_t normalize_dim(const Lowering& L, int64_t dim, int64_t rank);
std::vector<int64_t> normalize_dims(const Lowering& L, const std::vector<int64_t>& dims, int64_t rank, ref::Pos at);
std::vector<int64_t> normalize_dims(const Lowering& L, const std::vector<int64_t>& dims, int64_t rank);
// The int argument `name` as a dim of tensor x, normalized; an error points at the argument.
int64_t dim_arg(const Lowering& L, const Args& a, const std::string& name, int x);
Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim);  // dims normalized
DType promote_types(DType a, DType b);
// Lowers `a OP b` where either side may be a Python scalar; op is a canonical binary op
// (add sub mul div floor_divide remainder pow maximum minimum eq ne lt le gt ge).
Value lower_binary(Lowering& L, const std::string& op, const Value& a, const Value& b);
// x converted to dtype `t` (a `cast` node), or x itself when it has that dtype, as torch's .to().
int lower_cast(Lowering& L, int x, DType t);
// Lowers an elementwise op of one tensor that keeps shape and (floating) dtype.
int lower_unary(Lowering& L, const std::string& op, int x, std::map<std::string, AttrValue> attrs = {});

}  // namespace kevo
