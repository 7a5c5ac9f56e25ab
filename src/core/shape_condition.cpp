// Evaluating a shape condition on one shape.
#include "core/shape_condition.h"

#include <stdexcept>

#include "core/axis_expr.h"

namespace kevo {

bool ShapeCondition::holds(const std::map<std::string, int64_t>& axes) const {
  int64_t a = 0, b = 0;
  try {
    a = AxisExpr::parse(lhs).eval(axes);
    b = AxisExpr::parse(rhs).eval(axes);
  } catch (const std::invalid_argument&) {
    return false;
  }
  return compare(a, op, b);
}

bool compare(int64_t a, const std::string& op, int64_t b) {
  if (op == "<=") return a <= b;
  if (op == "<") return a < b;
  if (op == ">=") return a >= b;
  if (op == ">") return a > b;
  if (op == "==") return a == b;
  return a != b;
}

}  // namespace kevo
