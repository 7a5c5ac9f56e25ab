// Parsing LLM replies into edits and applying them to a kernel's source.
#include "mutate/edit.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace kevo::mutate {
namespace {

const char* kSource =
    "__global__ void scale(float* x, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) {\n"
    "    x[i] *= 2.0f;\n"
    "  }\n"
    "}\n";

std::string block(const std::string& search, const std::string& replace) {
  return "<<<<<<< SEARCH\n" + search + "=======\n" + replace + ">>>>>>> REPLACE\n";
}

std::string apply_reply(const std::string& source, const std::string& reply) {
  return apply_edits(source, parse_reply(reply).blocks);
}

// The EditError's message, or "" when `f` does not throw one.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const EditError& e) {
    return e.what();
  }
  return "";
}

TEST(ApplyEdits, ExactMatchReplacesOnlyTheMatchedLines) {
  std::string reply = "I double-buffer nothing, just triple.\n```cuda\n" +
                      block("    x[i] *= 2.0f;\n", "    x[i] *= 3.0f;\n") + "```\n";
  ParsedReply parsed = parse_reply(reply);
  ASSERT_EQ(parsed.blocks.size(), 1u);
  EXPECT_EQ(parsed.blocks[0].line, 3);
  EXPECT_TRUE(parsed.rewrite.empty());
  std::string want = kSource;
  want.replace(want.find("2.0f"), 4, "3.0f");
  EXPECT_EQ(apply_edits(kSource, parsed.blocks), want);
}

TEST(ApplyEdits, EmptySearchAppends) {
  EXPECT_EQ(apply_reply("int a;", block("", "int b;\n")), "int a;\nint b;\n");
}

TEST(ApplyEditsWhitespace, TabsInTheSourceSpacesInTheReply) {
  std::string source = "void f() {\n\tif (x) {\n\t\ty();\n\t}\n}\n";
  std::string reply = block("    if (x) {\n        y();\n    }\n", "    if (x) {\n        y();\n        z();\n    }\n");
  EXPECT_EQ(apply_reply(source, reply), "void f() {\n\tif (x) {\n\t\ty();\n\t\tz();\n\t}\n}\n");
}

TEST(ApplyEditsWhitespace, TrailingSpacesAreIgnored) {
  std::string source = "int a = 1;   \nint b = 2;\t\n";
  EXPECT_EQ(apply_reply(source, block("int a = 1;\nint b = 2;\n", "int a = 1;\nint b = 5;\n")),
            "int a = 1;   \nint b = 5;\n");
}

TEST(ApplyEditsWhitespace, CrlfLineEndingsInTheReply) {
  std::string reply = "<<<<<<< SEARCH\r\n    x[i] *= 2.0f;\r\n=======\r\n    x[i] += 1.0f;\r\n>>>>>>> REPLACE\r\n";
  std::string out = apply_reply(kSource, reply);
  EXPECT_NE(out.find("    x[i] += 1.0f;\n"), std::string::npos);
  EXPECT_EQ(out.find('\r'), std::string::npos);
}

TEST(ApplyEditsReindent, ReplacementFollowsTheSourceIndentation) {
  // The model quoted the if-block without its indentation and added a nested line.
  std::string reply = block("if (i < n) {\n  x[i] *= 2.0f;\n}\n",
                            "if (i < n) {\n  float v = x[i];\n  if (v > 0) {\n    x[i] = v * 2.0f;\n  }\n}\n");
  std::string want =
      "__global__ void scale(float* x, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) {\n"
      "    float v = x[i];\n"
      "    if (v > 0) {\n"
      "      x[i] = v * 2.0f;\n"
      "    }\n"
      "  }\n"
      "}\n";
  EXPECT_EQ(apply_reply(kSource, reply), want);
}

TEST(ApplyEdits, LaterBlocksSeeEarlierResults) {
  std::string reply = block("    x[i] *= 2.0f;\n", "    x[i] *= k;\n") +
                      "and then\n" + block("    x[i] *= k;\n", "    x[i] = fmaf(x[i], k, 1.0f);\n");
  ParsedReply parsed = parse_reply(reply);
  ASSERT_EQ(parsed.blocks.size(), 2u);
  EXPECT_EQ(parsed.blocks[1].line, 7);
  EXPECT_NE(apply_edits(kSource, parsed.blocks).find("    x[i] = fmaf(x[i], k, 1.0f);\n"), std::string::npos);
}

TEST(ApplyEditsErrors, AmbiguousMatchListsTheLines) {
  std::string source = "a();\nsync();\nb();\nc();\nsync();\n";
  ParsedReply parsed = parse_reply("Use the real barrier.\n\n\n\n\n\n" + block("sync();\n", "__syncthreads();\n"));
  EXPECT_EQ(error_of([&] { apply_edits(source, parsed.blocks); }),
            "block 1 (reply line 7): SEARCH text matches 2 times, at source lines 2, 5; add context to make it unique");
}

