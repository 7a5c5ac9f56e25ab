// Registration of each op family's LibTorch execution (mirrors core/op_families.h).
#pragma once

#include "eval/torch_graph.h"

namespace kevo::eval {

void register_torch_builtin_ops(TorchOpTable& t);      // torch_ops_builtin.cpp
void register_torch_elementwise_ops(TorchOpTable& t);  // torch_ops_elementwise.cpp
void register_torch_reduction_ops(TorchOpTable& t);    // torch_ops_reduction.cpp
void register_torch_nn_ops(TorchOpTable& t);           // torch_ops_nn.cpp
void register_torch_shape_ops(TorchOpTable& t);        // torch_ops_shape.cpp

// Attribute access shared by the families.
torch::Scalar attr_scalar(const Node& n, const std::string& key);

}  // namespace kevo::eval
