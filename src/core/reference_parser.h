// Parser for the reference program (a Python subset with torch calls) into a syntax tree.
#pragma once

#include <string>

#include "core/reference_ast.h"

namespace kevo::ref {

// Parses `text`; throws kevo::ReferenceError (line, column, message) on anything outside
// the subset. Never crashes on any input.
Program parse_reference(const std::string& text);

}  // namespace kevo::ref
