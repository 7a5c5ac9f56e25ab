// Lexer and recursive-descent parser for the reference program (the Python subset of contracts).
#include "core/reference_parser.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/error.h"

namespace kevo::ref {

namespace {

// Bounds both parser recursion and the height of any expression tree, so that neither parsing
// nor a recursive walk (or destruction) of the tree can exhaust the stack on hostile input.
constexpr int kMaxDepth = 200;

// A too-long exponent is clamped; beyond this strtod already gives inf or 0.
constexpr int64_t kMaxExponent = 100000;

template <typename Op>
struct Spelling {
  const char* text;
  Op op;
};
constexpr Spelling<CmpOp> kComparisons[] = {{"==", CmpOp::Eq}, {"!=", CmpOp::Ne},
                                            {"<", CmpOp::Lt},  {"<=", CmpOp::Le},
                                            {">", CmpOp::Gt},  {">=", CmpOp::Ge}};
constexpr Spelling<BinOp> kAdditive[] = {{"+", BinOp::Add}, {"-", BinOp::Sub}};
constexpr Spelling<BinOp> kMultiplicative[] = {{"*", BinOp::Mul},
                                               {"/", BinOp::Div},
                                               {"//", BinOp::FloorDiv},
                                               {"%", BinOp::Mod},
                                               {"@", BinOp::MatMul}};

[[noreturn]] void fail(Pos at, const std::string& message) {
  throw ReferenceError(at.line, at.col, message);
}

std::string pos_text(Pos p) { return std::to_string(p.line) + ":" + std::to_string(p.col); }

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// Renders a byte for a message: printable ASCII as itself, anything else as \xNN.
std::string show_byte(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string(1, c);
  const char* hex = "0123456789abcdef";
  return std::string("\\x") + hex[u >> 4] + hex[u & 15];
}

const std::set<std::string>& python_keywords() {
  static const std::set<std::string> kw = {
      "False", "None",   "True",    "and",      "as",       "assert", "async", "await",
      "break", "class",  "continue", "def",     "del",      "elif",   "else",  "except",
      "finally", "for",  "from",    "global",   "if",       "import", "in",    "is",
      "lambda", "nonlocal", "not",  "or",       "pass",     "raise",  "return", "try",
      "while", "with",   "yield"};
  return kw;
}
bool is_keyword(const std::string& s) { return python_keywords().count(s) > 0; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// ---------------------------------------------------------------------------------------------
// Lexer

enum class Tok { Name, Int, Float, String, Op, Newline, Indent, Dedent, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // spelling (Name, Op, numbers) or the resolved value (String)
  Pos pos;
  int64_t int_value = 0;
  double float_value = 0.0;
  bool triple = false;  // a triple-quoted string: legal only as a docstring
};

// Produces tokens on demand, so the first error in the text is the one reported.
// Columns count bytes (a tab is one column).
class Lexer {
 public:
  explicit Lexer(const std::string& text) : s_(text) {}

  Token next() {
    if (pending_dedents_ > 0) {
      --pending_dedents_;
      return make(Tok::Dedent, "", dedent_pos_);
    }
    for (;;) {
      if (at_line_start_ && brackets_.empty()) {
        if (std::optional<Token> t = start_line()) return *t;
        if (at_line_start_) continue;  // a blank or comment-only line was skipped
      }
      skip_spaces();
      if (i_ >= s_.size()) return at_eof();
      char c = s_[i_];
      if (c == '#') {
        skip_comment();
        continue;
      }
      if (c == '\\') {
        Pos at = here();
        ++i_;
        if (i_ < s_.size() && !consume_newline())
          fail(at, "unexpected character after line continuation character");
        if (i_ >= s_.size()) fail(at, "unexpected end of input after line continuation character");
        continue;
      }
      if (c == '\n' || c == '\r') {
        consume_newline();
        if (!brackets_.empty()) continue;  // implicit continuation inside brackets
        at_line_start_ = true;
        if (!line_has_tokens_) continue;
        line_has_tokens_ = false;
        return make(Tok::Newline, "", last_end_);
      }
      Token t = lex_token();
      line_has_tokens_ = true;
      last_end_ = here();
      return t;
    }
  }

 private:
  struct Bracket {
    char open;
    Pos pos;
  };

  Pos here() const { return Pos{line_, static_cast<int>(i_ - line_begin_) + 1}; }

  static Token make(Tok kind, std::string text, Pos pos) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.pos = pos;
    return t;
  }

  bool at_newline() const { return i_ < s_.size() && (s_[i_] == '\n' || s_[i_] == '\r'); }

  // Accepts \n, \r\n and a lone \r as one line break.
  bool consume_newline() {
    if (i_ >= s_.size()) return false;
    if (s_[i_] == '\r') {
      ++i_;
      if (i_ < s_.size() && s_[i_] == '\n') ++i_;
    } else if (s_[i_] == '\n') {
      ++i_;
    } else {
      return false;
    }
    ++line_;
    line_begin_ = i_;
    return true;
  }

  void skip_spaces() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }

  void skip_comment() {
    while (i_ < s_.size() && !at_newline()) {
      if (s_[i_] == '\0') fail(here(), "unexpected character '\\x00'");
      ++i_;
    }
  }

