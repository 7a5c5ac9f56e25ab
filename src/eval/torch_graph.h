// Runs an op graph on LibTorch (the oracle's engine). Includes torch: for eval/ and its tests only.
#pragma once

#include "eval/torch_tensors.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/name_table.h"

namespace kevo::eval {

torch::ScalarType to_torch(DType t);
DType from_torch(torch::ScalarType t);

// Executes one node. `in` holds the node's operands in order (an undefined tensor for -1).
using TorchOp = std::function<std::vector<torch::Tensor>(const Node& node, const std::vector<torch::Tensor>& in)>;

using TorchOpTable = NameTable<TorchOp>;

const TorchOpTable& torch_op_table();

// Runs the graph on `inputs` (in graph input order; their device is used throughout) and
// returns its outputs. Every value torch produces is checked against the graph's shape and
// dtype: a disagreement is a bug in a shape rule and throws std::logic_error.
std::vector<torch::Tensor> run_graph(const Graph& g, const std::vector<torch::Tensor>& inputs);

}  // namespace kevo::eval
