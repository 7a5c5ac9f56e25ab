// Committing a generation: what it added (its variants, the sources new to the file, completions,
// measurements, the archives' snapshot, each run's generation record, the policies' checkpoints
// the thinning rule keeps, and the search's resume state) appended to the campaign file, atomically:
// a crash loses at most this generation.
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

void commit(SearchState& s, const Batch& b, const std::vector<store::MeasurementRecord>& results,
            const CommitTimes& times);

// When the campaign stops: each run's policy after the file's last generation, unless the file
// holds it already.
void finish_checkpoints(SearchState& s);

}  // namespace kevo::search