  // Handles indentation at the start of a logical line; gives an Indent or the first Dedent
  // when the level changes.
  std::optional<Token> start_line() {
    size_t j = i_;
    while (j < s_.size() && (s_[j] == ' ' || s_[j] == '\t')) ++j;
    if (j >= s_.size() || s_[j] == '#' || s_[j] == '\n' || s_[j] == '\r') {
      i_ = j;
      if (i_ < s_.size() && s_[i_] == '#') skip_comment();
      if (i_ >= s_.size()) {
        at_line_start_ = false;  // let next() reach the end-of-input handling
        line_has_tokens_ = false;
        return std::nullopt;
      }
      consume_newline();
      return std::nullopt;  // at_line_start_ stays true: the next line starts afresh
    }
    std::string indent = s_.substr(i_, j - i_);
    for (size_t k = 0; k < indent.size(); ++k) {
      if (indent_char_ == 0) indent_char_ = indent[k];
      if (indent[k] != indent_char_)
        fail(Pos{line_, static_cast<int>(i_ - line_begin_ + k) + 1},
             "inconsistent use of tabs and spaces in indentation");
    }
    i_ = j;
    at_line_start_ = false;
    Pos at = here();
    if (indent.size() > indents_.back().size()) {
      indents_.push_back(indent);
      return make(Tok::Indent, "", at);
    }
    int pops = 0;
    while (indent.size() < indents_.back().size()) {
      indents_.pop_back();
      ++pops;
    }
    if (indent != indents_.back()) fail(at, "unindent does not match any outer indentation level");
    if (pops == 0) return std::nullopt;
    pending_dedents_ = pops - 1;
    dedent_pos_ = at;
    return make(Tok::Dedent, "", at);
  }

  Token at_eof() {
    if (!brackets_.empty()) {
      const Bracket& b = brackets_.back();
      fail(b.pos, std::string("'") + b.open + "' was never closed");
    }
    if (line_has_tokens_) {
      line_has_tokens_ = false;
      return make(Tok::Newline, "", last_end_);
    }
    if (indents_.size() > 1) {
      indents_.pop_back();
      return make(Tok::Dedent, "", here());
    }
    return make(Tok::End, "", here());
  }

  Token lex_token() {
    Pos at = here();
    char c = s_[i_];
    if (is_ident_start(c)) {
      size_t b = i_;
      while (i_ < s_.size() && is_ident_char(s_[i_])) ++i_;
      std::string word = s_.substr(b, i_ - b);
      if (i_ < s_.size() && (s_[i_] == '\'' || s_[i_] == '"') && word.size() <= 2)
        return lex_prefixed_string(word, at);
      return make(Tok::Name, word, at);
    }
    if (is_digit(c) || (c == '.' && i_ + 1 < s_.size() && is_digit(s_[i_ + 1])))
      return lex_number(at);
    if (c == '\'' || c == '"') return lex_string(at, false);
    return lex_operator(at);
  }

  Token lex_operator(Pos at) {
    static const char* const kOps[] = {
        "**=", "//=", ">>=", "<<=", "...", "->", ":=", "**", "//", "==", "!=", "<=", ">=",
        "<<",  ">>",  "+=",  "-=",  "*=",  "/=", "%=", "@=", "&=", "|=", "^=", "+",  "-",
        "*",   "/",   "%",   "@",   "<",   ">",  "=",  "(",  ")",  "[",  "]",  "{",  "}",
        ",",   ":",   ".",   ";",   "&",   "|",  "^",  "~"};
    for (const char* op : kOps) {
      size_t n = std::char_traits<char>::length(op);
      if (s_.compare(i_, n, op) != 0) continue;
      i_ += n;
      track_bracket(op[0], n, at);
      return make(Tok::Op, op, at);
    }
    fail(at, "unexpected character '" + show_byte(s_[i_]) + "'");
  }

  void track_bracket(char c, size_t len, Pos at) {
    if (len != 1) return;
    if (c == '(' || c == '[' || c == '{') {
      brackets_.push_back(Bracket{c, at});
      return;
    }
    char want = c == ')' ? '(' : c == ']' ? '[' : c == '}' ? '{' : 0;
    if (want == 0) return;
    if (brackets_.empty()) fail(at, std::string("unmatched '") + c + "'");
    const Bracket& b = brackets_.back();
    if (b.open != want)
      fail(at, std::string("closing '") + c + "' does not match '" + b.open + "' opened at " +
                   pos_text(b.pos));
    brackets_.pop_back();
  }

