// The llm policy: a language model behind an OpenAI-compatible endpoint rewrites kernels at the
// source level (SEARCH/REPLACE blocks or a whole new candidate), mixed with template mutations.
// It is a Policy and a SourceEditor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "policy/llm_client.h"
#include "policy/policy.h"
#include "policy/source_editor.h"

namespace kevo::policy {

struct LlmPolicyConfig {
  // Share of requests whose (template) parent goes to the model; the others go to the template
  // policy. Free-form parents always go to the model. A negative weight lets a bandit choose
  // (Thompson sampling on "the child beat its parent" per operator).
  double weight = 0.5;
  int samples = 4;            // completions per chat request (the API's n): children of one parent, one RL group
  int inspirations = 2;       // elites of the island shown in the prompt besides the parent
  int max_prompt_source = 32768;  // characters of an inspiration's source shown (the parent's is always whole)
  // Tokens a prompt may take, counted with the served model's tokenizer where the server has one
  // (else estimated): the library parts and other elites shown stop there; a prompt whose required
  // part exceeds it is not sent (its sample says why).
  int64_t max_prompt_tokens = 16384;
};

// Checks the values; throws std::runtime_error whose message starts with the flag.
void validate(const LlmPolicyConfig& config);

// `client` is shared by every run of a campaign (one concurrency limit and one token budget);
// `templates` (random or learned) serves the other share of requests and may be null only when
// weight is 1.
std::unique_ptr<Policy> make_llm_policy(const LlmPolicyConfig& config, std::shared_ptr<LlmClient> client,
                                        std::unique_ptr<Policy> templates);

}  // namespace kevo::policy
