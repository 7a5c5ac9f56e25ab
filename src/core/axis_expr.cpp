// Parsing (shunting-yard, no recursion) and checked evaluation of integer axis expressions.
#include "core/axis_expr.h"

#include <cctype>
#include <stdexcept>

namespace kevo {

namespace {

int precedence(const std::string& op) {
  if (op == "neg") return 3;
  if (op == "*" || op == "//" || op == "%") return 2;
  return 1;  // + -
}

[[noreturn]] void bad(const std::string& text, size_t at, const std::string& what) {
  throw std::invalid_argument("in '" + text + "' at offset " + std::to_string(at) + ": " + what);
}

}  // namespace

AxisExpr AxisExpr::parse(const std::string& text) {
  AxisExpr e;
  e.text_ = text;
  std::vector<std::string> ops;  // operator stack; "(" marks a group
  bool expect_operand = true;
  size_t i = 0;
  auto pop_while = [&](int prec) {
    while (!ops.empty() && ops.back() != "(" && precedence(ops.back()) >= prec) {
      e.rpn_.push_back({Token::Op, 0, ops.back()});
      ops.pop_back();
    }
  };
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (expect_operand) {
      if (std::isdigit(static_cast<unsigned char>(c))) {
        int64_t v = 0;
        size_t start = i;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
          if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text[i] - '0', &v))
            bad(text, start, "integer overflows 64 bits");
          ++i;
        }
        e.rpn_.push_back({Token::Num, v, ""});
        expect_operand = false;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t start = i;
        while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
        std::string name = text.substr(start, i - start);
        e.rpn_.push_back({Token::Name, 0, name});
        e.names_.push_back(name);
        expect_operand = false;
      } else if (c == '(') {
        ops.push_back("(");
        ++i;
      } else if (c == '-') {
        ops.push_back("neg");  // right-associative prefix: no popping
        ++i;
      } else if (c == '+') {
        ++i;  // unary plus
      } else {
        bad(text, i, std::string("expected a number, an axis or '(', got '") + c + "'");
      }
      continue;
    }
    if (c == ')') {
      pop_while(0);
      if (ops.empty()) bad(text, i, "unbalanced ')'");
      ops.pop_back();
      ++i;
      continue;
    }
    std::string op;
    if (c == '+' || c == '-' || c == '*' || c == '%') op = std::string(1, c);
    else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') op = "//";
    else if (c == '/') bad(text, i, "use '//' for integer division");
    else bad(text, i, std::string("unexpected '") + c + "'");
    pop_while(precedence(op));
    ops.push_back(op);
    i += op.size();
    expect_operand = true;
  }
  if (expect_operand) bad(text, text.size(), text.find_first_not_of(" \t") == std::string::npos ? "empty expression" : "expression ends early");
  pop_while(0);
  if (!ops.empty()) bad(text, text.size(), "unbalanced '('");
  return e;
}

bool AxisExpr::apply(const std::string& op, int64_t a, int64_t b, int64_t* out) {
  if (op == "+") return !__builtin_add_overflow(a, b, out);
  if (op == "-") return !__builtin_sub_overflow(a, b, out);
  if (op == "*") return !__builtin_mul_overflow(a, b, out);
  if (b == 0 || (a == INT64_MIN && b == -1)) return false;
  int64_t q = a / b, m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) {  // Python's floor division; the remainder takes b's sign
    --q;
    m += b;
  }
  *out = op == "//" ? q : m;
  return true;
}

int64_t AxisExpr::eval(const std::map<std::string, int64_t>& axes) const {
  return reduce<int64_t>(
      [](int64_t v) { return v; },
      [&](const std::string& name) {
        auto it = axes.find(name);
        if (it == axes.end()) throw std::invalid_argument("unknown axis '" + name + "' in '" + text_ + "'");
        return it->second;
      },
      [&](int64_t v) {
        if (v == INT64_MIN) throw std::invalid_argument("'" + text_ + "' overflows 64 bits");
        return -v;
      },
      [&](const std::string& op, int64_t a, int64_t b) {
        if ((op == "//" || op == "%") && b == 0) throw std::invalid_argument("division by zero in '" + text_ + "'");
        int64_t r = 0;
        if (!apply(op, a, b, &r)) throw std::invalid_argument("'" + text_ + "' overflows 64 bits");
        return r;
      });
}

}  // namespace kevo