  // Reads digits of `base` with single underscores between them into `out` (underscores
  // dropped). Returns false when an underscore is not followed by a digit.
  bool read_digits(int base, std::string& out) {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '_') {
        if (i_ + 1 >= s_.size() || digit_value(s_[i_ + 1]) >= base) return false;
        ++i_;
        continue;
      }
      if (digit_value(c) >= base) break;
      out += c;
      ++i_;
    }
    return true;
  }

  Token lex_number(Pos at) {
    const size_t begin = i_;
    const std::string bad = "invalid number literal";
    int base = 10;
    std::string digits, frac;
    bool is_float = false;
    int64_t exponent = 0;
    if (s_[i_] == '0' && i_ + 1 < s_.size() &&
        std::string("xXoObB").find(s_[i_ + 1]) != std::string::npos) {
      char p = static_cast<char>(s_[i_ + 1] | 0x20);
      base = p == 'x' ? 16 : p == 'o' ? 8 : 2;
      i_ += 2;
      if (i_ < s_.size() && s_[i_] == '_') ++i_;  // Python allows 0x_ff
      if (!read_digits(base, digits) || digits.empty()) fail(at, bad);
    } else {
      if (!read_digits(10, digits)) fail(at, bad);
      if (i_ < s_.size() && s_[i_] == '.') {
        is_float = true;
        ++i_;
        if (i_ < s_.size() && s_[i_] == '_') fail(at, bad);
        if (!read_digits(10, frac)) fail(at, bad);
      }
      if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
        is_float = true;
        ++i_;
        bool negative = false;
        if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) negative = s_[i_++] == '-';
        std::string exp_digits;
        if (i_ >= s_.size() || !is_digit(s_[i_]) || !read_digits(10, exp_digits)) fail(at, bad);
        for (char d : exp_digits) exponent = std::min(kMaxExponent, exponent * 10 + (d - '0'));
        if (negative) exponent = -exponent;
      }
    }
    if (i_ < s_.size() && (s_[i_] == 'j' || s_[i_] == 'J'))
      fail(at, "complex literals are not supported");
    if (i_ < s_.size() && is_ident_char(s_[i_])) fail(at, bad);

    Token t = make(is_float ? Tok::Float : Tok::Int, s_.substr(begin, i_ - begin), at);
    if (is_float) {
      // Rewritten as "DIGITSeEXP" (no decimal point), strtod does not depend on the locale.
      std::string mantissa = digits + frac;
      if (mantissa.empty()) mantissa = "0";
      int64_t e = exponent - static_cast<int64_t>(frac.size());
      std::string canon = mantissa + "e" + std::to_string(e);
      t.float_value = std::strtod(canon.c_str(), nullptr);
      return t;
    }
    if (base == 10 && digits.size() > 1 && digits[0] == '0' &&
        digits.find_first_not_of('0') != std::string::npos)
      fail(at, "leading zeros in decimal integer literals are not permitted");
    int64_t v = 0;
    const int64_t max = std::numeric_limits<int64_t>::max();
    for (char d : digits) {
      int dv = digit_value(d);
      if (v > (max - dv) / base) fail(at, "integer literal out of range");
      v = v * base + dv;
    }
    t.int_value = v;
    return t;
  }

  // Only u"" and r"" prefixes are accepted; f- and b-strings are rejected by name, and any
  // other identifier before a quote is just a name followed by a string.
  Token lex_prefixed_string(const std::string& prefix, Pos at) {
    std::string lower;
    for (char c : prefix) lower += static_cast<char>(c | 0x20);
    if (lower == "f" || lower == "rf" || lower == "fr") fail(at, "f-strings are not supported");
    if (lower == "b" || lower == "rb" || lower == "br") fail(at, "bytes literals are not supported");
    if (lower == "u") return lex_string(at, false);
    if (lower == "r") return lex_string(at, true);
    return make(Tok::Name, prefix, at);
  }

  Token lex_string(Pos at, bool raw) {
    char q = s_[i_];
    bool triple = s_.compare(i_, 3, std::string(3, q)) == 0;
    i_ += triple ? 3 : 1;
    std::string value;
    for (;;) {
      if (i_ >= s_.size())
        fail(at, triple ? "unterminated triple-quoted string literal"
                        : "unterminated string literal");
      char c = s_[i_];
      if (c == '\0') fail(here(), "unexpected character '\\x00'");
      if (c == q) {
        if (!triple) {
          ++i_;
          break;
        }
        if (s_.compare(i_, 3, std::string(3, q)) == 0) {
          i_ += 3;
          break;
        }
        value += c;
        ++i_;
        continue;
      }
      if (c == '\n' || c == '\r') {
        if (!triple) fail(at, "unterminated string literal");
        consume_newline();
        value += '\n';
        continue;
      }
      if (c == '\\') {
        read_escape(value, raw, triple, at);
        continue;
      }
      value += c;
      ++i_;
    }
    Token t = make(Tok::String, std::move(value), at);
    t.triple = triple;
    return t;
  }

  void read_escape(std::string& value, bool raw, bool triple, Pos string_at) {
    Pos at = here();
    ++i_;  // the backslash
    if (i_ >= s_.size())
      fail(string_at, triple ? "unterminated triple-quoted string literal"
                             : "unterminated string literal");
    char c = s_[i_];
    if (c == '\n' || c == '\r') {
      consume_newline();
      if (raw) value += "\\\n";  // raw strings keep the backslash and the line break
      return;
    }
    if (c == '\0') fail(here(), "unexpected character '\\x00'");
    if (raw) {
      // A backslash in a raw string only keeps the next character from ending the string.
      value += '\\';
      value += c;
      ++i_;
      return;
    }
    ++i_;
    switch (c) {
      case '\\': value += '\\'; return;
      case '\'': value += '\''; return;
      case '"': value += '"'; return;
      case 'a': value += '\a'; return;
      case 'b': value += '\b'; return;
      case 'f': value += '\f'; return;
      case 'n': value += '\n'; return;
      case 'r': value += '\r'; return;
      case 't': value += '\t'; return;
      case 'v': value += '\v'; return;
      case 'x': append_utf8(value, read_hex(2, at, "\\x")); return;
      case 'u': append_code_point(value, read_hex(4, at, "\\u"), at); return;
      case 'U': append_code_point(value, read_hex(8, at, "\\U"), at); return;
      case 'N': fail(at, "'\\N{...}' escapes are not supported");
      default: break;
    }
    if (c >= '0' && c <= '7') {
      uint32_t v = static_cast<uint32_t>(c - '0');
      for (int k = 0; k < 2 && i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '7'; ++k)
        v = v * 8 + static_cast<uint32_t>(s_[i_++] - '0');
      append_utf8(value, v);
      return;
    }
    // Python keeps unknown escapes verbatim; so does kevo, to match what torch would see.
    value += '\\';
    value += c;
  }

  uint32_t read_hex(int count, Pos at, const char* what) {
    uint32_t v = 0;
    for (int k = 0; k < count; ++k) {
      if (i_ >= s_.size() || digit_value(s_[i_]) >= 16)
        fail(at, std::string("truncated ") + what + " escape");
      v = v * 16 + static_cast<uint32_t>(digit_value(s_[i_++]));
    }
    return v;
  }

  void append_code_point(std::string& value, uint32_t cp, Pos at) {
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      fail(at, "invalid unicode escape");
    append_utf8(value, cp);
  }

  const std::string& s_;
  size_t i_ = 0;
  int line_ = 1;
  size_t line_begin_ = 0;
  bool at_line_start_ = true;
  bool line_has_tokens_ = false;
  Pos last_end_;
  std::vector<std::string> indents_{std::string()};
  char indent_char_ = 0;
  int pending_dedents_ = 0;
  Pos dedent_pos_;
  std::vector<Bracket> brackets_;
};

