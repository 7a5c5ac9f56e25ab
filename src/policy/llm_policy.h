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

// The policy of `config` (policy/llm_settings.h: the weight, the inspirations, the prompt budget).
// `client` is shared by every run of a campaign (one concurrency limit and one token budget);
// `templates` (random or learned) serves the other share of requests and may be null only when
// weight is 1.
std::unique_ptr<Policy> make_llm_policy(const LlmSettings& config, std::shared_ptr<LlmClient> client,
                                        std::unique_ptr<Policy> templates);

}  // namespace kevo::policy
