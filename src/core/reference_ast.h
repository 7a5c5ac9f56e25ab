// Syntax tree of a contract's reference program: the Python subset kevo interprets.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kevo::ref {

// 1-based line and column inside the reference text.
struct Pos {
  int line = 1;
  int col = 1;
};

enum class ExprKind {
  Name,       // name: identifier
  Int,        // int_value
  Float,      // float_value
  Bool,       // bool_value
  None,
  String,     // name: the string's value (quotes and escapes resolved)
  Tuple,      // items: elements
  List,       // items: elements
  Attribute,  // items[0]: object; name: attribute
  Call,       // items: positional arguments; callee; keywords
  Binary,     // items[0] op items[1]; bin_op
  Unary,      // un_op items[0]
  Compare,    // items[0] cmp_op items[1] (chained comparisons are rejected by the parser)
  Subscript,  // items[0][items[1]]
  Slice,      // items: lower, upper, step; each may be null (only inside a Subscript)
  Ellipsis,   // `...` (meaningful inside a tensor subscript: x[..., 0])
};

enum class BinOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, MatMul };
enum class UnOp { Neg, Pos };
enum class CmpOp { Eq, Ne, Lt, Le, Gt, Ge };

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Keyword {
  std::string name;
  ExprPtr value;
  Pos pos;  // of the keyword's name
};

struct Expr {
  ExprKind kind = ExprKind::None;
  Pos pos;  // of the expression's first token (for Binary/Compare: of the operator)
  std::string name;
  int64_t int_value = 0;
  double float_value = 0.0;
  bool bool_value = false;
  BinOp bin_op = BinOp::Add;
  UnOp un_op = UnOp::Neg;
  CmpOp cmp_op = CmpOp::Eq;
  std::vector<ExprPtr> items;
  ExprPtr callee;
  std::vector<Keyword> keywords;
};

enum class StmtKind {
  Assign,  // targets = value  (one target, or several for tuple unpacking: `a, b = ...`)
  Return,  // return value    (a Tuple when several values are returned; null for bare return)
  Pass,
};

struct Stmt {
  StmtKind kind = StmtKind::Pass;
  Pos pos;
  std::vector<std::string> targets;
  std::vector<Pos> target_pos;
  ExprPtr value;
};

struct Program {
  std::string function_name;           // normally "run"
  Pos function_pos;
  std::vector<std::string> params;     // positional parameter names, in order
  std::vector<Pos> param_pos;
  std::vector<Stmt> body;
  // Module aliases from import lines before the def ("F" -> "torch.nn.functional",
  // "torch" -> "torch", "math" -> "math"). Without imports the defaults torch, F, math hold.
  std::map<std::string, std::string> modules;
};

}  // namespace kevo::ref
