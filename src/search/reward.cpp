// The reward functions over fitness.
#include "search/reward.h"

#include <cmath>

namespace kevo::search {

namespace {

bool invalid(bool valid, double child_fitness) { return !valid || !(child_fitness > 0); }

class Bucketed : public RewardFunction {
 public:
  double of(bool valid, double parent_fitness, double child_fitness, double run_best) const override {
    if (invalid(valid, child_fitness)) return -1;
    if (child_fitness > run_best) return 2;
    if (parent_fitness > 0 && child_fitness >= 1.05 * parent_fitness) return 1;
    return 0;
  }
};

class LogSpeedup : public RewardFunction {
 public:
  double of(bool valid, double parent_fitness, double child_fitness, double run_best) const override {
    if (invalid(valid, child_fitness)) return -1;
    return parent_fitness > 0 ? std::log(child_fitness / parent_fitness) : 0;
  }
};

}  // namespace

std::unique_ptr<RewardFunction> make_reward(const std::string& kind) {
  if (kind == "bucketed") return std::make_unique<Bucketed>();
  if (kind == "log_speedup") return std::make_unique<LogSpeedup>();
  return nullptr;
}

}  // namespace kevo::search
