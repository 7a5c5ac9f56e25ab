// Committing a generation: what it added (its variants, the sources new to the file, completions,
// measurements, the archives' snapshot, each run's generation record, the policies' checkpoints
// the thinning rule keeps, and the search's resume state) appended to the campaign file, atomically:
// a crash loses at most this generation. A campaign of several runs commits each run's part of a
// generation (variants, sources, measurements) as soon as it is measured, so that a crash or a stop
// loses at most the part being measured.
#pragma once

#include <vector>

#include "search/proposals.h"
#include "search/state.h"
#include "store/records.h"

namespace kevo::search {

// Cumulative figures of the campaign (this process's and earlier sessions') at the commit.
struct CommitTimes {
  double wall_seconds = 0;
  double gpu_busy_seconds = 0;
  int gpus = 0;
};

// Whether the file keeps the policies' checkpoints of generation `g` in /checkpoints: every
// config.checkpoint_every-th (and the last, by finish_checkpoints). The resume states hold the
// last two generations' whatever the rule.
bool keeps_checkpoints(const CampaignConfig& config, int g);

// Generation b, whole: what its committed parts (b.parts_committed) did not add yet, its
// archives, generation records, checkpoints and resume state. `results`: one per request of b.
void commit(SearchState& s, const Batch& b, const std::vector<store::MeasurementRecord>& results,
            const CommitTimes& times);

// A run's part of generation b, measured before the rest of it: its variants, the sources new to
// the file and its measurements (`results`: one per request of b; the part's are read), appended
// atomically so that a stop or a crash keeps them. Nothing of the search's state goes with it: the
// generation's commit adds that, and a resume proposes the generation again and takes these
// measurements from the file instead of measuring them. Parts are committed in order.
void commit_part(SearchState& s, const Batch& b, const BatchPart& part,
                 const std::vector<store::MeasurementRecord>& results);

// When the campaign stops: each run's policy after the file's last generation, unless the file
// holds it already.
void finish_checkpoints(SearchState& s);

}  // namespace kevo::search
