// Integer expressions over axes ("H - 2", "(L + 2*P - K) // S + 1"): sizes in contracts and plans.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
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

}  // namespace kevo
