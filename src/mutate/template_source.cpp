// The template text a candidate carries: `#include "kevo/..."` lines for kevo's template library,
// which the Builder serves to NVRTC from memory (core/template_library.h).
#include "core/template_library.h"
#include "mutate/families.h"

namespace kevo::mutate {

std::string template_includes(const std::vector<std::string>& paths) { return templates::include_lines(paths); }

std::string candidate_templates(const Manifest& manifest) {
  return template_includes({"common.cuh", manifest.source});
}

}  // namespace kevo::mutate
