// A JSON document read with the positions of its text, so every error can name the user's
// file, line, column and field: the reader behind task contracts and candidates.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "core/error.h"
#include "core/json_positions.h"

namespace kevo {

using json = nlohmann::ordered_json;

// A place in the document: its JSON pointer (for line and column) and its field path (for messages).
struct Path {
  std::string ptr, field;
  Path key(const std::string& k) const { return {ptr + "/" + pointer_token(k), field.empty() ? k : field + "." + k}; }
  Path index(size_t i) const { return {ptr + "/" + std::to_string(i), field + "[" + std::to_string(i) + "]"}; }
};

// A JSON text that may sit inside a larger file (a .cu candidate's plan comment): positions are
// the file's.
class Doc {
 public:
  Doc(std::string file, const std::string& whole, size_t begin, size_t end);
  Doc(std::string file, const std::string& whole) : Doc(std::move(file), whole, 0, whole.size()) {}

  const std::string& file() const { return file_; }
  Location at(TextPos p) const;
  Location loc(const Path& p) const { return at(pos_.value(p.ptr)); }

  // Throws InputError at the value (or, with at_key, the key) of `p`.
  [[noreturn]] void fail(const Path& p, const std::string& message, bool at_key = false) const;

  // Words the error for a key given twice (path and key); empty for the generic wording.
  using DuplicateMessage = std::function<std::string(const Path&, const std::string&)>;

  // Parses the text; rejects bad syntax, deep nesting and duplicate keys (which nlohmann would
  // silently collapse into one). Each as a one-line InputError.
  json parse(const DuplicateMessage& duplicate_message = nullptr);

 private:
  [[noreturn]] void fail_at(size_t offset, const std::string& message) const;

  std::string file_;
  std::string text_;
  TextPos base_;
  JsonPositions pos_;
};

// "a number", "an object", ... for messages.
std::string kind_of(const json& v);

}  // namespace kevo