// ---------------------------------------------------------------------------------------------
// Parser

class Parser {
 public:
  explicit Parser(const std::string& text) : lexer_(text) {}

  Program parse_program() {
    Program program;
    skip_docstring();
    for (;;) {
      const Token& t = peek();
      if (is_name(t, "import")) {
        parse_import(program);
      } else if (is_name(t, "from")) {
        parse_from_import(program);
      } else if (is_name(t, "def")) {
        break;
      } else if (t.kind == Tok::End) {
        fail(t.pos, "no function definition");
      } else if (t.kind == Tok::Indent) {
        fail(t.pos, "unexpected indent");
      } else if (is_op(t, "@")) {
        fail(t.pos, "decorators are not supported");
      } else {
        fail(t.pos, "only imports may come before the function definition");
      }
    }
    for (const auto& [alias, module] : std::map<std::string, std::string>{
             {"torch", "torch"}, {"F", "torch.nn.functional"}, {"math", "math"}})
      program.modules.emplace(alias, module);  // keeps any binding from an import

    parse_function(program);

    const Token& t = peek();
    if (t.kind == Tok::End) return program;
    if (is_name(t, "def")) fail(t.pos, "only one function definition is allowed");
    if (t.kind == Tok::Indent) fail(t.pos, "unexpected indent");
    fail(t.pos, "code after the function definition is not supported");
  }

 private:
  struct NodeInfo {
    int height = 0;
    Pos start;  // the expression's first token (Expr::pos differs for operators/attributes)
  };

  // Counts one level of parser recursion for the lifetime of the guard.
  class DepthGuard {
   public:
    DepthGuard(Parser& p, Pos at) : p_(p) {
      if (++p_.depth_ > kMaxDepth) fail(at, "expression nested too deeply");
    }
    ~DepthGuard() { --p_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Parser& p_;
  };

  // -- token access --

  const Token& peek(size_t k = 0) {
    while (ahead_.size() <= k) {
      if (!ahead_.empty() && ahead_.back().kind == Tok::End) return ahead_.back();
      ahead_.push_back(lexer_.next());
    }
    return ahead_[k];
  }

  Token take() {
    peek();
    Token t = ahead_.front();
    if (t.kind != Tok::End) ahead_.pop_front();
    return t;
  }

  static bool is_op(const Token& t, const char* op) { return t.kind == Tok::Op && t.text == op; }
  static bool is_name(const Token& t, const char* word) {
    return t.kind == Tok::Name && t.text == word;
  }
  static bool is_plain_name(const Token& t) { return t.kind == Tok::Name && !is_keyword(t.text); }

  [[noreturn]] static void unexpected(const Token& t) {
    switch (t.kind) {
      case Tok::Newline: fail(t.pos, "unexpected end of line");
      case Tok::End: fail(t.pos, "unexpected end of input");
      case Tok::Indent: fail(t.pos, "unexpected indent");
      case Tok::Dedent: fail(t.pos, "unexpected dedent");
      case Tok::String: fail(t.pos, "unexpected string literal");
      default: fail(t.pos, "unexpected token '" + t.text + "'");
    }
  }

  [[noreturn]] static void expected_close(const Token& t, const Token& open) {
    const char* close = open.text == "(" ? ")" : open.text == "[" ? "]" : "}";
    fail(t.pos, std::string("expected '") + close + "' to close '" + open.text + "' opened at " +
                    pos_text(open.pos));
  }

  // -- imports --

  // dotted_name := NAME ('.' NAME)*
  std::string parse_dotted(Pos& at) {
    at = peek().pos;
    std::string path;
    for (;;) {
      Token t = take();
      if (!is_plain_name(t)) fail(t.pos, "expected a module name");
      path += t.text;
      if (!is_op(peek(), ".")) return path;
      take();
      path += '.';
    }
  }

  static bool module_allowed(const std::string& path) {
    return path == "torch" || path == "torch.nn" || path == "torch.nn.functional" ||
           path == "math";
  }

  std::string parse_alias() {
    Token t = take();
    if (!is_plain_name(t)) fail(t.pos, "expected a name after 'as'");
    return t.text;
  }

