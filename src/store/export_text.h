// Text for the exported header (store/ only): lists, one-line comments, C++ literals that read
// back as the plan's numbers.
#pragma once

#include <string>
#include <vector>

namespace kevo::store::exporter {

std::string joined(const std::vector<std::string>& items, const char* sep = ", ");

// Text for a `//` comment: one line, no control characters; `unknown` when nothing is left.
std::string one_line(const std::string& s, const std::string& unknown = "unknown");

// The shortest decimal text that reads back as `d`, always with a '.' or an exponent.
std::string double_literal(double d);

// A float literal with the value static_cast<float>(d), which is how kevo passes {"float": d}.
std::string float_literal(double d);

// "2.50x"; empty for 0 (unknown), a negative or a non-finite speedup.
std::string speedup_text(double x);

}  // namespace kevo::store::exporter
