// Registration of each op family into the table (one source file per family).
#pragma once

#include "core/ops.h"

namespace kevo {

void register_builtin_ops(OpTable& t);      // ops_builtin.cpp: arithmetic, comparisons, math.*, sizes
void register_elementwise_ops(OpTable& t);  // ops_elementwise.cpp: activations and unary math
void register_reduction_ops(OpTable& t);    // ops_reduction.cpp: reductions, softmax, scans
void register_nn_ops(OpTable& t);           // ops_nn.cpp: normalizations and dropout
void register_matmul_ops(OpTable& t);       // ops_matmul.cpp: matmul, linear, einsum, attention
void register_conv_ops(OpTable& t);         // ops_conv.cpp: convolutions, transposed ones too
void register_pool_ops(OpTable& t);         // ops_pool.cpp: max, average and adaptive pooling
void register_loss_ops(OpTable& t);         // ops_loss.cpp: losses and distances
void register_shape_ops(OpTable& t);        // ops_shape.cpp: views, transposes, expand
void register_slice_ops(OpTable& t);        // ops_slice.cpp: select, narrow, chunk, split, cat, stack
void register_dtype_ops(OpTable& t);        // ops_dtype.cpp: casts (.float(), .to(...)), clone, detach
void register_factory_ops(OpTable& t);      // ops_factory.cpp: torch.tensor, zeros, ones, full, *_like

}  // namespace kevo
