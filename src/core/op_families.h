// Registration of each op family into the table (one source file per family).
#pragma once

#include "core/ops.h"

namespace kevo {

void register_builtin_ops(OpTable& t);      // ops_builtin.cpp: arithmetic, comparisons, math.*, sizes
void register_elementwise_ops(OpTable& t);  // ops_elementwise.cpp: activations and unary math
void register_reduction_ops(OpTable& t);    // ops_reduction.cpp: reductions, softmax, scans
void register_nn_ops(OpTable& t);           // ops_nn.cpp: norms, matmul, conv, pooling, losses
void register_shape_ops(OpTable& t);        // ops_shape.cpp: views, transposes, expand

}  // namespace kevo
