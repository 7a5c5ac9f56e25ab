// Resume by re-deriving: what a campaign file recorded answers the generations it holds again, so
// that they re-derive without evaluating anything; the policies continue from their checkpoints
// and source editors from their recorded completions. Used where the file's resume states cannot
// serve (files of kevo-campaign/1, a crash in the first generations, campaigns with a source editor,
// whose policy's state is more than its checkpoint); otherwise a resume starts from them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "policy/llm_client.h"
#include "search/proposals.h"
#include "search/run.h"
#include "store/records.h"

namespace kevo::search {

struct Recording {
  int through = -1;                               // generations up to this one are answered from the file
  double wall_seconds = 0, gpu_busy_seconds = 0;  // the file's cumulative figures after `through`
  std::unique_ptr<const store::CampaignContents> contents;  // re-deriving: the whole file; else null
  std::map<int64_t, const store::VariantRecord*> variants;  // into *contents
  std::map<int64_t, const store::MeasurementRecord*> measurements;
  // The generation after `through` when the file holds its first runs' parts (committed as each was
  // measured) but not the whole generation: those variants, in file order, and their measurements.
  std::vector<store::VariantRecord> partial_variants;
  std::map<int64_t, store::MeasurementRecord> partial_measurements;
  bool covers(int generation) const { return generation <= through; }
};

// The last generation `generations` hold, with its cumulative figures (through -1 when none).
Recording recording_after(const std::vector<store::GenerationRecord>& generations);

// Everything the whole file `contents` recorded, to re-derive its generations from the first.
Recording recording_of(store::CampaignContents contents);

// Generation b proposed again where the file holds its first runs' parts: checks that they are b's
// (same ids, runs, sources and duplicates), marks them committed (b.parts_committed) and answers
// their requests from the file (b.premade), so that nothing measured is measured again. Nothing for
// another generation; the parts are adopted once. Throws InputError naming `path` when the file's
// variants are not b's (the templates or kevo changed since).
void adopt_partial(Recording& r, Batch& b, const std::string& path);

// The recorded measurements of a re-derived batch, one per request. Throws InputError naming
// `path` when a variant is not the one recorded (the templates or kevo changed since).
std::vector<store::MeasurementRecord> recorded_results(const Recording& r, const Batch& b, const std::string& path);

// Each source editor's recorded completions answer its prompts again; their tokens count against
// the budget of `client` (null: no llm arm).
void replay_samples(const store::CampaignContents& contents, std::vector<Run>& runs, policy::LlmClient* client);

// Re-deriving generation `g`: the policies continue from the parameters they had after it, when
// the file kept them (their updates need not be bit-reproducible; the file's checkpoints are).
void restore_policies(const Recording& r, std::vector<Run>& runs, int g);

}  // namespace kevo::search
