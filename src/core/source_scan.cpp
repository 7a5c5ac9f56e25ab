// Line splicing, blanking, the directive reader and the Builder's and the exporter's scans over it.
#include "core/source_scan.h"

namespace kevo::source_scan {

namespace {

// Skips blanks and /* */ comments from `i`; with `cross_lines`, line breaks and // comments too.
size_t skip_blanks(std::string_view s, size_t i, bool cross_lines) {
  while (i < s.size()) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' || (cross_lines && c == '\n')) {
      ++i;
    } else if (s.substr(i, 2) == "/*") {
      size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 2;
    } else if (cross_lines && s.substr(i, 2) == "//") {
      size_t end = s.find('\n', i);
      i = end == std::string_view::npos ? s.size() : end + 1;
    } else {
      break;
    }
  }
  return i;
}

// The length of the splice starting at the backslash s[i], or 0 when none starts there.
size_t splice_length(std::string_view s, size_t i, bool lenient) {
  if (s[i] != '\\') return 0;
  size_t j = i + 1;
  if (lenient)
    while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
  if (j < s.size() && s[j] == '\r') ++j;
  return j < s.size() && s[j] == '\n' ? j + 1 - i : 0;
}

// The end of the logical line starting at `begin`: the line break that no lenient splice takes,
// or the end of the source.
size_t logical_line_end(std::string_view s, size_t begin) {
  for (size_t from = begin;;) {
    size_t nl = s.find('\n', from);
    if (nl == std::string_view::npos) return s.size();
    size_t j = nl;
    if (j > from && s[j - 1] == '\r') --j;
    while (j > from && (s[j - 1] == ' ' || s[j - 1] == '\t')) --j;
    if (j == from || s[j - 1] != '\\') return nl;  // no backslash: the line ends here
    from = nl + 1;
  }
}

}  // namespace

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string splice_lines(std::string_view s, bool lenient, std::vector<size_t>& splices) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (size_t n = splice_length(s, i, lenient)) {
      splices.push_back(out.size());
      i += n - 1;
      continue;
    }
    out += s[i];
  }
  return out;
}

std::string blank_comments_and_literals(std::string_view s) {
  std::string code(s);
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < s.size(); ++k)
      if (s[k] != '\n') code[k] = ' ';
  };
  auto is_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      size_t end = s.find('\n', i);
      end = end == std::string_view::npos ? s.size() : end;
      blank(i, end);
      i = end;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t close = s.find("*/", i + 2);
      size_t end = close == std::string_view::npos ? s.size() : close + 2;
      blank(i, end);
      i = end;
    } else if (c == '"' && i > 0 && s[i - 1] == 'R' &&
               (i < 2 || !is_identifier_char(s[i - 2]) || s[i - 2] == '8' || s[i - 2] == 'u' || s[i - 2] == 'U' ||
                s[i - 2] == 'L')) {
      size_t open = s.find('(', i);
      std::string delim = open == std::string_view::npos ? "" : ")" + std::string(s.substr(i + 1, open - i - 1)) + "\"";
      size_t close = open == std::string_view::npos ? std::string_view::npos : s.find(delim, open);
      size_t end = close == std::string_view::npos ? s.size() : close + delim.size();
      blank(i, end);
      i = end;
    } else if (c == '\'' && i > 0 && is_hex(s[i - 1]) && i + 1 < s.size() && is_hex(s[i + 1])) {
      ++i;  // a digit separator (1'000'000)
    } else if (c == '"' || c == '\'') {
      size_t k = i + 1;
      while (k < s.size() && s[k] != c && s[k] != '\n') k += s[k] == '\\' ? 2 : 1;
      blank(i, k + 1);
      i = k + 1;
    } else {
      ++i;
    }
  }
  return code;
}

Directive read_directive(std::string_view s, size_t at, size_t after) {
  Directive d;
  d.at = at;
  size_t j = skip_blanks(s, after, true);
  // A universal character name (\u0069) may spell an identifier; any other escape ends it.
  while (j < s.size() && (is_identifier_char(s[j]) || s[j] == '$' ||
                          (s[j] == '\\' && j + 1 < s.size() && (s[j + 1] == 'u' || s[j + 1] == 'U'))))
    d.word += s[j++];
  j = skip_blanks(s, j, false);
  if (j < s.size() && (s[j] == '"' || s[j] == '<')) {
    char close = s[j] == '"' ? '"' : '>';
    size_t end = s.find_first_of(std::string{close, '\n'}, j + 1);
    if (end != std::string_view::npos && s[end] == close) {
      d.literal = true;
      d.delimiter = s[j];
      d.operand = std::string(s.substr(j + 1, end - j - 1));
    }
  }
  if (!d.literal)
    for (size_t k = j; k < s.size() && is_identifier_char(s[k]); ++k) d.name += s[k];
  return d;
}

void for_each_directive(std::string_view s, const std::function<void(const Directive&)>& visit) {
  for (size_t i = 0; i < s.size(); ++i) {
    size_t after;
    if (s[i] == '#')
      after = i + 1;
    else if (s.substr(i, 2) == "%:")
      after = i + 2;
    else if (s.substr(i, 3) == "?\?=")
      after = i + 3;
    else
      continue;
    Directive d = read_directive(s, i, after);
    if (!d.word.empty()) visit(d);
  }
}

std::vector<DirectiveLine> directive_lines(std::string_view source) {
  const std::string code = blank_comments_and_literals(source);
  std::vector<DirectiveLine> out;
  for (size_t begin = 0; begin < source.size();) {
    const size_t end = logical_line_end(source, begin);
    size_t i = begin;
    while (i < end && (code[i] == ' ' || code[i] == '\t')) ++i;
    // No trigraphs: C++17 has none, so "??=" starts no directive here.
    const size_t introducer = code.compare(i, 1, "#") == 0 ? 1 : code.compare(i, 2, "%:") == 0 ? 2 : 0;
    if (i < end && introducer > 0) {
      // The introducer is on the line's first physical line, before any splice: offsets agree.
      std::vector<size_t> splices;
      const std::string line = splice_lines(source.substr(begin, end - begin), true, splices);
      DirectiveLine d{begin, end, read_directive(line, i - begin, i - begin + introducer)};
      d.directive.at = i;
      out.push_back(std::move(d));
    }
    begin = end < source.size() ? end + 1 : end;
  }
  return out;
}

}  // namespace kevo::source_scan
