// The child a language model's reply makes of a parent's source, and the check that it is device
// code only (what may reach NVRTC from an untrusted completion).
#include "mutate/child_source.h"

#include <sstream>
#include <stdexcept>

#include "core/template_library.h"
#include "mutate/edit.h"

namespace kevo::mutate {

namespace {

// The kevo-plan comment of a source: [begin, end) of the whole comment, or npos.
std::pair<size_t, size_t> plan_comment(const std::string& s) {
  size_t b = s.find("/* kevo-plan");
  if (b == std::string::npos) return {std::string::npos, std::string::npos};
  size_t e = s.find("*/", b);
  return {b, e == std::string::npos ? std::string::npos : e + 2};
}

// The header an `#include "NAME"` line names (after the directive word), or empty.
std::string quoted_header(const std::string& rest) {
  const size_t open = rest.find_first_not_of(" \t");
  if (open == std::string::npos || rest[open] != '"') return "";
  const size_t close = rest.find('"', open + 1);
  if (close == std::string::npos) return "";
  const size_t after = rest.find_first_not_of(" \t", close + 1);
  if (after != std::string::npos && rest.compare(after, 2, "//") != 0) return "";
  return rest.substr(open + 1, close - open - 1);
}

// Nothing but device code may reach NVRTC: an #include could read the node's files into a compile
// log, and that log goes back into the next prompt. kevo's template library is the exception: the
// Builder serves it from memory.
void check_device_only(const std::string& source) {
  std::istringstream in(source);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos) continue;
    std::string t = line.substr(i);
    if (t[0] == '#') {
      size_t k = t.find_first_not_of(" \t", 1);
      std::string directive = k == std::string::npos ? "" : t.substr(k);
      if (directive.rfind("include", 0) == 0 && templates::is_library_header(quoted_header(directive.substr(7))))
        continue;
      for (const char* bad : {"include", "embed", "line"})
        if (directive.rfind(bad, 0) == 0)
          throw std::runtime_error("candidate line " + std::to_string(n) + ": #" + bad +
                                   " is not allowed (device code only; only kevo's template library may be included, "
                                   "as #include \"kevo/...\")");
    }
    if (t.find("__has_include") != std::string::npos)
      throw std::runtime_error("candidate line " + std::to_string(n) + ": __has_include is not allowed");
  }
}

}  // namespace

std::string child_source(const std::string& parent_source, const std::string& reply) {
  ParsedReply parsed = parse_reply(reply);
  std::string child;
  if (!parsed.blocks.empty()) child = apply_edits(parent_source, parsed.blocks);
  else child = parsed.rewrite;
  if (!parsed.plan.empty()) {
    std::string plan = parsed.plan;
    // A plan block may come with or without its comment markers.
    if (plan.find("kevo-plan") == std::string::npos) plan = "/* kevo-plan\n" + plan + (plan.back() == '\n' ? "" : "\n") + "*/";
    auto [b, e] = plan_comment(child);
    if (b != std::string::npos && e != std::string::npos) child.replace(b, e - b, plan);
    else child = plan + "\n" + child;
  } else if (plan_comment(child).first == std::string::npos) {
    // A rewrite without a plan keeps the parent's.
    auto [b, e] = plan_comment(parent_source);
    if (b != std::string::npos && e != std::string::npos) child = parent_source.substr(b, e - b) + "\n" + child;
  }
  check_device_only(child);
  return child;
}

}  // namespace kevo::mutate
