// Notifying a measured generation's results: every measurement becomes its variant's outcome and
// enters its island's archive, every proposal with a parent earns its reward, and each run's
// policy gets what it measured and earned (its Feedback); a source editor's completions earn what
// their children earned.
#pragma once

#include <vector>

#include "policy/policy.h"
#include "search/proposals.h"
#include "search/state.h"
#include "store/records.h"

namespace kevo::search {

// `results` holds one measurement per request of `b`, in order. Updates the runs (outcomes,
// archives, counters, best) and the rewards of b.samples; returns each run's feedback, by run id.
// Children of one parent in one generation share a group.
std::vector<policy::Feedback> notify_results(SearchState& s, Batch& b,
                                             const std::vector<store::MeasurementRecord>& results);

}  // namespace kevo::search