  void parse_import(Program& program) {
    take();  // 'import'
    for (;;) {
      Pos at;
      std::string path = parse_dotted(at);
      if (!module_allowed(path)) fail(at, "import of '" + path + "' is not allowed");
      if (is_name(peek(), "as")) {
        take();
        program.modules[parse_alias()] = path;
      } else {
        // `import torch.nn.functional` binds only the top-level package, as in Python.
        std::string top = path.substr(0, path.find('.'));
        program.modules[top] = top;
      }
      if (!is_op(peek(), ",")) break;
      take();
    }
    expect_newline();
  }

  void parse_from_import(Program& program) {
    take();  // 'from'
    if (is_op(peek(), ".") || is_op(peek(), "..."))
      fail(peek().pos, "relative imports are not supported");
    Pos at;
    std::string base = parse_dotted(at);
    if (!module_allowed(base)) fail(at, "import of '" + base + "' is not allowed");
    Token kw = take();
    if (!is_name(kw, "import")) fail(kw.pos, "expected 'import' after the module name");
    if (is_op(peek(), "*")) fail(peek().pos, "wildcard imports are not supported");
    bool parens = false;
    Token open;
    if (is_op(peek(), "(")) {
      open = take();
      parens = true;
    }
    for (;;) {
      Token t = take();
      if (!is_plain_name(t)) fail(t.pos, "expected a name to import");
      std::string path = base + "." + t.text;
      if (!module_allowed(path)) fail(t.pos, "import of '" + path + "' is not allowed");
      std::string alias = t.text;
      if (is_name(peek(), "as")) {
        take();
        alias = parse_alias();
      }
      program.modules[alias] = path;
      if (!is_op(peek(), ",")) break;
      take();
      if (parens && is_op(peek(), ")")) break;
    }
    if (parens) {
      if (!is_op(peek(), ")")) expected_close(peek(), open);
      take();
    }
    expect_newline();
  }

  // -- the function --

  void parse_function(Program& program) {
    Token def_tok = take();
    Token name = take();
    if (!is_plain_name(name)) fail(name.pos, "expected a function name after 'def'");
    program.function_name = name.text;
    program.function_pos = name.pos;
    Token open = take();
    if (!is_op(open, "(")) fail(open.pos, "expected '(' after the function name");
    parse_params(program, open);
    if (is_op(peek(), "->")) fail(peek().pos, "return annotations are not supported");
    if (!is_op(peek(), ":")) fail(peek().pos, "expected ':' at the end of the function signature");
    take();

    bool returns = false;
    if (peek().kind != Tok::Newline) {
      // `def run(x): return x` — a one-statement body on the same line.
      parse_body_statement(program, returns);
    } else {
      take();
      if (peek().kind != Tok::Indent)
        fail(peek().pos, "expected an indented block after the function definition");
      take();
      skip_docstring();
      for (;;) {
        const Token& t = peek();
        if (t.kind == Tok::Dedent) {
          take();
          break;
        }
        if (t.kind == Tok::End) break;
        parse_body_statement(program, returns);
      }
    }
    if (!returns) fail(def_tok.pos, program.function_name + "() never returns a value");
  }

  void parse_params(Program& program, const Token& open) {
    for (;;) {
      if (is_op(peek(), ")")) {
        take();
        return;
      }
      Token t = take();
      if (is_op(t, "*")) fail(t.pos, "'*args' parameters are not supported");
      if (is_op(t, "**")) fail(t.pos, "'**kwargs' parameters are not supported");
      if (is_op(t, "/")) fail(t.pos, "positional-only marker '/' is not supported");
      if (!is_plain_name(t)) {
        if (t.kind == Tok::End || t.kind == Tok::Newline) expected_close(t, open);
        fail(t.pos, "expected a parameter name");
      }
      if (std::find(program.params.begin(), program.params.end(), t.text) != program.params.end())
        fail(t.pos, "duplicate parameter '" + t.text + "'");
      program.params.push_back(t.text);
      program.param_pos.push_back(t.pos);
      const Token& after = peek();
      if (is_op(after, "=")) fail(after.pos, "parameter defaults are not supported");
      if (is_op(after, ":")) fail(after.pos, "parameter annotations are not supported");
      if (is_op(after, ",")) {
        take();
      } else if (!is_op(after, ")")) {
        expected_close(after, open);
      }
    }
  }

  // A string-only statement (several adjacent literals allowed) followed by end of line.
  void skip_docstring() {
    size_t k = 0;
    while (peek(k).kind == Tok::String) ++k;
    if (k == 0 || peek(k).kind != Tok::Newline) return;
    for (size_t n = 0; n <= k; ++n) take();
  }

  // -- statements --

  void parse_body_statement(Program& program, bool& returns) {
    const Token& t = peek();
    if (t.kind == Tok::Indent) fail(t.pos, "unexpected indent");
    if (returns) fail(t.pos, "unreachable statement after return");
    Stmt stmt = parse_statement();
    if (stmt.kind == StmtKind::Return) returns = true;
    program.body.push_back(std::move(stmt));
  }

