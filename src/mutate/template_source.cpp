// The template text a candidate carries: kevo's template files with their own #includes pasted in
// once each, since a candidate may include nothing but the toolkit's headers.
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "mutate/families.h"

namespace kevo::mutate {

namespace {

// The target of `#include "name"` (quotes only), or empty when the line is no such directive.
std::string quoted_include(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return "";
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos || line.compare(i, 7, "include") != 0) return "";
  const size_t open = line.find_first_not_of(" \t", i + 7);
  if (open == std::string::npos || line[open] != '"') return "";
  const size_t close = line.find('"', open + 1);
  return close == std::string::npos ? "" : line.substr(open + 1, close - open - 1);
}

// `name` as included from the template file `from`, as a path under templates/ ("pool/stream.cuh"
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

using Files = std::map<std::string, std::string>;

void paste(const Files& files, const std::string& path, std::set<std::string>& pasted, std::string& out) {
  if (!pasted.insert(path).second) return;
  auto file = files.find(path);
  if (file == files.end()) throw std::out_of_range("no template file '" + path + "'");
  std::istringstream lines(file->second);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#pragma once", 0) == 0) continue;
    const std::string name = quoted_include(line);
    if (name.empty()) {
      out += line + "\n";
      continue;
    }
    const std::string target = resolve(path, name);
    if (!files.count(target))
      throw std::logic_error("templates/" + path + " includes \"" + name + "\", which is not a template file");
    paste(files, target, pasted, out);
  }
}

}  // namespace

std::string template_sources(const std::vector<std::string>& paths, const Files& files) {
  std::set<std::string> pasted;
  std::string out;
  for (const std::string& p : paths) {
    if (pasted.count(p)) continue;
    if (!out.empty()) out += "\n";
    paste(files, p, pasted, out);
  }
  return out;
}

std::string template_sources(const std::vector<std::string>& paths) {
  return template_sources(paths, embedded_templates());
}

std::string candidate_templates(const Manifest& manifest) {
  return template_sources({"common.cuh", manifest.source});
}

}  // namespace kevo::mutate
