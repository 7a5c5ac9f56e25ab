// One-line rendering of kevo's input errors.
#include "core/error.h"

namespace kevo {

namespace {

std::string render(const Location& loc, const std::string& where, const std::string& message) {
  std::string out;
  if (!loc.file.empty()) {
    out += loc.file;
    if (loc.line > 0) {
      out += ":" + std::to_string(loc.line);
      if (loc.col > 0) out += ":" + std::to_string(loc.col);
    }
    out += ": ";
  }
  if (!where.empty()) out += where + ": ";
  out += message;
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

}  // namespace

InputError::InputError(Location loc, std::string where, std::string message)
    : std::runtime_error(render(loc, where, message)),
      loc_(std::move(loc)),
      where_(std::move(where)),
      message_(std::move(message)) {}

ReferenceError::ReferenceError(int line, int col, std::string message)
    : std::runtime_error(std::to_string(line) + ":" + std::to_string(col) + ": " + message),
      line_(line),
      col_(col),
      message_(std::move(message)) {}

}  // namespace kevo
