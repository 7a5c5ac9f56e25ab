// The SourceEditor interface: what a policy that rewrites candidate source (a language model)
// needs beyond Policy. The search gives its requests the parents' sources, their measurements in
// words and the island's best elites, and records every completion it made with the reward its
// child earned (the data an RL trainer for the model learns from).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kevo::policy {

// One completion of a language-model policy (or a request that failed): what RL trainers for LLMs
// learn from once the campaign attaches the child's reward.
struct LlmSample {
  int64_t request = 0;        // completions of one request (one prompt) share it: the RL group
  int64_t parent = -1;        // variant id
  std::string prompt;         // the chat messages, a JSON array of {role, content}
  std::string response;       // the completion ("" when the request failed)
  // "ok" (a child came of it), "request_failed" (kind in error), "bad_reply" (no edit could be read),
  // "edit_failed" (a block did not match), "rejected" (the child is not an acceptable candidate)
  std::string status;
  std::string error;          // one line; empty when ok
  std::string model;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int32_t generation = 0;
};

class SourceEditor {
 public:
  virtual ~SourceEditor() = default;
  // Elites of the island shown with each request besides its parent.
  virtual int inspirations() const = 0;
  // The samples made since the last call, in order (Proposal::sample indexes this list).
  virtual std::vector<LlmSample> take_samples() = 0;
  // Resume: completions recorded in the campaign file answer the prompts they were given for (the
  // same generation, prompt and order) instead of the server, so committed generations re-derive.
  virtual void replay_samples(const std::vector<LlmSample>& recorded) = 0;
};

}  // namespace kevo::policy