  Stmt parse_statement() {
    const Token& t = peek();
    Stmt stmt;
    stmt.pos = t.pos;
    if (t.kind == Tok::Name) reject_statement_keyword(t);
    if (is_op(t, "@")) fail(t.pos, "decorators are not supported");
    if (is_name(t, "pass")) {
      take();
      stmt.kind = StmtKind::Pass;
      expect_newline();
      return stmt;
    }
    if (is_name(t, "return")) {
      take();
      stmt.kind = StmtKind::Return;
      if (peek().kind != Tok::Newline && peek().kind != Tok::End && !is_op(peek(), ";"))
        stmt.value = parse_expr_list();
      expect_newline();
      return stmt;
    }

    ExprPtr lhs = parse_expr_list();
    const Token& op = peek();
    if (is_op(op, "=")) {
      stmt.kind = StmtKind::Assign;
      set_targets(stmt, lhs);
      take();
      stmt.value = parse_expr_list();
      if (is_op(peek(), "=")) fail(peek().pos, "chained assignment is not supported");
      expect_newline();
      return stmt;
    }
    if (op.kind == Tok::Op && op.text.size() >= 2 && op.text.back() == '=' &&
        op.text != "==" && op.text != "!=" && op.text != "<=" && op.text != ">=")
      fail(op.pos, "augmented assignment '" + op.text + "' is not supported");
    if (is_op(op, ":")) fail(op.pos, "annotated assignments are not supported");
    if (op.kind == Tok::Newline || op.kind == Tok::End)
      fail(stmt.pos, "expression statements are not supported (assign or return the value)");
    expect_newline();  // throws: the statement goes on with an unexpected token
    return stmt;
  }

  void reject_statement_keyword(const Token& t) {
    static const std::set<std::string> kStatements = {
        "if",    "elif",   "else",     "for",   "while", "with",   "try",      "except",
        "finally", "assert", "del",    "raise", "global", "nonlocal", "break", "continue",
        "async"};
    if (kStatements.count(t.text)) fail(t.pos, "'" + t.text + "' statements are not supported");
    if (t.text == "def") fail(t.pos, "nested function definitions are not supported");
    if (t.text == "class") fail(t.pos, "class definitions are not supported");
    if (t.text == "import" || t.text == "from")
      fail(t.pos, "imports must come before the function definition");
  }

  void expect_newline() {
    const Token& t = peek();
    if (t.kind == Tok::Newline) {
      take();
      return;
    }
    if (t.kind == Tok::End) return;
    if (is_op(t, ";"))
      fail(t.pos, "semicolons are not supported; put each statement on its own line");
    unexpected(t);
  }

  void set_targets(Stmt& stmt, const ExprPtr& lhs) {
    if (lhs->kind == ExprKind::Name) {
      stmt.targets.push_back(lhs->name);
      stmt.target_pos.push_back(lhs->pos);
      return;
    }
    if (lhs->kind != ExprKind::Tuple && lhs->kind != ExprKind::List)
      fail(start_of(lhs), "cannot assign to " + describe(*lhs));
    if (lhs->items.empty()) fail(start_of(lhs), "cannot assign to ()");
    // `a, = f()` would be indistinguishable from `a = f()` in the tree.
    if (lhs->items.size() == 1)
      fail(start_of(lhs), "single-element tuple unpacking is not supported");
    for (const ExprPtr& item : lhs->items) {
      if (item->kind == ExprKind::Tuple || item->kind == ExprKind::List)
        fail(start_of(item), "nested tuple unpacking is not supported");
      if (item->kind != ExprKind::Name)
        fail(start_of(item), "cannot assign to " + describe(*item));
      stmt.targets.push_back(item->name);
      stmt.target_pos.push_back(item->pos);
    }
  }

  static std::string describe(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Attribute: return "an attribute";
      case ExprKind::Subscript: return "a subscript (in-place updates are not supported)";
      case ExprKind::Call: return "a function call";
      case ExprKind::Int:
      case ExprKind::Float:
      case ExprKind::Bool:
      case ExprKind::None:
      case ExprKind::String: return "a literal";
      default: return "an expression";
    }
  }

  // -- expressions --

  ExprPtr make(Expr e, Pos start) {
    int height = 0;
    for (const ExprPtr& item : e.items)
      if (item) height = std::max(height, info_[item.get()].height);
    if (e.callee) height = std::max(height, info_[e.callee.get()].height);
    for (const Keyword& k : e.keywords) height = std::max(height, info_[k.value.get()].height);
    if (++height > kMaxDepth) fail(e.pos, "expression nested too deeply");
    auto node = std::make_shared<const Expr>(std::move(e));
    info_[node.get()] = NodeInfo{height, start};
    return node;
  }

  Pos start_of(const ExprPtr& e) { return info_[e.get()].start; }

  static Expr node(ExprKind kind, Pos pos) {
    Expr e;
    e.kind = kind;
    e.pos = pos;
    return e;
  }

  // expr_list := expr (',' expr)* [','] — several make a Tuple (`return a, b`, `a, b = ...`).
  ExprPtr parse_expr_list() {
    Pos start = peek().pos;
    ExprPtr first = parse_expr();
    if (!is_op(peek(), ",")) return first;
    Expr tuple = node(ExprKind::Tuple, start);
    tuple.items.push_back(first);
    while (is_op(peek(), ",")) {
      take();
      const Token& t = peek();
      if (t.kind == Tok::Newline || t.kind == Tok::End || is_op(t, "=") || is_op(t, ";")) break;
      tuple.items.push_back(parse_expr());
    }
    return make(std::move(tuple), start);
  }

