// The llm policy's trajectories as JSONL, the layout RL trainers for language models read: one
// completion per line with its prompt (chat messages), response, reward and group.
#pragma once

#include <string>

#include "store/records.h"

namespace kevo::store {

// One line per recorded completion (requests that failed have none and are left out), in the
// file's order. Fields are documented in docs/llm.md.
std::string samples_jsonl(const CampaignContents& c);

}  // namespace kevo::store
