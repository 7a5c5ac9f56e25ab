// The directive scans: the Builder's blunt one sees every introducer, the exporter's careful one
// only what a preprocessor sees; both read a directive the same way.
#include "core/source_scan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kevo::source_scan {
namespace {

std::vector<std::string> blunt_words(const std::string& text) {
  std::vector<size_t> splices;
  std::vector<std::string> words;
  for_each_directive(splice_lines(text, false, splices), [&](const Directive& d) { words.push_back(d.word); });
  return words;
}

std::vector<std::string> line_words(const std::string& text) {
  std::vector<std::string> words;
  for (const DirectiveLine& d : directive_lines(text)) words.push_back(d.directive.word);
  return words;
}

const char* kHidden = R"src(#include <cuda_fp16.h>
// #include "in_a_comment.h"
const char* s = "#include <in_a_string.h>";
/* a block
#define IN_A_BLOCK 1
*/
const char* r = R"x(
#undef IN_A_RAW_STRING
)x";
  %:define DIGRAPH 2
??=define TRIGRAPH 3
int x = 1'000; # /* a null directive */
)src";

TEST(SourceScan, TheBuildersScanSeesEveryIntroducerTheExportersOnlyRealDirectives) {
  EXPECT_EQ(blunt_words(kHidden), (std::vector<std::string>{"include", "include", "include", "define", "undef",
                                                              "define", "define"}));
  EXPECT_EQ(line_words(kHidden), (std::vector<std::string>{"include", "define"}));
}

TEST(SourceScan, ReadsTheWordTheOperandAndTheName) {
  std::vector<DirectiveLine> lines = directive_lines(
      "  # /* c */ include \"cuda_bf16.h\"\n#define \\\n  MACRO(x) x\n#undef/**/OTHER\n#if defined(A)\n#endif\n");
  ASSERT_EQ(lines.size(), 5u);
  const Directive& inc = lines[0].directive;
  EXPECT_EQ(inc.word, "include");
  EXPECT_TRUE(inc.literal);
  EXPECT_EQ(inc.delimiter, '"');
  EXPECT_EQ(inc.operand, "cuda_bf16.h");
  EXPECT_EQ(inc.at, 2u);
  EXPECT_EQ(lines[0].begin, 0u);
  // A spliced line is one logical line; its name comes after the splice.
  EXPECT_EQ(lines[1].directive.word, "define");
  EXPECT_EQ(lines[1].directive.name, "MACRO");
  const std::string second = "#define \\\n  MACRO(x) x";
  EXPECT_EQ(lines[1].end - lines[1].begin, second.size());
  EXPECT_EQ(lines[2].directive.name, "OTHER");
  EXPECT_EQ(lines[3].directive.word, "if");
  EXPECT_EQ(lines[3].directive.name, "defined");
}

TEST(SourceScan, TheBlindScanReadsAcrossCommentsAndLineBreaksAndEscapes) {
  std::vector<size_t> splices;
  std::vector<Directive> found;
  for_each_directive(splice_lines("#\n/* x */ include <a.h>\n#\\u0069nclude <b.h>\n", false, splices),
                     [&](const Directive& d) { found.push_back(d); });
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].word, "include");
  EXPECT_EQ(found[0].operand, "a.h");
  EXPECT_EQ(found[1].word, "\\u0069nclude");
}

TEST(SourceScan, SplicingIsStrictOrLenientAndRecordsWhere) {
  std::vector<size_t> splices;
  EXPECT_EQ(splice_lines("a\\\nb\\ \nc", false, splices), "ab\\ \nc");
  EXPECT_EQ(splices, (std::vector<size_t>{1}));
  splices.clear();
  EXPECT_EQ(splice_lines("a\\\r\nb\\ \t\nc", true, splices), "abc");
  EXPECT_EQ(splices, (std::vector<size_t>{1, 2}));
}

TEST(SourceScan, BlankingKeepsOffsetsAndLineBreaks) {
  const std::string s = "a /* b\nc */ \"d\\\"e\" 'f' R\"z(g)\nh)z\" 1'000 // i\nj";
  const std::string blanked = blank_comments_and_literals(s);
  ASSERT_EQ(blanked.size(), s.size());
  // The R of a raw string stays: it is an identifier-like prefix, not part of the literal's text.
  EXPECT_EQ(blanked, std::string("a ") + "    \n    " + " " + "      " + " " + "   " + " R" + "     \n    " + " 1'000 " +
                         "    " + "\nj");
}

}  // namespace
}  // namespace kevo::source_scan