  ExprPtr parse_expr() {
    DepthGuard guard(*this, peek().pos);
    ExprPtr e = parse_comparison();
    const Token& t = peek();
    if (t.kind == Tok::Name) {
      static const std::set<std::string> kOperators = {"if", "else", "and", "or", "not",
                                                       "in", "is",   "for", "async"};
      if (kOperators.count(t.text)) fail(t.pos, "'" + t.text + "' is not supported");
    }
    if (t.kind == Tok::Op) {
      static const std::set<std::string> kUnsupported = {"|", "&", "^", "<<", ">>", ":="};
      if (kUnsupported.count(t.text)) fail(t.pos, "operator '" + t.text + "' is not supported");
    }
    return e;
  }

  template <typename Op, size_t N>
  static bool find_op(const Token& t, const Spelling<Op> (&ops)[N], Op& op) {
    if (t.kind != Tok::Op) return false;
    for (const Spelling<Op>& candidate : ops) {
      if (t.text == candidate.text) {
        op = candidate.op;
        return true;
      }
    }
    return false;
  }

  ExprPtr parse_comparison() {
    Pos start = peek().pos;
    ExprPtr lhs = parse_arith();
    CmpOp op;
    if (!find_op(peek(), kComparisons, op)) return lhs;
    Pos op_pos = take().pos;
    ExprPtr rhs = parse_arith();
    CmpOp next;
    if (find_op(peek(), kComparisons, next))
      fail(peek().pos, "chained comparisons are not supported");
    Expr e = node(ExprKind::Compare, op_pos);
    e.cmp_op = op;
    e.items = {lhs, rhs};
    return make(std::move(e), start);
  }

  ExprPtr binary(BinOp op, Pos op_pos, ExprPtr lhs, ExprPtr rhs, Pos start) {
    Expr e = node(ExprKind::Binary, op_pos);
    e.bin_op = op;
    e.items = {std::move(lhs), std::move(rhs)};
    return make(std::move(e), start);
  }

  ExprPtr parse_arith() { return parse_left_assoc(kAdditive, &Parser::parse_term); }
  ExprPtr parse_term() { return parse_left_assoc(kMultiplicative, &Parser::parse_unary); }

  // One left-associative precedence level: operand (op operand)*.
  template <size_t N>
  ExprPtr parse_left_assoc(const Spelling<BinOp> (&ops)[N], ExprPtr (Parser::*operand)()) {
    Pos start = peek().pos;
    ExprPtr lhs = (this->*operand)();
    BinOp op;
    while (find_op(peek(), ops, op)) {
      Pos op_pos = take().pos;
      lhs = binary(op, op_pos, lhs, (this->*operand)(), start);
    }
    return lhs;
  }

  ExprPtr parse_unary() {
    const Token& t = peek();
    if (is_op(t, "~")) fail(t.pos, "operator '~' is not supported");
    if (!is_op(t, "-") && !is_op(t, "+")) return parse_power();
    Token op = take();
    DepthGuard guard(*this, op.pos);
    Expr e = node(ExprKind::Unary, op.pos);
    e.un_op = op.text == "-" ? UnOp::Neg : UnOp::Pos;
    e.items = {parse_unary()};
    return make(std::move(e), op.pos);
  }

  // power := postfix ['**' unary]: right-associative, and tighter than a unary minus on its
  // left (-x**2 is -(x**2)) but not on its right (2**-1).
  ExprPtr parse_power() {
    Pos start = peek().pos;
    ExprPtr base = parse_postfix();
    if (!is_op(peek(), "**")) return base;
    Token op = take();
    DepthGuard guard(*this, op.pos);
    return binary(BinOp::Pow, op.pos, base, parse_unary(), start);
  }

