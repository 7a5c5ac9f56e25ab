// Scans JSON text once to learn where each value starts, so contract errors can name a line.
#include "core/json_positions.h"

#include <algorithm>
#include <cctype>

namespace kevo {

namespace {

class Scanner {
 public:
  Scanner(const std::string& text, std::map<std::string, TextPos>& values, std::map<std::string, TextPos>& keys)
      : s_(text), values_(values), keys_(keys) {}

  void run() {
    skip_ws();
    value("", 0);
  }

 private:
  TextPos here() const { return {line_, col_}; }
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  void advance() {
    if (done()) return;
    if (s_[i_] == '\n') {
      ++line_;
      col_ = 1;
    } else if ((static_cast<unsigned char>(s_[i_]) & 0xC0) != 0x80) {
      ++col_;  // count characters, not UTF-8 continuation bytes
    }
    ++i_;
  }
  void skip_ws() {
    while (!done() && std::isspace(static_cast<unsigned char>(peek()))) advance();
  }

  std::string string_token() {
    std::string out;
    advance();  // opening quote
    while (!done() && peek() != '"') {
      if (peek() == '\\') {
        advance();
        char c = peek();
        advance();
        switch (c) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'u':
            // Keys with \u escapes are rare in contracts; keep the escape's text verbatim.
            out += "\\u";
            for (int k = 0; k < 4 && !done(); ++k) {
              out += peek();
              advance();
            }
            break;
          default: out += c;
        }
        continue;
      }
      out += peek();
      advance();
    }
    advance();  // closing quote
    return out;
  }

  void value(const std::string& ptr, int depth) {
    values_[ptr] = here();
    char c = peek();
    if (c == '{') {
      advance();
      skip_ws();
      while (!done() && peek() != '}') {
        TextPos kp = here();
        std::string key = string_token();
        std::string child = ptr + "/" + pointer_token(key);
        keys_[child] = kp;
        skip_ws();
        advance();  // ':'
        skip_ws();
        value(child, depth + 1);
        skip_ws();
        if (peek() == ',') advance();
        skip_ws();
      }
      advance();
    } else if (c == '[') {
      advance();
      skip_ws();
      for (size_t k = 0; !done() && peek() != ']'; ++k) {
        value(ptr + "/" + std::to_string(k), depth + 1);
        skip_ws();
        if (peek() == ',') advance();
        skip_ws();
      }
      advance();
    } else if (c == '"') {
      string_token();
    } else {
      while (!done() && peek() != ',' && peek() != '}' && peek() != ']' &&
             !std::isspace(static_cast<unsigned char>(peek())))
        advance();
    }
  }

  const std::string& s_;
  std::map<std::string, TextPos>& values_;
  std::map<std::string, TextPos>& keys_;
  size_t i_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace

int json_depth(const std::string& text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

JsonPositions JsonPositions::index(const std::string& text) {
  JsonPositions p;
  // The scanner recurses once per nesting level: hostile input deeper than the cap gets no index
  // (every position falls back to 1:1) rather than a deep recursion.
  if (json_depth(text) <= kMaxDepth) Scanner(text, p.values_, p.keys_).run();
  return p;
}

TextPos JsonPositions::value(const std::string& pointer) const {
  std::string p = pointer;
  while (true) {
    auto it = values_.find(p);
    if (it != values_.end()) return it->second;
    if (p.empty()) return {1, 1};
    p = p.substr(0, p.rfind('/'));
  }
}

TextPos JsonPositions::key(const std::string& pointer) const {
  auto it = keys_.find(pointer);
  return it != keys_.end() ? it->second : value(pointer);
}

TextPos position_of_offset(const std::string& text, size_t offset) {
  TextPos p{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.col = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++p.col;
    }
  }
  return p;
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

}  // namespace kevo
