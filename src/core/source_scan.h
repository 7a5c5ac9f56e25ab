// Reading CUDA C++ source for its preprocessing directives: line splicing, comments and literals
// blanked, and the two scans built on one directive reader.
//
// Two readers need the directives, for opposite reasons. The Builder checks untrusted source
// before NVRTC sees it (what may be included): its scan must never miss a directive, so it is
// deliberately blunter than a preprocessor and takes every '#', '%:' and '??=' it finds, inside
// comments and literals too (for_each_directive); a false alarm costs a candidate, a miss would
// let it read the disk. The exporter edits trusted source around its directives (namespaces
// closed around #include, macros saved and restored): it must see exactly what a preprocessor
// sees, and only that (directive_lines). Both read a directive's word, operand and name the same
// way (read_directive) over the same splicing and comment rules; only where they look differs.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kevo::source_scan {

bool is_identifier_char(char c);  // [A-Za-z0-9_]

// Line splicing (translation phase 2): each backslash followed by a line break is taken out.
// `lenient` also splices a backslash followed by blanks, which some preprocessors accept.
// `splices` gets the offsets in the result where splices were taken out, for line numbers.
std::string splice_lines(std::string_view s, bool lenient, std::vector<size_t>& splices);

// The source with comments and string and character literals (raw ones included) replaced by
// spaces, line breaks kept: where a preprocessor sees tokens, at the same offsets.
std::string blank_comments_and_literals(std::string_view s);

// A preprocessing directive as a scan reads it.
struct Directive {
  size_t at = 0;         // offset of its introducer ('#', "%:" or "??=")
  std::string word;      // "include", "define", ...; may hold '\\' or '$' when spelled with \u escapes
  bool literal = false;  // the operand is "name" or <name> on the same line
  char delimiter = 0;    // '"' or '<' when literal
  std::string operand;   // the name between the delimiters when literal
  std::string name;      // otherwise the identifier after the word (the macro of #define and #undef)
};

// The directive whose introducer spans [at, after) in spliced text: blanks, comments and line
// breaks may stand between the introducer and the word, blanks and comments between the word
// and its operand.
Directive read_directive(std::string_view s, size_t at, size_t after);

// Every introducer followed by a word, wherever it stands: the Builder's security scan over
// spliced text (see the top of this file).
void for_each_directive(std::string_view s, const std::function<void(const Directive&)>& visit);

// A directive where a preprocessor sees one: '#' or '%:' first on a logical line (physical lines
// joined where a splice, lenient, ends one) and outside comments and literals.
struct DirectiveLine {
  size_t begin = 0, end = 0;  // the logical line in the source, without its final line break
  Directive directive;        // read from the line spliced; its `at` is the source offset
};
std::vector<DirectiveLine> directive_lines(std::string_view source);

}  // namespace kevo::source_scan
