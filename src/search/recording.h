// Resume: what a campaign file recorded answers the generations it holds again, so that they
// re-derive without evaluating anything; the policies continue from their checkpoints and source
// editors from their recorded completions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "policy/llm_client.h"
#include "search/proposals.h"
#include "search/run.h"
#include "store/records.h"

namespace kevo::search {

// Points into the contents it was made of: valid while generations up to `through` re-derive
// (nothing is committed before they all have).
struct Recording {
  int through = -1;                            // generations up to this one are answered from the file
  double wall_seconds = 0, gpu_busy_seconds = 0;  // the file's cumulative figures after `through`
  std::map<int64_t, const store::VariantRecord*> variants;
  std::map<int64_t, const store::MeasurementRecord*> measurements;
  bool covers(int generation) const { return generation <= through; }
};

Recording recording_of(const store::CampaignContents& contents);

// The recorded measurements of a re-derived batch, one per request. Throws InputError naming
// `path` when a variant is not the one recorded (the templates or kevo changed since).
std::vector<store::MeasurementRecord> recorded_results(const Recording& r, const Batch& b, const std::string& path);

// Each source editor's recorded completions answer its prompts again; their tokens count against
// the budget of `client` (null: no llm arm).
void replay_samples(const store::CampaignContents& contents, std::vector<Run>& runs, policy::LlmClient* client);

// Re-deriving generation `g`: the policies continue from the parameters they had after it (their
// updates need not be bit-reproducible; the file's checkpoints are).
void restore_policies(const store::CampaignContents& contents, std::vector<Run>& runs, int g);

}  // namespace kevo::search