TEST(ApplyEditsErrors, NoMatchNamesTheNearestSourceLine) {
  std::string msg = error_of([&] { apply_reply(kSource, "x\n" + block("  if (i <= n) {\n    y();\n", "")); });
  EXPECT_EQ(msg.rfind("block 1 (reply line 2): SEARCH text matches nowhere", 0), 0u) << msg;
  EXPECT_NE(msg.find("source line 3 `if (i < n) {`"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(ApplyEditsErrors, MalformedRepliesNameTheReplyLine) {
  auto err = [](const std::string& reply) { return error_of([&] { parse_reply(reply); }); };
  EXPECT_EQ(err("hi\n<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n"),
            "reply line 4: REPLACE marker before ======= (block opened on line 2)");
  EXPECT_EQ(err("hi\n\n<<<<<<< SEARCH\na\n=======\nb\n"),
            "reply line 3: unterminated block: no >>>>>>> REPLACE after =======");
  EXPECT_EQ(err("<<<<<<< SEARCH\na\n"), "reply line 1: unterminated block: SEARCH marker without =======");
  EXPECT_EQ(err("<<<<<<< SEARCH\na\n=======\n<<<<<<< SEARCH\n"),
            "reply line 4: SEARCH marker inside another block (block opened on line 1)");
  EXPECT_EQ(err("text\n>>>>>>> REPLACE\n"), "reply line 2: REPLACE marker without a SEARCH marker");
  EXPECT_EQ(err("I would unroll the loop by four."),
            "reply line 1: no SEARCH/REPLACE block and no ```cuda/```cpp code block");
  EXPECT_EQ(err("a\n```cuda\nint x;\n"), "reply line 2: code block never closed with ```");
  EXPECT_EQ(err(std::string(300 * 1024, 'x')).rfind("reply line 1: the reply is 307200 bytes", 0), 0u);
  try {
    parse_reply("a\n=======\n");
    FAIL();
  } catch (const EditError& e) {
    EXPECT_EQ(e.reply_line(), 2);
  }
}

TEST(ApplyEditsReply, FullRewriteAndPlan) {
  std::string reply =
      "Rewritten:\r\n```CUDA\r\n__global__ void k() {}\r\n```\r\nPlan:\n```json\n{\"kevo-plan\": 1}\n```\n"
      "```cpp\nint ignored;\n```\n";
  ParsedReply parsed = parse_reply(reply);
  EXPECT_TRUE(parsed.blocks.empty());
  EXPECT_EQ(parsed.rewrite, "__global__ void k() {}\n");
  EXPECT_EQ(parsed.plan, "{\"kevo-plan\": 1}\n");
  EXPECT_EQ(parse_reply("```c++\nint a;\n```\n").rewrite, "int a;\n");
}

TEST(ApplyEditsFuzz, RandomMutationsOfAValidReplyOnlyReturnOrThrowEditError) {
  const std::string valid = "Plan:\n```json\n{}\n```\n```cuda\n" +
                            block("  if (i < n) {\n    x[i] *= 2.0f;\n", "  if (i < n) {\n    x[i] *= 4.0f;\n") +
                            block("", "// tail\n") + "```\n";
  const std::string pieces[] = {"<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE\n", "```cuda\n", "```\n",
                                "\r\n", "\t", "  ", "x[i]", "\n", "<<<<<", ">>>>>>>>>", "}\n"};
  std::mt19937_64 rng(20261130);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % (n + 1)); };
  int applied = 0, rejected = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::string reply = valid;
    for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) {
      size_t at = pick(reply.size());
      switch (rng() % 4) {
        case 0: reply.erase(at, 1 + rng() % 20); break;
        case 1: reply.insert(at, pieces[rng() % std::size(pieces)]); break;
        case 2: reply.insert(at, 1, static_cast<char>(rng() % 256)); break;
        default: reply.insert(at, reply.substr(pick(reply.size()), rng() % 40)); break;
      }
    }
    try {
      ParsedReply parsed = parse_reply(reply);
      apply_edits(kSource, parsed.blocks);
      ++applied;
    } catch (const EditError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(applied, 0);
  EXPECT_GT(rejected, 0);
}

TEST(ApplyEditsFuzz, RepetitiveInputStaysLinear) {
  // Naive matching would compare ~10^9 lines here.
  std::string source, search;
  for (int i = 0; i < 100000; ++i) source += "  \n";
  for (int i = 0; i < 50000; ++i) search += "\n";
  search += "x\n";
  std::string msg = error_of([&] { apply_edits(source, {EditBlock{search, "", 1}}); });
  EXPECT_EQ(msg.rfind("block 1 (reply line 1): SEARCH text matches nowhere", 0), 0u) << msg;
  msg = error_of([&] { apply_edits(source, {EditBlock{"\n\n", "", 1}}); });
  EXPECT_NE(msg.find("more than 8 times, at source lines 1, 2, 3, 4, 5, 6, 7, 8, ..."), std::string::npos) << msg;
}

}  // namespace
}  // namespace kevo::mutate
