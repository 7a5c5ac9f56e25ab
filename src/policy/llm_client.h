// An OpenAI-compatible chat-completions client (libcurl): the llm policy's only way out of the
// process. Requests run concurrently up to a limit; 429 and 5xx answers are retried with
// exponential backoff (honouring Retry-After); timeouts, refused connections and malformed
// bodies come back as failed results, never as exceptions. The API key is read from an
// environment variable at construction and is never written anywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "policy/llm_settings.h"

namespace kevo::policy {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  int samples = 0;  // 0: the configuration's
};

struct ChatResult {
  bool ok = false;
  std::vector<std::string> completions;  // choices[i].message.content, in the order of choices[i].index
  // When !ok: kind is one of "timeout", "rate_limited" (429 after every retry), "server_error" (5xx after
  // every retry), "http_error" (another status), "connect", "malformed" (a 2xx body that is not a chat
  // completion), "budget" (the token budget was spent before it was sent); error is one line.
  std::string kind, error;
  int attempts = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;  // the response's usage (0 when absent)
  double seconds = 0;                                // wall time including retries
};

struct LlmStats {
  int64_t requests = 0, succeeded = 0, failed = 0;
  int64_t attempts = 0, retries = 0;
  int64_t rate_limited = 0, server_errors = 0, timeouts = 0, connect_errors = 0, malformed = 0, budget_refused = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;
};

class LlmClient {
 public:
  explicit LlmClient(const LlmSettings& config);  // validates; reads the key from the environment
  ~LlmClient();
  LlmClient(const LlmClient&) = delete;
  LlmClient& operator=(const LlmClient&) = delete;

  // One result per request, in order; at most `concurrency` in flight. Thread-safe.
  std::vector<ChatResult> chat(const std::vector<ChatRequest>& requests);

  // The model later requests name (a LoRA adapter loaded at run time, say).
  void set_model(const std::string& model);
  std::string model() const;

  // Tokens spent before this process (a resumed campaign's), counted against the budget.
  void add_usage(int64_t prompt_tokens, int64_t completion_tokens);
  bool budget_spent() const;
  LlmStats stats() const;

  // The served model's token count of `text`, from the server's tokenizer: vLLM's
  // POST {server}/tokenize {"model", "prompt"} -> {"count"} ({server} is the url without its
  // /v1). nullopt when the server has none: after one failed answer it is not asked again.
  std::optional<int64_t> count_tokens(const std::string& text);

  // vLLM's runtime adapter endpoints (VLLM_ALLOW_RUNTIME_LORA_UPDATING=True on the server):
  // POST {url}/load_lora_adapter {"lora_name", "lora_path"} and /unload_lora_adapter {"lora_name"}.
  // load throws std::runtime_error (one line, with the server's answer) unless it gets a 2xx;
  // unload returns false instead of throwing (the adapter may not be loaded).
  void load_adapter(const std::string& name, const std::string& path);
  bool unload_adapter(const std::string& name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kevo::policy
