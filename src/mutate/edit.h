// Edits from an LLM reply: parsing SEARCH/REPLACE blocks (or a full rewrite, and an optional
// kevo-plan) out of an untrusted completion, and applying the blocks to a kernel's source.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace kevo::mutate {

// A malformed reply or an edit that does not apply. what() is one line: "reply line 12: ..." or
// "block 2 (reply line 14): ...".
class EditError : public std::runtime_error {
 public:
  EditError(int reply_line, const std::string& message);
  int reply_line() const { return reply_line_; }

 private:
  int reply_line_;
};

struct EditBlock {
  std::string search, replace;  // whole lines, each ending in '\n'; empty search means "append"
  int line = 0;                 // 1-based line of the block's opening marker in the reply
};

struct ParsedReply {
  std::vector<EditBlock> blocks;  // SEARCH/REPLACE blocks, in order
  std::string rewrite;            // the first ```cuda / ```cpp / ```c++ block's text when there are no blocks
  std::string plan;               // the first ```json block's text (a new kevo-plan), verbatim
};

// Parses "<<<<<<< SEARCH\n...\n=======\n...\n>>>>>>> REPLACE" blocks (markers alone on their lines,
// 5-9 marker characters). CRLF is read as LF. Throws EditError for an unterminated block, a marker
// out of order, a reply with neither blocks nor a code block, or a reply over 256 KiB.
ParsedReply parse_reply(const std::string& reply);

// Applies the blocks in order, each to the previous one's result. A SEARCH text must match exactly
// once, first byte for byte, failing that line by line ignoring indentation and trailing
// whitespace; then unchanged lines keep the source's text and the others are re-indented by the
// matched offset. Throws EditError naming the block when it matches nowhere (with the most similar
// source line) or several times (with their line numbers).
std::string apply_edits(const std::string& source, const std::vector<EditBlock>& blocks);

}  // namespace kevo::mutate
