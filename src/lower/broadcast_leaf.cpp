// Kit: broadcast leaves and their index code.
#include "lower/broadcast_leaf.h"

#include <algorithm>
#include <sstream>

namespace kevo::lower {

bool broadcast_leaf(const TaskGraph& tg, int v, int dom, BroadcastLeaf& l) {
  const int rank = tg.rank(dom), lrank = tg.rank(v);
  if (tg.graph().values[static_cast<size_t>(v)].dtype != DType::Float32 || lrank > rank) return false;
  l.value = v;
  auto leaf_dim = [&](size_t w, int d) { return tg.graph(w).values[static_cast<size_t>(v)].shape[static_cast<size_t>(d)]; };
  auto dom_dim = [&](size_t w, int d) { return tg.graph(w).values[static_cast<size_t>(dom)].shape[static_cast<size_t>(d + rank - lrank)]; };
  for (size_t w = 0; w < tg.workloads(); ++w)
    for (int d = 0; d < lrank; ++d)
      if (leaf_dim(w, d) != dom_dim(w, d) && leaf_dim(w, d) != 1) return false;
  // first: from this leaf dim on, the leaf has the domain's dims in every workload.
  int first = lrank;
  auto same_from = [&](int d) {
    for (size_t w = 0; w < tg.workloads(); ++w)
      if (leaf_dim(w, d) != dom_dim(w, d)) return false;
    return true;
  };
  while (first > 0 && same_from(first - 1)) --first;
  bool ones_before = true;
  for (size_t w = 0; w < tg.workloads(); ++w)
    for (int d = 0; d < first; ++d) ones_before = ones_before && leaf_dim(w, d) == 1;
  if (first == 0 && lrank == rank) {
    l.kind = BroadcastLeaf::Full;
  } else if (ones_before && first < lrank) {
    l.kind = BroadcastLeaf::Trailing;
    l.span = tg.product(v, first, lrank);
    for (size_t w = 0; w < tg.workloads(); ++w) l.span_values.push_back(tg.product_value(w, v, first, lrank));
  } else {
    l.kind = BroadcastLeaf::General;
    for (int d = 0; d < lrank; ++d) {
      bool varies = false;
      for (size_t w = 0; w < tg.workloads(); ++w) varies = varies || leaf_dim(w, d) != 1;
      if (!varies) continue;
      l.dims.push_back(d + rank - lrank);
      l.strides.push_back(tg.product(v, d + 1, lrank));
    }
    if (l.dims.empty()) l.dims.push_back(rank - 1), l.strides.push_back("0");  // a single element
  }
  return true;
}

// The lowest domain dim a general leaf's index needs (rank when none is general).
int lowest_general_dim(const std::vector<BroadcastLeaf>& leaves, int rank) {
  int lowest = rank;
  for (const BroadcastLeaf& l : leaves)
    if (l.kind == BroadcastLeaf::General) lowest = std::min(lowest, *std::min_element(l.dims.begin(), l.dims.end()));
  return lowest;
}

std::string leaf_index_function(const std::string& fn, const std::string& dim_prefix, const std::string& stride_prefix,
                                const BroadcastLeaf& l, int rank) {
  std::ostringstream s;
  s << "  static __device__ __forceinline__ long long " << fn << "(const Params& p, long long i) {\n";
  s << "    long long at = 0;\n";
  const int lowest = *std::min_element(l.dims.begin(), l.dims.end());
  for (int d = rank - 1; d >= lowest; --d) {
    auto it = std::find(l.dims.begin(), l.dims.end(), d);
    if (it != l.dims.end())
      s << "    at += (i % p." << dim_prefix << d << ") * p." << stride_prefix << l.field << "_" << (it - l.dims.begin()) << ";\n";
    if (d > lowest) s << "    i /= p." << dim_prefix << d << ";\n";
  }
  s << "    return at;\n  }\n";
  return s.str();
}

}  // namespace kevo::lower
