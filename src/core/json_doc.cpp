// Reading JSON with positions: parse errors, duplicate keys and field errors at file:line:col.
#include "core/json_doc.h"

#include <optional>
#include <set>
#include <vector>

namespace kevo {

namespace {

// The part of nlohmann's message after `sep` (searched from `anchor`): its own line and column
// count from the JSON text, not from the user's file.
std::string after(const std::string& msg, const char* sep, const char* anchor) {
  size_t at = msg.find(sep, msg.find(anchor));
  return at == std::string::npos ? msg : msg.substr(at + std::string(sep).size());
}

}  // namespace

Doc::Doc(std::string file, const std::string& whole, size_t begin, size_t end)
    : file_(std::move(file)), text_(whole.substr(begin, end - begin)), base_(position_of_offset(whole, begin)) {}

Location Doc::at(TextPos p) const {
  // Only the first line of the JSON shares its line with text before it.
  return {file_, base_.line + p.line - 1, p.line == 1 ? base_.col + p.col - 1 : p.col};
}

void Doc::fail(const Path& p, const std::string& message, bool at_key) const {
  throw InputError(at(at_key ? pos_.key(p.ptr) : pos_.value(p.ptr)), p.field, message);
}

void Doc::fail_at(size_t offset, const std::string& message) const {
  throw InputError(at(position_of_offset(text_, offset)), "", message);
}

json Doc::parse(const DuplicateMessage& duplicate_message) {
  if (json_depth(text_) > JsonPositions::kMaxDepth)
    fail_at(0, "JSON nested deeper than " + std::to_string(JsonPositions::kMaxDepth) + " levels");
  struct Frame {
    bool array;
    size_t next;
    std::set<std::string> keys;
    std::string key;
    Path path;
  };
  std::vector<Frame> stack;
  std::optional<Path> duplicate;
  std::string duplicate_key;
  auto value_path = [&]() {
    if (stack.empty()) return Path{};
    const Frame& f = stack.back();
    return f.array ? f.path.index(f.next) : f.path.key(f.key);
  };
  auto ended_value = [&]() {
    if (!stack.empty() && stack.back().array) ++stack.back().next;
  };
  json::parser_callback_t callback = [&](int, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      stack.push_back({event == E::array_start, 0, {}, "", value_path()});
    } else if (event == E::key) {
      Frame& f = stack.back();
      f.key = parsed.get<std::string>();
      if (!f.keys.insert(f.key).second && !duplicate) {
        duplicate = f.path.key(f.key);
        duplicate_key = f.key;
      }
    } else if (event == E::object_end || event == E::array_end) {
      stack.pop_back();
      ended_value();
    } else {
      ended_value();
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text_, callback);
  } catch (const json::parse_error& e) {
    fail_at(e.byte == 0 ? 0 : e.byte - 1, "invalid JSON: " + after(e.what(), ": ", "parse error"));
  } catch (const json::exception& e) {
    // A number out of range carries no offset; point at the literal its message quotes.
    std::string msg = after(e.what(), "] ", "");
    size_t q = msg.find('\''), lit = std::string::npos;
    if (q != std::string::npos) lit = text_.find(msg.substr(q + 1, msg.rfind('\'') - q - 1));
    fail_at(lit == std::string::npos ? 0 : lit, "invalid JSON: " + msg);
  }
  pos_ = JsonPositions::index(text_);
  if (duplicate) {
    std::string message = duplicate_message ? duplicate_message(*duplicate, duplicate_key) : "";
    fail(*duplicate, message.empty() ? "the field '" + duplicate_key + "' is given twice" : message, true);
  }
  return doc;
}

std::string kind_of(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  return v.is_array() ? "an array" : "an object";
}

}  // namespace kevo
