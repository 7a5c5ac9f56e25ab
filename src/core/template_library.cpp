// The template library's two forms in a candidate: included by name (served to NVRTC) and pasted in.
// Template files include each other with quoted relative names ("../common.cuh", "mma.cuh"); the
// library's reader below is line-based, as the templates are written, while a candidate's source
// is read with source_scan's directive reader.
#include "core/template_library.h"

#include <set>
#include <sstream>
#include <stdexcept>

#include "core/source_scan.h"

namespace kevo::templates {

namespace {

// The operand of an `#include` on a template line delimited by `open` and `close` ('"' '"' or
// '<' '>'), or empty when the line is no such directive.
std::string include_operand(const std::string& line, char open, char close) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return "";
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos || line.compare(i, 7, "include") != 0) return "";
  const size_t at = line.find_first_not_of(" \t", i + 7);
  if (at == std::string::npos || line[at] != open) return "";
  const size_t end = line.find(close, at + 1);
  return end == std::string::npos ? "" : line.substr(at + 1, end - at - 1);
}

std::string quoted_include(const std::string& line) { return include_operand(line, '"', '"'); }
std::string angled_include(const std::string& line) { return include_operand(line, '<', '>'); }

// `name` as included from the library file `from`, as a path under templates/ ("pool/stream.cuh"
// including "../common.cuh" is "common.cuh").
std::string resolve(const std::string& from, const std::string& name) {
  std::vector<std::string> parts;
  const size_t slash = from.rfind('/');
  std::istringstream in((slash == std::string::npos ? "" : from.substr(0, slash + 1)) + name);
  for (std::string part; std::getline(in, part, '/');) {
    if (part.empty() || part == ".") continue;
    if (part != "..") {
      parts.push_back(part);
    } else if (parts.empty()) {
      throw std::logic_error("templates/" + from + " includes \"" + name + "\", outside templates/");
    } else {
      parts.pop_back();
    }
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

const std::string& file_at(const Files& library, const std::string& path) {
  auto file = library.find(path);
  if (file == library.end()) throw std::out_of_range("no template file '" + path + "'");
  return file->second;
}

// The library file `path` includes as `name`, checked to exist.
std::string included_file(const Files& library, const std::string& path, const std::string& name) {
  const std::string target = resolve(path, name);
  if (!library.count(target))
    throw std::logic_error("templates/" + path + " includes \"" + name + "\", which is not a template file");
  return target;
}

void paste(const Files& library, const std::string& path, std::set<std::string>& done, std::string& out) {
  if (!done.insert(path).second) return;
  std::istringstream lines(file_at(library, path));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#pragma once", 0) == 0) continue;
    const std::string name = quoted_include(line);
    if (name.empty())
      out += line + "\n";
    else
      paste(library, included_file(library, path, name), done, out);
  }
}

void serve(const Files& library, const std::string& path, Files& out) {
  const std::string name = std::string(kIncludePrefix) + path;
  if (out.count(name)) return;
  out[name];  // claimed first: a cycle of includes stops here
  std::istringstream lines(file_at(library, path));
  std::string text;
  std::vector<std::string> included;
  for (std::string line; std::getline(lines, line);) {
    const std::string quoted = quoted_include(line);
    if (quoted.empty()) {
      text += line + "\n";
      continue;
    }
    included.push_back(included_file(library, path, quoted));
    text += "#include \"" + std::string(kIncludePrefix) + included.back() + "\"\n";
  }
  out[name] = std::move(text);
  for (const std::string& p : included) serve(library, p, out);
}

// The library path of an #include operand, or empty when it is not kevo/<path>.
std::string library_path(std::string_view operand) {
  if (operand.substr(0, kIncludePrefix.size()) != kIncludePrefix) return "";
  return std::string(operand.substr(kIncludePrefix.size()));
}

}  // namespace

bool is_library_header(std::string_view name, const Files& library) {
  const std::string path = library_path(name);
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".cuh") == 0 && library.count(path) > 0;
}

std::string include_lines(const std::vector<std::string>& paths) {
  std::string out;
  for (const std::string& p : paths) out += "#include \"" + std::string(kIncludePrefix) + p + "\"\n";
  return out;
}

Files served_headers(std::string_view name, const Files& library) {
  if (!is_library_header(name, library))
    throw std::out_of_range("'" + std::string(name) + "' is not a header of kevo's template library");
  Files out;
  serve(library, library_path(name), out);
  return out;
}

std::vector<std::string> toolkit_includes(const Files& served) {
  std::set<std::string> names;
  for (const auto& [name, text] : served) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      if (std::string h = angled_include(line); !h.empty()) names.insert(h);
  }
  return {names.begin(), names.end()};
}

std::string inline_library(const std::string& source, const Files& library) {
  std::set<std::string> done;
  std::string out;
  size_t copied = 0;
  for (const source_scan::DirectiveLine& line : source_scan::directive_lines(source)) {
    const source_scan::Directive& d = line.directive;
    if (d.word != "include" || !d.literal || d.delimiter != '"') continue;
    const std::string path = library_path(d.operand);
    if (path.empty()) continue;
    if (!is_library_header(d.operand, library))
      throw std::out_of_range("#include \"" + d.operand + "\": no such header in kevo's template library");
    out.append(source, copied, line.begin - copied);
    std::string text;
    paste(library, path, done, text);
    if (!text.empty() && text.back() == '\n') text.pop_back();  // the line's own break follows
    out += text;
    copied = line.end;
  }
  out.append(source, copied, std::string::npos);
  return out;
}

bool includes_library(const std::string& source) {
  for (const source_scan::DirectiveLine& line : source_scan::directive_lines(source)) {
    const source_scan::Directive& d = line.directive;
    if (d.word == "include" && d.literal && !library_path(d.operand).empty()) return true;
  }
  return false;
}

}  // namespace kevo::templates
