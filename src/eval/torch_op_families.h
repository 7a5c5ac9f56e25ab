// Registration of each op family's LibTorch execution (mirrors core/op_families.h; the nodes
// without operands, constant and full, are made by run_graph itself).
#pragma once

#include "eval/torch_graph.h"

namespace kevo::eval {

void register_torch_builtin_ops(TorchOpTable& t);      // torch_ops_builtin.cpp
void register_torch_elementwise_ops(TorchOpTable& t);  // torch_ops_elementwise.cpp
void register_torch_reduction_ops(TorchOpTable& t);    // torch_ops_reduction.cpp
void register_torch_nn_ops(TorchOpTable& t);           // torch_ops_nn.cpp
void register_torch_matmul_ops(TorchOpTable& t);       // torch_ops_matmul.cpp
void register_torch_conv_ops(TorchOpTable& t);         // torch_ops_conv.cpp
void register_torch_pool_ops(TorchOpTable& t);         // torch_ops_pool.cpp
void register_torch_loss_ops(TorchOpTable& t);         // torch_ops_loss.cpp
void register_torch_shape_ops(TorchOpTable& t);        // torch_ops_shape.cpp
void register_torch_slice_ops(TorchOpTable& t);        // torch_ops_slice.cpp (slice, select, cat, cast)

// Attribute access shared by the families.
torch::Scalar attr_scalar(const Node& n, const std::string& key);

}  // namespace kevo::eval
