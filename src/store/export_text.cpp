// Text helpers of the header export: joining, comment lines and round-tripping literals.
#include "store/export_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kevo::store::exporter {

std::string joined(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string one_line(const std::string& s, const std::string& unknown) {
  std::string out;
  for (char c : s) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  size_t a = out.find_first_not_of(' '), b = out.find_last_not_of(' ');
  return a == std::string::npos ? unknown : out.substr(a, b - a + 1);
}

std::string double_literal(double d) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // "n": inf and nan never reach here (JSON)
  return s;
}

std::string float_literal(double d) {
  std::string s = double_literal(d);
  if (std::strtof(s.c_str(), nullptr) == static_cast<float>(d)) return s + "f";
  return "static_cast<float>(" + s + ")";
}

std::string speedup_text(double x) {
  if (!(x > 0) || !std::isfinite(x)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", x);
  return buf;
}

}  // namespace kevo::store::exporter
