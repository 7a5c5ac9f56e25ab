// Kit: a graph input read over a domain value (a reduction's input or output) through torch's
// broadcasting, and the index code a kernel reads it with (the reduce and reduce_scalar families).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lower/kit.h"

namespace kevo::lower {

// At the domain's flat index (full), at the flat index modulo the elements of the trailing dims
// it spans (trailing: a vector repeated along the leading dims), or through broadcast strides
// (general).
struct BroadcastLeaf {
  int value = -1;
  std::string field;  // Params field and kernel parameter (the family names it)
  std::string local;  // its value in the generated code (the family names it)
  enum Kind { Full, Trailing, General } kind = Full;
  std::string span;                  // trailing: the elements it spans (a plan expression)
  std::vector<int64_t> span_values;  // per workload
  std::vector<int> dims;             // general: domain dims where it varies, and its strides along them
  std::vector<std::string> strides;
};

// The leaf for input v over domain value dom; false when v does not broadcast to it.
bool broadcast_leaf(const TaskGraph& tg, int v, int dom, BroadcastLeaf& l);

// The lowest domain dim a general leaf's index needs (rank when none is general).
int lowest_general_dim(const std::vector<BroadcastLeaf>& leaves, int rank);

// A general leaf's index function `fn`(p, i): the domain's flat index i taken apart by the Params
// fields <dim_prefix><d> (the domain's dims), each dim it varies along times its stride field
// <stride_prefix><field>_<j>.
std::string leaf_index_function(const std::string& fn, const std::string& dim_prefix, const std::string& stride_prefix,
                                const BroadcastLeaf& l, int rank);

}  // namespace kevo::lower
