// The hook between generations (--between-generations): the user's command (a trainer step, say)
// after each committed generation, then the LoRA adapter it wrote (re)loaded into the server and
// used as the model.
#pragma once

#include <string>

#include "policy/llm_client.h"
#include "search/config.h"

namespace kevo::search {

// Runs `l.between_generations` (when set) with KEVO_CAMPAIGN, KEVO_GENERATION and KEVO_MODEL in
// its environment; then, with an adapter path, unloads and loads `l.adapter_name` through
// `client` (null: no llm arm) and makes it the model. A command that fails or an adapter that does
// not load stops the campaign: throws std::runtime_error (one line; the generation is on disk).
void run_between_generations(const LlmSettings& l, const std::string& campaign_path, int generation,
                             policy::LlmClient* client);

}  // namespace kevo::search
