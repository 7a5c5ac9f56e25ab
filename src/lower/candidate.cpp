// What every candidate has, whatever its family: the comment and kevo-plan block around its source,
// C++ identifiers for the contract's tensors, and `#include "kevo/..."` lines for kevo's template
// library, which the Builder serves to NVRTC from memory (core/template_library.h).
#include <nlohmann/json.hpp>

#include <cctype>
#include <sstream>

#include "core/template_library.h"
#include "lower/kit.h"

namespace kevo::lower {

std::string template_includes(const std::vector<std::string>& paths) { return templates::include_lines(paths); }

std::string candidate_templates(const Manifest& manifest) {
  return template_includes({"common.cuh", manifest.source});
}

std::string ident(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "t_" + s;
  return s;
}

std::string candidate_text(const Task& task, const std::string& name, const nlohmann::json& plan,
                           const std::string& comment, const std::string& source) {
  // One line per buffer and per step, so a reader sees the launch sequence at a glance.
  std::ostringstream s;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) s << "// " << line << "\n";
  s << "/* kevo-plan\n{\n  \"name\": " << nlohmann::json(name).dump() << ",\n  \"task\": " << nlohmann::json(task.name).dump()
    << ",\n  \"plan\": {\n";
  bool first = true;
  for (const char* key : {"buffers", "steps"}) {
    if (!plan.contains(key)) continue;
    const nlohmann::json& list = plan.at(key);
    s << (first ? "" : ",\n") << "    \"" << key << "\": " << (list.is_object() ? "{" : "[") << "\n";
    if (list.is_object()) {  // scratch buffers: name -> {dtype, shape}
      size_t i = 0;
      for (const auto& [k, v] : list.items())
        s << "      " << nlohmann::json(k).dump() << ": " << v.dump() << (++i < list.size() ? ",\n" : "\n");
      s << "    }";
    } else {
      for (size_t i = 0; i < list.size(); ++i) s << "      " << list[i].dump() << (i + 1 < list.size() ? ",\n" : "\n");
      s << "    ]";
    }
    first = false;
  }
  s << "\n  }\n}\n*/\n\n" << source;
  return s.str();
}

}  // namespace kevo::lower
