// The registry of mutation operators: the order policies consider them in and the random
// policy's weights (point changes four times as often as a space switch).
#include "mutate/operator.h"

namespace kevo::mutate {

const std::vector<WeightedOperator>& default_operators() {
  static const std::vector<WeightedOperator> ops = {{&point_operator(), 4},
                                                    {&multi_knob_operator(), 2},
                                                    {&crossover_operator(), 2},
                                                    {&space_switch_operator(), 1}};
  return ops;
}

const MutationOperator* find_operator(const std::string& name) {
  for (const WeightedOperator& w : default_operators())
    if (name == w.op->name()) return w.op;
  return nullptr;
}

}  // namespace kevo::mutate
