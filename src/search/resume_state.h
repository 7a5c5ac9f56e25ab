// The search's state after a generation, as bytes the campaign file keeps (two resume slots), so
// that `kevo resume` continues from the last generations instead of re-deriving every one: the
// variant counter, and per run its counters, best elite, islands (archives, stagnation) and its
// policy's checkpoint. Not in it: the runs' duplicate indexes (rebuilt from the file's variants)
// and outcomes (a run without a source editor keeps its elites' only, rebuilt from the archives).
#pragma once

#include <string>
#include <vector>

#include "search/state.h"

namespace kevo::search {

// `policies`: each run's policy checkpoint (as run.policy->checkpoint() gives it), by run.
std::string save_resume_state(const SearchState& s, const std::vector<std::string>& policies);

// Restores what save_resume_state saved into `s` (whose runs are made from the same file):
// counters, islands, best elites, policies, and the outcomes of the elites. Throws InputError
// naming `s.path` when the bytes are not a resume state of these runs.
void load_resume_state(SearchState& s, const std::string& bytes);

}  // namespace kevo::search
