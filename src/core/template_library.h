// kevo's template library (templates/: the families' .cuh files and manifests), embedded at build
// time, and the two ways a candidate's source holds it: included by name ("kevo/gemm/gemm.cuh",
// what rendered candidates carry and NVRTC is served from memory) or pasted in (what an exported
// header carries, self-contained for nvcc).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kevo::templates {

using Files = std::map<std::string, std::string>;  // path under templates/ -> text

// Every file under templates/, embedded at build time (templates_embedded.cpp, generated).
const Files& files();

// The prefix a candidate includes the library under: "kevo/" + a path under templates/.
inline constexpr std::string_view kIncludePrefix = "kevo/";

// True when `name` (an #include operand) is kevo/ followed by a .cuh file of `library`.
bool is_library_header(std::string_view name, const Files& library = files());

// `#include "kevo/<path>"` lines, one per path, in order.
std::string include_lines(const std::vector<std::string>& paths);

// The headers NVRTC needs for `#include "kevo/<path>"`: that file and every library file it
// includes (transitively), each under its kevo/ name, their own quoted includes rewritten to kevo/
// names (a line's text changes, never the line count). Throws std::out_of_range when `name` is no
// library header, std::logic_error when a library file includes a file outside templates/.
Files served_headers(std::string_view name, const Files& library = files());
// Toolkit headers (<cuda_fp16.h>) the files of served_headers include, which NVRTC needs as well.
std::vector<std::string> toolkit_includes(const Files& served);

// `source` with each `#include "kevo/..."` a preprocessor would see replaced by the file, and the
// library files it includes pasted in where it includes them: every file once over the whole
// source, in the order first reached (#pragma once semantics), #pragma once lines dropped, the
// toolkit's includes kept. The same program, with nothing to include but the toolkit's headers.
// Throws std::out_of_range naming an unknown kevo/ header, std::logic_error as served_headers.
std::string inline_library(const std::string& source, const Files& library = files());

// True when `source` has an `#include "kevo/..."` a preprocessor would see.
bool includes_library(const std::string& source);

}  // namespace kevo::templates