  ExprPtr parse_postfix() {
    Pos start = peek().pos;
    ExprPtr e = parse_atom(start);
    for (;;) {
      const Token& t = peek();
      if (is_op(t, "(")) {
        e = parse_call(e, start);
      } else if (is_op(t, "[")) {
        e = parse_subscript(e, start);
      } else if (is_op(t, ".")) {
        take();
        Token name = take();
        if (!is_plain_name(name)) fail(name.pos, "expected an attribute name after '.'");
        Expr a = node(ExprKind::Attribute, name.pos);
        a.name = name.text;
        a.items = {e};
        e = make(std::move(a), start);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_call(const ExprPtr& callee, Pos start) {
    Token open = take();
    Expr call = node(ExprKind::Call, start);
    call.callee = callee;
    for (;;) {
      if (is_op(peek(), ")")) {
        take();
        break;
      }
      const Token& t = peek();
      if (is_op(t, "*")) fail(t.pos, "'*args' arguments are not supported");
      if (is_op(t, "**")) fail(t.pos, "'**kwargs' arguments are not supported");
      if (is_plain_name(t) && is_op(peek(1), "=")) {
        Token name = take();
        take();  // '='
        for (const Keyword& k : call.keywords)
          if (k.name == name.text)
            fail(name.pos, "duplicate keyword argument '" + name.text + "'");
        call.keywords.push_back(Keyword{name.text, parse_expr(), name.pos});
      } else {
        if (!call.keywords.empty())
          fail(t.pos, "positional argument follows keyword argument");
        call.items.push_back(parse_expr());
      }
      if (is_op(peek(), ",")) {
        take();
      } else if (!is_op(peek(), ")")) {
        expected_close(peek(), open);
      }
    }
    return make(std::move(call), start);
  }

  ExprPtr parse_subscript(const ExprPtr& object, Pos start) {
    Token open = take();
    if (is_op(peek(), "]")) fail(peek().pos, "expected an index inside '[]'");
    Pos index_start = peek().pos;
    std::vector<ExprPtr> indices;
    bool comma = false;
    for (;;) {
      indices.push_back(parse_slice_item());
      if (is_op(peek(), ",")) {
        take();
        comma = true;
        if (is_op(peek(), "]")) break;
      } else if (is_op(peek(), "]")) {
        break;
      } else {
        expected_close(peek(), open);
      }
    }
    take();  // ']'
    ExprPtr index;
    if (indices.size() == 1 && !comma) {
      index = indices[0];
    } else {
      Expr tuple = node(ExprKind::Tuple, index_start);
      tuple.items = std::move(indices);
      index = make(std::move(tuple), index_start);
    }
    Expr e = node(ExprKind::Subscript, start);
    e.items = {object, index};
    return make(std::move(e), start);
  }

  // slice_item := expr | [expr] ':' [expr] [':' [expr]]
  ExprPtr parse_slice_item() {
    Pos start = peek().pos;
    ExprPtr lower;
    if (!is_op(peek(), ":")) {
      lower = parse_expr();
      if (!is_op(peek(), ":")) return lower;
    }
    take();  // ':'
    auto ends_part = [this] {
      const Token& t = peek();
      return is_op(t, ":") || is_op(t, ",") || is_op(t, "]");
    };
    ExprPtr upper, step;
    if (!ends_part()) upper = parse_expr();
    if (is_op(peek(), ":")) {
      take();
      if (!ends_part()) step = parse_expr();
    }
    Expr e = node(ExprKind::Slice, start);
    e.items = {lower, upper, step};
    return make(std::move(e), start);
  }

  ExprPtr parse_atom(Pos start) {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::Int: {
        Expr e = node(ExprKind::Int, t.pos);
        e.int_value = t.int_value;
        take();
        return make(std::move(e), start);
      }
      case Tok::Float: {
        Expr e = node(ExprKind::Float, t.pos);
        e.float_value = t.float_value;
        take();
        return make(std::move(e), start);
      }
      case Tok::String: {
        Expr e = node(ExprKind::String, t.pos);
        while (peek().kind == Tok::String) {
          const Token& s = peek();
          if (s.triple) fail(s.pos, "triple-quoted strings are only allowed as docstrings");
          e.name += s.text;
          take();
        }
        return make(std::move(e), start);
      }
      case Tok::Name: return parse_name_atom(start);
      case Tok::Op: break;
      default: unexpected(t);
    }
    if (is_op(t, "(")) return parse_parens();
    if (is_op(t, "[")) return parse_list();
    if (is_op(t, "{")) fail(t.pos, "dict and set literals are not supported");
    if (is_op(t, "...")) {
      Pos at = take().pos;
      return make(node(ExprKind::Ellipsis, at), start);
    }
    if (is_op(t, "*") || is_op(t, "**")) fail(t.pos, "starred expressions are not supported");
    unexpected(t);
  }

  ExprPtr parse_name_atom(Pos start) {
    Token t = take();
    if (!is_keyword(t.text)) {
      Expr e = node(ExprKind::Name, t.pos);
      e.name = t.text;
      return make(std::move(e), start);
    }
    if (t.text == "True" || t.text == "False") {
      Expr e = node(ExprKind::Bool, t.pos);
      e.bool_value = t.text == "True";
      return make(std::move(e), start);
    }
    if (t.text == "None") return make(node(ExprKind::None, t.pos), start);
    fail(t.pos, "'" + t.text + "' is not supported");
  }

  // '(' ')' is the empty tuple, '(' expr ')' a grouping, '(' expr ',' ... ')' a tuple.
  ExprPtr parse_parens() {
    Token open = take();
    if (is_op(peek(), ")")) {
      take();
      return make(node(ExprKind::Tuple, open.pos), open.pos);
    }
    ExprPtr first = parse_expr();
    if (is_op(peek(), ")")) {
      take();
      info_[first.get()].start = open.pos;  // the grouped expression now starts at '('
      return first;
    }
    if (!is_op(peek(), ",")) expected_close(peek(), open);
    Expr tuple = node(ExprKind::Tuple, open.pos);
    tuple.items.push_back(first);
    parse_items_after_comma(tuple, open);
    return make(std::move(tuple), open.pos);
  }

  ExprPtr parse_list() {
    Token open = take();
    Expr list = node(ExprKind::List, open.pos);
    if (is_op(peek(), "]")) {
      take();
      return make(std::move(list), open.pos);
    }
    list.items.push_back(parse_expr());
    if (is_op(peek(), "]")) {
      take();
    } else if (is_op(peek(), ",")) {
      parse_items_after_comma(list, open);
    } else {
      expected_close(peek(), open);
    }
    return make(std::move(list), open.pos);
  }

  // Continues a bracketed, comma-separated list at its first ',' through the closing bracket.
  void parse_items_after_comma(Expr& into, const Token& open) {
    const char* close = open.text == "(" ? ")" : "]";
    for (;;) {
      take();  // ','
      if (is_op(peek(), close)) break;
      into.items.push_back(parse_expr());
      if (is_op(peek(), close)) break;
      if (!is_op(peek(), ",")) expected_close(peek(), open);
    }
    take();  // the closing bracket
  }

  Lexer lexer_;
  std::deque<Token> ahead_;
  std::unordered_map<const Expr*, NodeInfo> info_;
  int depth_ = 0;
};

}  // namespace

Program parse_reference(const std::string& text) { return Parser(text).parse_program(); }

}  // namespace kevo::ref
