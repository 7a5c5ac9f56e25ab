// What a language model is shown of kevo's template library beside a candidate that includes it:
// the definitions of the kevo:: names the candidate's own lines use, read from the headers it
// includes, each with its comment, a long body cut.
#pragma once

#include <string>
#include <vector>

namespace kevo::policy {

struct LibraryExcerpt {
  std::string name;    // the kevo:: name it defines ("GemmConfig")
  std::string header;  // the header it is in ("kevo/gemm/gemm.cuh")
  int line = 0;        // its first line there (1-based)
  std::string text;    // the comment and the definition, a long body cut with a note
};

// The definitions of the kevo:: names `source` uses, in order of first use, from the library
// headers it includes (and those they include); names defined nowhere there are left out. Bodies
// longer than `max_lines` are cut after their first `max_lines` lines.
std::vector<LibraryExcerpt> library_excerpts(const std::string& source, int max_lines = 40);

}  // namespace kevo::policy
