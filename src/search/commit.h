// Committing a generation: its variants, sources, completions, measurements, the archives'
// snapshot, each run's generation record and policy checkpoint appended to the campaign's
// contents, and the campaign file rewritten (atomically: a crash loses at most this generation).
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

void commit(SearchState& s, const Batch& b, const std::vector<store::MeasurementRecord>& results,
            const CommitTimes& times);

}  // namespace kevo::search
