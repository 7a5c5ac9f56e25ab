// The reward a proposal earns: the campaign's own fitness, seen from the parent.
#pragma once

#include <string>

namespace kevo::search {

// "bucketed": -1 invalid, 0 no gain, 1 at least 5% over the parent, 2 a new best of the run
// (the levels the CUDA Agent ablations found to train better than raw speedup);
// "log_speedup": log(child / parent) for valid children, -1 for invalid ones.
double reward(const std::string& kind, bool valid, double parent_fitness, double child_fitness, double run_best);
bool valid_reward(const std::string& kind);

}  // namespace kevo::search
