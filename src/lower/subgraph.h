// The part of an op graph that computes some values from others, as a graph of its own: the
// split lowering's two sides, and a graph without the nodes its outputs no longer need.
#pragma once

#include <vector>

#include "core/graph.h"

namespace kevo::lower {

// The part of `g` that computes `outs` from the values of `ins` (in that order, those reached
// becoming the graph's inputs, or all of them with keep_inputs), renumbered; `reached` gets the
// indices into `ins` that it reads. Returns false when the walk meets a value without a producer
// that is not one of `ins`.
bool extract(const Graph& g, const std::vector<int>& ins, const std::vector<int>& outs, Graph* sub,
             std::vector<size_t>* reached, bool keep_inputs = false);

}  // namespace kevo::lower
