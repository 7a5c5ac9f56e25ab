// Line and column of every value (and object key) in a JSON text, keyed by JSON pointer.
#pragma once

#include <map>
#include <string>

namespace kevo {

struct TextPos {
  int line = 0;
  int col = 0;
};

class JsonPositions {
 public:
  // Indexes `text`, which must already have parsed as JSON. A text nested deeper than
  // kMaxDepth is not indexed (every position is then 1:1).
  static JsonPositions index(const std::string& text);

  // Position of the value at `pointer` ("/inputs/x/shape/1"); the nearest ancestor's when absent.
  TextPos value(const std::string& pointer) const;
  // Position of the key naming the member at `pointer`; the value's position when absent.
  TextPos key(const std::string& pointer) const;

  static constexpr int kMaxDepth = 64;

 private:
  std::map<std::string, TextPos> values_;
  std::map<std::string, TextPos> keys_;
};

// Deepest nesting of objects and arrays in `text`.
int json_depth(const std::string& text);

// 1-based line and column of byte offset `offset` in `text`.
TextPos position_of_offset(const std::string& text, size_t offset);

// JSON-pointer escaping of one reference token ("~" -> "~0", "/" -> "~1").
std::string pointer_token(const std::string& key);

}  // namespace kevo
