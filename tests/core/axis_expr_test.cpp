// Integer axis expressions: precedence, Python floor semantics, and errors instead of UB.
#include "core/axis_expr.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kevo
