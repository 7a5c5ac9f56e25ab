// What the normalize family's two lowering files share: normalize.cpp (the row and column
// kernels) and normalize_channels.cpp (the channel-column kernel of batch norm on [N, C]).
#pragma once

#include <memory>
#include <string>

#include "lower/kit.h"

namespace kevo::lower::normalize {

// The op graph as comment lines, for the generated source.
std::string graph_comment(const Graph& g);
// The C++ name of a tensor as a kernel parameter (and Norm::Params field), kept clear of the
// size parameters beside it.
std::string tensor_param(const std::string& name);
// An elementwise region over exactly one graph input of the target's shape (the prologue before
// a norm, or what a pattern's reduction sums): the input's value id, or -1.
int single_input_region(const TaskGraph& tg, int target, Region* region);

// The channel-column space of graph node `node` when it is batch norm of an [N, C] input; null
// otherwise.
std::unique_ptr<DesignSpace> channel_columns_space(const TaskGraphPtr& tg, int node);

}  // namespace kevo::lower::normalize
