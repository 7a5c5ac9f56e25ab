// Conditions on a task's axes under which a kernel is correct ("(B * D) % 4 == 0"): what a
// template's constraints become once its knobs are fixed, and what an exported header checks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kevo {

// a OP b for op one of <= < >= > == != (anything else reads as !=): a shape condition's and a
// manifest constraint's comparison.
bool compare(int64_t a, const std::string& op, int64_t b);

// lhs OP rhs, both integer expressions over the task's axes (AxisExpr's grammar).
struct ShapeCondition {
  std::string lhs, op, rhs;  // op: <= < >= > == !=
  std::string why;           // said in the header's comment
  // Whether it holds for these axis values; false when an expression cannot be evaluated there
  // (division by zero, 64-bit overflow).
  bool holds(const std::map<std::string, int64_t>& axes) const;
  std::string text() const { return lhs + " " + op + " " + rhs; }
};

// What a candidate is known to be correct under, beyond the validated workloads.
struct ShapeConditions {
  std::vector<ShapeCondition> conditions;
  // Facts that a constraint reads but that have no axis expression ("line", a gcd): while any is
  // here, the kernel is known correct only on the validated workloads.
  std::vector<std::string> pinned;
};

}  // namespace kevo
