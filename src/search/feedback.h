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

// After a generation's update: a run without a source editor keeps only its islands' elites'
// outcomes, the only ones its proposals look up (parents are elites), so that a long campaign's
// memory does not grow with it. A run with one keeps all (its credits look up any variant).
void forget_outcomes(Run& run);

// The outcomes a run without a source editor keeps: its islands' elites', rebuilt from them.
void outcomes_of_elites(Run& run);

}  // namespace kevo::search
