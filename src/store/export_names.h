// Names and sizes in the exported launcher (store/ only): contract names made C++ names that clash
// with nothing, and axis expressions as C++ over them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/axis_expr.h"
#include "core/candidate.h"
#include "core/task.h"

namespace kevo::store::exporter {

// C++ names for the launcher: contract names where they are free, else suffixed with '_'.
class Names {
 public:
  Names();  // C++ keywords and the names the header itself uses are taken
  // Takes `want` (made an identifier) or the first of want_, want__, ... that is free.
  std::string take(const std::string& want);
  void reserve(const std::string& name) { taken_.insert(name); }

 private:
  std::set<std::string> taken_;
};

// An axis expression as C++ over int64_t values. `//` and `%` are Python's (floor), so they
// become kevo_export::floordiv/mod; literal-only parts are folded (core's AxisExpr::apply) so that
// what remains always has an int64_t operand (no int overflow in literals).
struct CppExpr {
  std::string text;
  int precedence = 4;              // 1 + -, 2 *, 3 unary minus and negative literals, 4 atoms
  std::optional<int64_t> literal;  // set when the whole expression folded to a number
};
CppExpr axis_expr_cpp(const AxisExpr& e, const std::function<std::string(const std::string&)>& name);

// Everything the launcher's code generation needs to know about names and sizes.
class LauncherNames {
 public:
  LauncherNames(const Task& task, const Candidate& c);

  bool uses_num_sms_anywhere() const;  // in a launch, an argument or a scratch size
  bool scratch_uses_num_sms() const;

  // An axis expression as C++ (int64_t arithmetic over the launcher's names).
  std::string cpp(const std::string& text) const { return cpp(AxisExpr::parse(text)); }
  std::string cpp(const AxisExpr& e) const;
  std::string cpp(const PlanExpr& e) const { return cpp(e.expr); }
  bool is_literal(const std::string& text) const { return is_literal(AxisExpr::parse(text)); }
  bool is_literal(const AxisExpr& e) const;
  std::string dim_cpp(const Dim& d) const { return d.expr.empty() ? std::to_string(d.size) : cpp(d.expr); }
  // A launch dimension: `unsigned(...)` unless a literal.
  std::string unsigned_cpp(const PlanExpr& e) const {
    return is_literal(e.expr) ? cpp(e) : "unsigned(" + cpp(e) + ")";
  }

  // The var axes as parameters ("int64_t B, int64_t D"), as arguments ("B, D"), and as parameters
  // with their names in comments (for a function that ignores them).
  std::string axis_params() const;
  std::string axis_args() const;
  std::string axis_params_commented() const;

  // The pointer a step passes for a buffer name, and the buffer's shape as C++ expressions.
  std::string pointer(const std::string& buffer) const;
  std::vector<std::string> shape(const std::string& buffer) const;

  const std::vector<const Axis*>& var_axes() const { return var_axes_; }
  const std::vector<const Axis*>& const_axes() const { return const_axes_; }
  const std::string& axis_name(const std::string& a) const { return axis_.at(a); }
  const std::string& tensor_name(const std::string& t) const { return tensor_.at(t); }
  const std::string& scratch_name(const std::string& s) const { return scratch_.at(s); }
  const std::string& num_sms() const { return num_sms_; }
  const std::string& err() const { return err_; }
  const std::string& offsets() const { return offsets_; }
  const std::string& library() const { return library_; }
  bool has_library() const { return has_library_; }
  const Names& names() const { return names_; }

 private:
  bool uses_num_sms(const AxisExpr& e) const;
  std::string name_of_axis(const std::string& n) const;

  const Task& task_;
  const Candidate& c_;
  Names names_;
  std::map<std::string, bool> has_axis_;
  std::map<std::string, std::string> tensor_, axis_, scratch_;
  std::vector<const Axis*> var_axes_, const_axes_;
  std::string num_sms_, err_, offsets_, library_;
  bool has_library_ = false;
};

// A tensor's shape in the contract's terms ("[B, D]") and a plan's list of expressions ("[B, 1]").
std::string shape_text(const TensorDecl& t);
std::string plan_expr_list(const std::vector<PlanExpr>& v);

}  // namespace kevo::store::exporter
