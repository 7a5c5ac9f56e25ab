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

// The source as the edits read it: comments and literals blanked (`code`), directive lines blanked
// too (`code_only`: braces in macros do not count), and the directives.
struct SourceView {
  const std::string& src;
  std::string code, code_only;
  std::vector<source_scan::DirectiveLine> dirs;

  explicit SourceView(const std::string& s)
      : src(s), code(source_scan::blank_comments_and_literals(s)), dirs(source_scan::directive_lines(s)) {
    code_only = code;
    for (const source_scan::DirectiveLine& d : dirs)
      for (size_t k = d.begin; k < d.end; ++k)
        if (code_only[k] != '\n') code_only[k] = ' ';
  }
  bool in_directive(size_t at) const {
    for (const source_scan::DirectiveLine& d : dirs)
      if (at >= d.begin && at < d.end) return true;
    return false;
  }
  int line_of(size_t at) const { return 1 + static_cast<int>(std::count(src.begin(), src.begin() + at, '\n')); }
};

// Each #include closed around by the namespaces; the macros defined or undefined, into `out`.
void include_edits(const Candidate& c, const SourceView& v, const std::string& open, const std::string& close,
                   std::vector<Edit>& edits, PreparedSource& out) {
  std::set<std::string> macros;
  for (const source_scan::DirectiveLine& d : v.dirs) {
    const std::string& word = d.directive.word;
    if ((word == "define" || word == "undef") && !d.directive.name.empty()) macros.insert(d.directive.name);
    if (word != "include") continue;
    int depth = 0;
    for (size_t k = 0; k < d.begin; ++k) depth += v.code_only[k] == '{' ? 1 : v.code_only[k] == '}' ? -1 : 0;
    if (depth != 0)
      fail(c, "source line " + std::to_string(v.line_of(d.begin)),
           "an #include inside a block cannot be exported: the header closes its namespaces around each #include");
    edits.push_back({d.begin, d.end,
                     close + "  // (closed around the source's #include)\n" + v.src.substr(d.begin, d.end - d.begin) +
                         "\n" + open + "  // (reopened)"});
    ++out.includes;
  }
  out.macros.assign(macros.begin(), macros.end());
}

// Whether the `extern "C"` whose "C" ends at `after` is on a definition or a kernel (or in a
// macro): dropped then; a plain declaration keeps it.
bool drops_linkage(const SourceView& v, size_t at, size_t after) {
  if (v.in_directive(at)) return true;
  int parens = 0;
  for (size_t m = after; m < v.code_only.size(); ++m) {
    char ch = v.code_only[m];
    if (ch == '(') ++parens;
    if (ch == ')') --parens;
    if (v.code_only.compare(m, 10, "__global__") == 0) return true;
    if (parens == 0 && (ch == '{' || ch == '=')) return true;
    if (parens == 0 && ch == ';') return false;
  }
  return false;
}

// `extern "C"` dropped from definitions and kernels, and around `extern "C" { ... }` blocks.
void extern_c_edits(const Candidate& c, const SourceView& v, std::vector<Edit>& edits, PreparedSource& out) {
  const std::string &src = v.src, &code = v.code, &code_only = v.code_only;
  auto skip_blank = [&](size_t i) {
    while (i < code.size() && std::isspace(static_cast<unsigned char>(code[i])) && src[i] != '"') ++i;
    return i;
  };
  for (size_t at = code.find("extern"); at != std::string::npos; at = code.find("extern", at + 6)) {
    if ((at > 0 && source_scan::is_identifier_char(code[at - 1])) ||
        (at + 6 < code.size() && source_scan::is_identifier_char(code[at + 6])))
      continue;
    size_t q = skip_blank(at + 6);
    if (src.compare(q, 3, "\"C\"") != 0) continue;
    size_t after = q + 3;
    size_t k = after;
    while (k < code.size() && std::isspace(static_cast<unsigned char>(code[k]))) ++k;
    if (!v.in_directive(at) && k < code.size() && code_only[k] == '{') {
      int depth = 0;
      size_t m = k;
      for (; m < code_only.size(); ++m) {
        depth += code_only[m] == '{' ? 1 : code_only[m] == '}' ? -1 : 0;
        if (depth == 0) break;
      }
      if (m >= code_only.size())
        fail(c, "source line " + std::to_string(v.line_of(at)), "unbalanced braces after extern \"C\" {");
      edits.push_back({at, k + 1, "/* extern \"C\" { (dropped by kevo export) */"});
      edits.push_back({m, m + 1, "/* } (extern \"C\") */"});
      ++out.extern_c;
      continue;
    }
    if (!drops_linkage(v, at, after)) continue;
    edits.push_back({at, after, "/* extern \"C\" */"});
    ++out.extern_c;
  }
}

std::string applied(const std::string& src, std::vector<Edit> edits) {
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  std::string text;
  size_t from = 0;
  for (const Edit& e : edits) {
    text += src.substr(from, e.begin - from) + e.text;
    from = e.end;
  }
  return text + src.substr(from);
}

}  // namespace

PreparedSource prepare_source(const Candidate& c, const std::string& open, const std::string& close) {
  const SourceView v(c.source);
  PreparedSource out;
  out.clusters = v.code.find("__cluster_dims__") != std::string::npos;
  std::vector<Edit> edits;
  include_edits(c, v, open, close, edits, out);
  extern_c_edits(c, v, edits, out);
  out.text = applied(c.source, std::move(edits));
  return out;
}

std::string kernel_function_prefix(const Candidate& c) {
  const std::string code = source_scan::blank_comments_and_literals(c.source);
  std::string prefix = "kevo_export_kernel_";
  while (code.find(prefix) != std::string::npos) prefix += "x_";
  return prefix;
}

}  // namespace kevo::store::exporter
