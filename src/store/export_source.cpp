// Namespacing the candidate's source: extern "C" dropped, namespaces closed around each #include,
// the macros it defines found (the directives as core/source_scan.h's directive_lines sees them).
#include "store/export_source.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/error.h"
#include "core/source_scan.h"

namespace kevo::store::exporter {

namespace {

[[noreturn]] void fail(const Candidate& c, const std::string& where, const std::string& what) {
  throw InputError(Location{c.file, 0, 0}, where, what);
}

struct Edit {
  size_t begin, end;
  std::string text;
};

}  // namespace

PreparedSource prepare_source(const Candidate& c, const std::string& open, const std::string& close) {
  const std::string& src = c.source;
  const std::string code = source_scan::blank_comments_and_literals(src);
  const std::vector<source_scan::DirectiveLine> dirs = source_scan::directive_lines(src);
  std::string code_only = code;  // without directive lines: braces in macros do not count
  for (const source_scan::DirectiveLine& d : dirs)
    for (size_t k = d.begin; k < d.end; ++k)
      if (code_only[k] != '\n') code_only[k] = ' ';
  auto in_directive = [&](size_t at) {
    for (const source_scan::DirectiveLine& d : dirs)
      if (at >= d.begin && at < d.end) return true;
    return false;
  };
  auto line_of = [&](size_t at) { return 1 + static_cast<int>(std::count(src.begin(), src.begin() + at, '\n')); };

  PreparedSource out;
  out.clusters = code.find("__cluster_dims__") != std::string::npos;
  std::vector<Edit> edits;
  std::set<std::string> macros;
  for (const source_scan::DirectiveLine& d : dirs) {
    const std::string& word = d.directive.word;
    if ((word == "define" || word == "undef") && !d.directive.name.empty()) macros.insert(d.directive.name);
    if (word != "include") continue;
    int depth = 0;
    for (size_t k = 0; k < d.begin; ++k) depth += code_only[k] == '{' ? 1 : code_only[k] == '}' ? -1 : 0;
    if (depth != 0)
      fail(c, "source line " + std::to_string(line_of(d.begin)),
           "an #include inside a block cannot be exported: the header closes its namespaces around each #include");
    edits.push_back({d.begin, d.end,
                     close + "  // (closed around the source's #include)\n" + src.substr(d.begin, d.end - d.begin) +
                         "\n" + open + "  // (reopened)"});
    ++out.includes;
  }
  out.macros.assign(macros.begin(), macros.end());

  auto skip_blank = [&](size_t i) {
    while (i < code.size() && std::isspace(static_cast<unsigned char>(code[i])) && src[i] != '"') ++i;
    return i;
  };
  for (size_t at = code.find("extern"); at != std::string::npos; at = code.find("extern", at + 6)) {
    if ((at > 0 && source_scan::is_identifier_char(code[at - 1])) || (at + 6 < code.size() && source_scan::is_identifier_char(code[at + 6]))) continue;
    size_t q = skip_blank(at + 6);
    if (src.compare(q, 3, "\"C\"") != 0) continue;
    size_t after = q + 3;
    size_t k = after;
    while (k < code.size() && std::isspace(static_cast<unsigned char>(code[k]))) ++k;
    if (!in_directive(at) && k < code.size() && code_only[k] == '{') {
      int depth = 0;
      size_t m = k;
      for (; m < code_only.size(); ++m) {
        depth += code_only[m] == '{' ? 1 : code_only[m] == '}' ? -1 : 0;
        if (depth == 0) break;
      }
      if (m >= code_only.size())
        fail(c, "source line " + std::to_string(line_of(at)), "unbalanced braces after extern \"C\" {");
      edits.push_back({at, k + 1, "/* extern \"C\" { (dropped by kevo export) */"});
      edits.push_back({m, m + 1, "/* } (extern \"C\") */"});
      ++out.extern_c;
      continue;
    }
    bool drop = in_directive(at);
    if (!drop) {
      int parens = 0;
      for (size_t m = after; m < code_only.size(); ++m) {
        char ch = code_only[m];
        if (ch == '(') ++parens;
        if (ch == ')') --parens;
        if (code_only.compare(m, 10, "__global__") == 0) drop = true;
        if (parens == 0 && (ch == '{' || ch == '=')) drop = true;
        if (parens == 0 && (ch == ';' || ch == '{' || ch == '=')) break;
      }
    }
    if (!drop) continue;
    edits.push_back({at, after, "/* extern \"C\" */"});
    ++out.extern_c;
  }

  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  std::string text;
  size_t from = 0;
  for (const Edit& e : edits) {
    text += src.substr(from, e.begin - from) + e.text;
    from = e.end;
  }
  text += src.substr(from);
  out.text = std::move(text);
  return out;
}

std::string kernel_function_prefix(const Candidate& c) {
  const std::string code = source_scan::blank_comments_and_literals(c.source);
  std::string prefix = "kevo_export_kernel_";
  while (code.find(prefix) != std::string::npos) prefix += "x_";
  return prefix;
}

}  // namespace kevo::store::exporter
