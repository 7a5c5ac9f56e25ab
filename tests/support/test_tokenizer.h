// The test tokenizer, also served by tests/tools/llm_stub.py's /tokenize (the same counts on ASCII
// text): each run of up to 4 word characters (letters, digits, _, any byte of a multi-byte
// character) is a token, each other non-blank character one, each line break one. Code runs about 2.5 bytes a token by it, more
// tokens than the tokenizers of code models give: a prompt that fits it fits them.
#pragma once

#include <cstdint>
#include <string>

namespace kevo::testing {

inline int64_t test_tokens(const std::string& text) {
  int64_t n = 0;
  size_t run = 0;  // word characters since the last other one
  for (unsigned char c : text) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
    if (word) {
      if (run++ % 4 == 0) ++n;
      continue;
    }
    run = 0;
    if (c == '\n' || !(c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v')) ++n;
  }
  return n;
}

}  // namespace kevo::testing
