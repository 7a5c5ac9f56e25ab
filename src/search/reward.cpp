// Reward functions over fitness.
#include "search/reward.h"

#include <cmath>

namespace kevo::search {

bool valid_reward(const std::string& kind) { return kind == "bucketed" || kind == "log_speedup"; }

double reward(const std::string& kind, bool valid, double parent_fitness, double child_fitness, double run_best) {
  if (!valid || !(child_fitness > 0)) return -1;
  if (kind == "log_speedup") return parent_fitness > 0 ? std::log(child_fitness / parent_fitness) : 0;
  if (child_fitness > run_best) return 2;
  if (parent_fitness > 0 && child_fitness >= 1.05 * parent_fitness) return 1;
  return 0;
}

}  // namespace kevo::search
