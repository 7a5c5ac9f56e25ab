// Integer expressions over axes ("H - 2", "(L + 2*P - K) // S + 1"): sizes in contracts and plans.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kevo {

// A parsed expression. Grammar: integers, axis names, + - * // % and parentheses, unary minus.
class AxisExpr {
 public:
  // Throws std::invalid_argument with a message (and the 0-based offset in it) for bad text.
  static AxisExpr parse(const std::string& text);

  // Evaluates with the given axis values; throws std::invalid_argument for an unknown name,
  // division by zero or 64-bit overflow.
  int64_t eval(const std::map<std::string, int64_t>& axes) const;
  const std::vector<std::string>& names() const { return names_; }  // axis names it uses
  const std::string& text() const { return text_; }

  // A value built bottom-up from the expression tree, in the order eval() computes it: `number`
  // (int64_t) and `name` (const std::string&) make the leaves' values, `negate` (T) a unary
  // minus's, `binary` (const std::string& op, T, T) that of + - * // %. The way to turn the
  // expression into something else (C++ text, a folded form) without a second parser.
  template <typename T, typename Number, typename Name, typename Negate, typename Binary>
  T reduce(Number number, Name name, Negate negate, Binary binary) const;

  // One operation of eval()'s arithmetic ("+", "-", "*", and Python's floor "//" and "%"):
  // false on division by zero or 64-bit overflow.
  static bool apply(const std::string& op, int64_t a, int64_t b, int64_t* out);

 private:
  struct Token {
    enum Kind { Num, Name, Op } kind;
    int64_t num = 0;
    std::string text;
  };
  std::string text_;
  std::vector<Token> rpn_;  // postfix form; "neg" is unary minus
  std::vector<std::string> names_;
};

template <typename T, typename Number, typename Name, typename Negate, typename Binary>
T AxisExpr::reduce(Number number, Name name, Negate negate, Binary binary) const {
  std::vector<T> stack;
  for (const Token& t : rpn_) {
    if (t.kind == Token::Num) {
      stack.push_back(number(t.num));
    } else if (t.kind == Token::Name) {
      stack.push_back(name(t.text));
    } else if (t.text == "neg") {
      stack.back() = negate(std::move(stack.back()));
    } else {
      T b = std::move(stack.back());
      stack.pop_back();
      stack.back() = binary(t.text, std::move(stack.back()), std::move(b));
    }
  }
  return std::move(stack.back());
}

}  // namespace kevo
