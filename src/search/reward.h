// The reward a proposal earns: the campaign's own fitness, seen from the parent.
#pragma once

#include <memory>
#include <string>

namespace kevo::search {

class RewardFunction {
 public:
  virtual ~RewardFunction() = default;
  // The reward of a child (its validity and fitness) against its parent's fitness and the run's
  // best before it. Every kind gives -1 to an invalid child.
  virtual double of(bool valid, double parent_fitness, double child_fitness, double run_best) const = 0;
};

// "bucketed": -1 invalid, 0 no gain, 1 at least 5% over the parent, 2 a new best of the run (the
// levels the CUDA Agent ablations found to train better than raw speedup); "log_speedup":
// log(child / parent) for valid children. Null for any other name.
std::unique_ptr<RewardFunction> make_reward(const std::string& kind);

}  // namespace kevo::search
