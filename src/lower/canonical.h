// Equivalent spellings of one computation, rewritten to one form before lowering, so that they
// lower to the same spaces: `torch.matmul(x, W.T)` is `F.linear(x, W)`, `torch.bmm` and an einsum
// that multiplies matrices are `torch.matmul`.
#pragma once

#include "core/graph.h"

namespace kevo::lower {

// g with these rewrites, and the nodes no output needs any more dropped (its inputs kept, in order):
//  - matmul(a, transpose(w)) of a matrix w: linear(a, w);
//  - bmm(a, b): matmul(a, b);
//  - einsum of two operands whose equation is a matrix product ("bijl,lk->bijk", "bmk,bkn->bmn",
//    "mk,nk->mn"): matmul, or linear where the second operand is [n, k].
Graph canonical(const Graph& g);

// The value whose last two dims v swaps (v a transpose of those two dims, or a permute that swaps
// them alone), or -1.
int transposed_source(const Graph& g, int v);

}  // namespace kevo::lower
