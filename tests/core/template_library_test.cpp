// kevo's template library in a candidate's source: included by kevo/ names and served as NVRTC's
// in-memory headers, or pasted in for an exported header.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/template_library.h"

namespace kevo::templates {
namespace {

const Files kLibrary = {
    {"common.cuh", "#pragma once\nCOMMON\n"},
    {"f/a.cuh", "// a\n#pragma once\n#include \"../common.cuh\"\n  #  include \"b.cuh\"\nA\n"},
    {"f/b.cuh", "#pragma once\n#include \"../common.cuh\"\n#include \"a.cuh\"\nB\n"},
    {"f/toolkit.cuh", "#include <cuda_fp16.h>\nT\n"},
    {"f/bad.cuh", "#include \"nope.cuh\"\n"},
    {"f/out.cuh", "#include \"../../x.cuh\"\n"},
    {"f/manifest.json", "{}"}};

// The library pasted in for `paths` included in order.
std::string pasted(const std::vector<std::string>& paths) { return inline_library(include_lines(paths), kLibrary); }

TEST(TemplateLibrary, PastesEveryIncludedFileOnceWhereItIsFirstIncluded) {
  EXPECT_EQ(pasted({"f/a.cuh"}), "// a\nCOMMON\nB\nA\n");
  EXPECT_EQ(pasted({"common.cuh", "f/b.cuh", "f/a.cuh"}), "COMMON\n// a\nA\nB\n\n");  // a.cuh came with b.cuh
  EXPECT_EQ(pasted({"f/toolkit.cuh"}), "#include <cuda_fp16.h>\nT\n");  // the toolkit's stay
  EXPECT_THROW(pasted({"f/bad.cuh"}), std::logic_error);
  EXPECT_THROW(pasted({"f/out.cuh"}), std::logic_error);
  EXPECT_THROW(pasted({"f/none.cuh"}), std::out_of_range);
}

TEST(TemplateLibrary, NamesItsHeadersUnderKevoAndNothingElse) {
  EXPECT_TRUE(is_library_header("kevo/f/a.cuh", kLibrary));
  EXPECT_TRUE(is_library_header("kevo/common.cuh", kLibrary));
  EXPECT_FALSE(is_library_header("f/a.cuh", kLibrary));               // without the prefix
  EXPECT_FALSE(is_library_header("kevo/f/manifest.json", kLibrary));  // not a header
  EXPECT_FALSE(is_library_header("kevo/f/none.cuh", kLibrary));
  EXPECT_FALSE(is_library_header("kevo/../f/a.cuh", kLibrary));
  EXPECT_EQ(include_lines({"common.cuh", "f/a.cuh"}), "#include \"kevo/common.cuh\"\n#include \"kevo/f/a.cuh\"\n");
}

// NVRTC matches an in-memory header by the name it is included by, so the served files include
// each other by their kevo/ names; their lines stay where they were (compiler messages point
// into the real files).
TEST(TemplateLibrary, ServesAHeaderWithWhatItIncludesUnderKevoNames) {
  const Files served = served_headers("kevo/f/a.cuh", kLibrary);
  ASSERT_EQ(served.size(), 3u);
  EXPECT_EQ(served.at("kevo/f/a.cuh"), "// a\n#pragma once\n#include \"kevo/common.cuh\"\n#include \"kevo/f/b.cuh\"\nA\n");
  EXPECT_EQ(served.at("kevo/f/b.cuh"), "#pragma once\n#include \"kevo/common.cuh\"\n#include \"kevo/f/a.cuh\"\nB\n");
  EXPECT_EQ(served.at("kevo/common.cuh"), "#pragma once\nCOMMON\n");
  EXPECT_EQ(toolkit_includes(served_headers("kevo/f/toolkit.cuh", kLibrary)), std::vector<std::string>{"cuda_fp16.h"});
  EXPECT_THROW(served_headers("kevo/f/bad.cuh", kLibrary), std::logic_error);
  EXPECT_THROW(served_headers("kevo/f/none.cuh", kLibrary), std::out_of_range);
}

TEST(TemplateLibrary, InliningPastesWhatAPreprocessorWouldIncludeAndLeavesTheRest) {
  const std::string source =
      "// #include \"kevo/f/b.cuh\" in a comment stays\n"
      "#include <cuda_fp16.h>\n"
      "#include \"kevo/common.cuh\"\n"
      "  # include \"kevo/f/a.cuh\"\n"
      "#include \"kevo/f/b.cuh\"\n"
      "X\n";
  EXPECT_TRUE(includes_library(source));
  EXPECT_EQ(inline_library(source, kLibrary),
            "// #include \"kevo/f/b.cuh\" in a comment stays\n"
            "#include <cuda_fp16.h>\n"
            "COMMON\n"
            "// a\nB\nA\n"
            "\n"  // b.cuh came with a.cuh
            "X\n");
  EXPECT_FALSE(includes_library("#include <cuda_fp16.h>\n// #include \"kevo/common.cuh\"\nX\n"));
  EXPECT_EQ(inline_library("X\n", kLibrary), "X\n");
  EXPECT_THROW(inline_library("#include \"kevo/f/none.cuh\"\n", kLibrary), std::out_of_range);
}

TEST(TemplateLibrary, TheEmbeddedLibraryHoldsEveryFamilysHeaders) {
  EXPECT_TRUE(is_library_header("kevo/common.cuh"));
  EXPECT_TRUE(is_library_header("kevo/gemm/gemm.cuh"));
  EXPECT_TRUE(is_library_header("kevo/conv/conv.cuh"));
  const Files served = served_headers("kevo/gemm/gemm.cuh");
  EXPECT_TRUE(served.count("kevo/common.cuh"));
  for (const auto& [name, text] : served) EXPECT_EQ(text.find("#include \"../"), std::string::npos) << name;
}

}  // namespace
}  // namespace kevo::templates
