// The op graph a reference program lowers to: SSA values with shapes and dtypes, and nodes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/reference_ast.h"

namespace kevo {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);  // product of the dims; 1 for a scalar (rank 0)
std::string shape_string(const Shape& s);  // "[4096, 393216]"

// A tensor value of the graph.
struct ValueInfo {
  std::string name;   // the reference's variable name, or a generated "%N"
  DType dtype = DType::Float32;
  Shape shape;
  int producer = -1;  // index of the producing node; -1 for a graph input
};

// Attribute of a node. A list of ints is also how dims, shapes and kernel sizes are held.
using AttrValue = std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>>;
std::string attr_string(const AttrValue& a);

struct Node {
  std::string op;                       // canonical op name (docs/reference.md lists them)
  std::vector<int> inputs;              // value ids; -1 for an optional operand given as None
  std::map<std::string, AttrValue> attrs;
  std::vector<int> outputs;             // value ids
  ref::Pos pos;                         // where in the reference the op was called
};

struct Graph {
  std::vector<ValueInfo> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // the contract's inputs, in the order of run()'s parameters
  std::vector<int> outputs;  // the returned values, in order

  // Adds a value and returns its id.
  int add_value(ValueInfo v);
  // Text form: one line per node, "%3 = softmax(%0) {dim=1} : float32[16, 16384]".
  std::string to_string() const;
  // Floating-point operations of the matmuls, einsums, attentions and convolutions (transposed
  // ones too), 2 per multiply-add.
  int64_t matmul_conv_flops() const;
};

// Helpers for lowering code.
int64_t attr_int(const Node& n, const std::string& key);
double attr_float(const Node& n, const std::string& key);
const std::vector<int64_t>& attr_ints(const Node& n, const std::string& key);
bool attr_bool(const Node& n, const std::string& key);
const std::string& attr_str(const Node& n, const std::string& key);
bool attr_is_none(const Node& n, const std::string& key);  // absent or None
// A number attribute (int or float), or `fallback` where it is absent, None or not a number.
double attr_float_or(const Node& n, const std::string& key, double fallback);

}  // namespace kevo
