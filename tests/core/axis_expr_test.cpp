// Integer axis expressions: precedence, Python floor semantics, and errors instead of UB.
#include "core/axis_expr.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kevo {
namespace {

int64_t eval(const std::string& text, std::map<std::string, int64_t> axes = {}) {
  return AxisExpr::parse(text).eval(axes);
}

TEST(AxisExpr, EvaluatesWithPrecedenceAndParentheses) {
  EXPECT_EQ(eval("H - 2", {{"H", 16}}), 14);
  EXPECT_EQ(eval("(L + 2*P - K) // S + 1", {{"L", 512}, {"P", 1}, {"K", 4}, {"S", 1}}), 511);
  EXPECT_EQ(eval("2 + 3 * 4"), 14);
  EXPECT_EQ(eval("-2 * 3"), -6);
  EXPECT_EQ(eval("2 * -3"), -6);
  EXPECT_EQ(eval("10 - 4 - 3"), 3);
  EXPECT_EQ(eval("N*C*H*W", {{"N", 2}, {"C", 3}, {"H", 4}, {"W", 5}}), 120);
}

TEST(AxisExpr, FloorDivisionAndModuloFollowPython) {
  EXPECT_EQ(eval("-7 // 2"), -4);
  EXPECT_EQ(eval("-7 % 2"), 1);
  EXPECT_EQ(eval("7 // -2"), -4);
}

TEST(AxisExpr, ListsTheAxesItUses) {
  EXPECT_EQ(AxisExpr::parse("(A + B) * A").names(), (std::vector<std::string>{"A", "B", "A"}));
}

TEST(AxisExpr, RejectsBadTextAndBadArithmetic) {
  for (const char* bad : {"", "H -", "(H", "H)", "H / 2", "2 ** 3", "H $ 2", "99999999999999999999"})
    EXPECT_THROW(AxisExpr::parse(bad), std::invalid_argument) << bad;
  EXPECT_THROW(eval("H // 0", {{"H", 1}}), std::invalid_argument);
  EXPECT_THROW(eval("Q"), std::invalid_argument);
  EXPECT_THROW(eval("H * H", {{"H", int64_t{1} << 40}}), std::invalid_argument);
}

// The postfix walk sees the tree eval() computes: here printed fully parenthesised.
std::string tree(const std::string& text) {
  return AxisExpr::parse(text).reduce<std::string>(
      [](int64_t v) { return std::to_string(v); }, [](const std::string& n) { return n; },
      [](const std::string& a) { return "(-" + a + ")"; },
      [](const std::string& op, const std::string& a, const std::string& b) { return "(" + a + " " + op + " " + b + ")"; });
}

TEST(AxisExpr, ReduceWalksTheTreeEvalComputes) {
  EXPECT_EQ(tree("(L + 2*P - K) // S + 1"), "((((L + (2 * P)) - K) // S) + 1)");
  EXPECT_EQ(tree("10 - 4 - 3"), "((10 - 4) - 3)");
  EXPECT_EQ(tree("-2 * -x % 3"), "(((-2) * (-x)) % 3)");
  EXPECT_EQ(tree("+(M)"), "M");
  // Folding the literal-only parts through apply() gives what eval() gives.
  const AxisExpr e = AxisExpr::parse("(7 * 3 - 1) // -3 + 20 % -6");
  const int64_t folded = e.reduce<int64_t>(
      [](int64_t v) { return v; }, [](const std::string&) -> int64_t { throw std::logic_error("no names"); },
      [](int64_t v) { return -v; },
      [](const std::string& op, int64_t a, int64_t b) {
        int64_t r = 0;
        EXPECT_TRUE(AxisExpr::apply(op, a, b, &r)) << op;
        return r;
      });
  EXPECT_EQ(folded, e.eval({}));
  EXPECT_EQ(folded, -7 + -4);
}

TEST(AxisExpr, ApplyIsPythonsArithmeticWithoutOverflow) {
  int64_t r = 0;
  EXPECT_TRUE(AxisExpr::apply("%", -7, 2, &r));
  EXPECT_EQ(r, 1);
  EXPECT_TRUE(AxisExpr::apply("//", 7, -2, &r));
  EXPECT_EQ(r, -4);
  EXPECT_TRUE(AxisExpr::apply("%", INT64_MAX, -2, &r));  // a - (a // b) * b would overflow here
  EXPECT_EQ(r, -1);
  EXPECT_FALSE(AxisExpr::apply("//", 1, 0, &r));
  EXPECT_FALSE(AxisExpr::apply("%", INT64_MIN, -1, &r));
  EXPECT_FALSE(AxisExpr::apply("*", INT64_MAX, 2, &r));
  EXPECT_FALSE(AxisExpr::apply("-", INT64_MIN, 1, &r));
}

}  // namespace
}  // namespace kevo
