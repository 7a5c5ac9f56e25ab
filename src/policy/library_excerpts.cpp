// Finding a name's definition in the template library by reading its lines as they are written:
// a definition starts a line (after `template <...>` when on the same line) with struct, class,
// enum, union or using followed by the name, or is a function whose name is followed by its
// parameter list; its comment is the run of // lines right above (and a `template <...>` line);
// its body runs to the brace that balances its first one, or ends at its first `;`.
#include "policy/library_excerpts.h"

#include <regex>
#include <set>
#include <sstream>

#include "core/source_scan.h"
#include "core/template_library.h"

namespace kevo::policy {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// kevo::NAME uses in the source's code (comments and literals blanked), in order of first use.
std::vector<std::string> used_names(const std::string& source) {
  const std::string code = source_scan::blank_comments_and_literals(source);
  static const std::regex kUse(R"(kevo::([A-Za-z_]\w*))");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), kUse); it != std::sregex_iterator(); ++it)
    if (seen.insert((*it)[1]).second) out.push_back((*it)[1]);
  return out;
}

// Recognises the line that starts the definition of one name.
class DefinitionOf {
 public:
  explicit DefinitionOf(const std::string& name)
      : name_(name),
        type_("^\\s*(template\\s*<.*>\\s*)?(struct|class|enum class|enum struct|enum|union|using)\\s+" + name +
              "\\b\\s*([:{=<;]|$)"),
        constant_("^\\s*(static\\s+)?(inline\\s+)?(__device__\\s+)?constexpr\\s+[\\w:<> ]+\\s" + name + "\\s*[={]"),
        function_("^\\s*(template\\s*<.*>\\s*)?[A-Za-z_][\\w:<>,*& ]*[\\s*&]" + name + "\\s*\\(") {}

  bool operator()(const std::string& line) const {
    if (line.find(name_) == std::string::npos || line.find("return ") != std::string::npos) return false;
    return std::regex_search(line, type_) || std::regex_search(line, constant_) || std::regex_search(line, function_);
  }

 private:
  std::string name_;
  std::regex type_, constant_, function_;
};

bool is_comment(const std::string& line) {
  const size_t i = line.find_first_not_of(" \t");
  return i != std::string::npos && line.compare(i, 2, "//") == 0;
}

bool is_template_head(const std::string& line) {
  const size_t i = line.find_first_not_of(" \t");
  return i != std::string::npos && line.compare(i, 8, "template") == 0 && line.find('{') == std::string::npos &&
         line.find(';') == std::string::npos;
}

// [first, end) of the definition starting at `at`: its comment and template head above, its body.
std::pair<size_t, size_t> extent(const std::vector<std::string>& lines, size_t at) {
  size_t first = at;
  while (first > 0 && (is_comment(lines[first - 1]) || is_template_head(lines[first - 1]))) --first;
  int depth = 0;
  bool opened = false;
  for (size_t i = at; i < lines.size(); ++i) {
    for (char c : source_scan::blank_comments_and_literals(lines[i])) {
      if (c == '{') ++depth, opened = true;
      if (c == '}') --depth;
      if (c == ';' && !opened && depth == 0) return {first, i + 1};
    }
    if (opened && depth <= 0) return {first, i + 1};
  }
  return {first, lines.size()};
}

std::string excerpt_text(const std::vector<std::string>& lines, size_t first, size_t end, size_t at, int max_lines,
                         const std::string& header) {
  std::string text;
  const size_t stop = std::min(end, at + static_cast<size_t>(max_lines));
  for (size_t i = first; i < stop; ++i) text += lines[i] + "\n";
  if (stop < end)
    text += "  // ... (" + std::to_string(end - stop) + " more lines: " + header + " lines " + std::to_string(stop + 1) +
            "-" + std::to_string(end) + ")\n";
  return text;
}

}  // namespace

std::vector<LibraryExcerpt> library_excerpts(const std::string& source, int max_lines) {
  templates::Files served;
  for (const source_scan::DirectiveLine& d : source_scan::directive_lines(source))
    if (d.directive.word == "include" && templates::is_library_header(d.directive.operand)) {
      templates::Files more = templates::served_headers(d.directive.operand);
      served.insert(more.begin(), more.end());
    }
  std::vector<LibraryExcerpt> out;
  if (served.empty()) return out;
  std::vector<std::pair<std::string, std::vector<std::string>>> files;
  for (const auto& [name, text] : served) files.emplace_back(name, lines_of(text));
  for (const std::string& name : used_names(source)) {
    const DefinitionOf defines(name);
    for (const auto& [header, lines] : files) {
      size_t at = 0;
      while (at < lines.size() && !defines(lines[at])) ++at;
      if (at == lines.size()) continue;
      const auto [first, end] = extent(lines, at);
      out.push_back({name, header, static_cast<int>(first + 1), excerpt_text(lines, first, end, at, max_lines, header)});
      break;
    }
  }
  return out;
}

}  // namespace kevo::policy
