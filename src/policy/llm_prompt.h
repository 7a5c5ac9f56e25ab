// The prompt the llm policy sends for one parent, built within a token budget: what it must hold
// (the task, the parent's own lines and measurements, what may change, the rules) and, as far as
// the budget allows, the parts of kevo's template library the parent uses and other elites.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/llm_policy.h"
#include "policy/policy.h"

namespace kevo::policy {

// A text's tokens as the served model counts them (or an estimate).
using TokenCounter = std::function<int64_t(const std::string& text)>;

// Tokens of `text` without a tokenizer: one per 3 bytes, rounded up (common tokenizers take 3 to 4
// bytes of code or English per token, so this errs towards a prompt that fits).
int64_t estimate_tokens(const std::string& text);

struct Prompt {
  nlohmann::json messages = nlohmann::json::array();  // [{role, content}]: what is sent, or would have been
  int64_t tokens = 0;                                 // counted: the messages' texts and their framing
  std::string refused;      // why it is not sent (the required part alone exceeds the budget); empty: send
  int library_parts = 0;    // library definitions shown
  int inspirations = 0;     // other elites shown
};

// Tokens one chat message's framing (role, separators) adds to its text.
constexpr int64_t kMessageFramingTokens = 8;

Prompt build_prompt(const Context& ctx, const Request& r, const LlmSettings& c, const TokenCounter& count);

}  // namespace kevo::policy
