// The llm arm's settings (docs/llm.md), one type with one set of defaults: the endpoint, the
// sampling, the prompts, the mix with template mutations and the hook between generations. The
// client, the policy and the campaign's configuration all read it. The API key is read from the
// environment variable named here and never stored.
#pragma once

#include <cstdint>
#include <string>

namespace kevo::policy {

struct LlmSettings {
  // The endpoint.
  std::string url = "http://127.0.0.1:8000/v1";  // OpenAI-compatible, up to /v1: POST {url}/chat/completions
  std::string model;                             // required
  std::string api_key_env = "OPENAI_API_KEY";    // the variable's name; unset or empty: no Authorization header
  int concurrency = 8;                           // requests in flight at once
  double timeout_seconds = 300;                  // whole request
  double connect_timeout_seconds = 10;
  int retries = 4;                               // after the first attempt, for 429, 5xx and timeouts
  double backoff_seconds = 1;                    // first wait; doubled each retry; Retry-After (capped at 60 s) wins
  int64_t token_budget = 0;                      // prompt + completion tokens for the campaign; 0: none
  // Sampling.
  double temperature = 0.8;
  int max_tokens = 4096;                         // per completion
  int samples = 4;                               // completions per request (the API's n): one parent's children, one RL group
  // The policy. Share of requests whose (template) parent goes to the model; the others go to the
  // template policy `mix` (random or learned). Free-form parents always go to the model. A negative
  // weight lets a bandit choose (Thompson sampling on "the child beat its parent" per operator).
  double weight = 0.5;
  std::string mix = "random";
  int inspirations = 2;                          // elites of the island shown in the prompt besides the parent
  int max_prompt_source = 32768;                 // characters of an inspiration's source shown (the parent's is always whole)
  // Tokens a prompt may take, counted with the served model's tokenizer where the server has one
  // (else estimated): the library parts and other elites shown stop there; a prompt whose required
  // part exceeds it is not sent (its sample says why).
  int64_t max_prompt_tokens = 16384;
  // Between generations: a shell command run after each committed generation, then (with a path)
  // this LoRA adapter (re)loaded into vLLM under its name and sampled from.
  std::string between_generations;
  std::string adapter_name = "kevo-adapter", adapter_path;
};

// Checks every value; throws std::runtime_error with one line naming the flag ("--llm-url: ...").
void validate(const LlmSettings& settings);

}  // namespace kevo::policy
