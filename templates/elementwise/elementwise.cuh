// kevo template family "elementwise": one fused elementwise body (generated from the task's op
// graph) applied over a flat output, kVec consecutive elements per access, kItems accesses per
// thread, in one pass over the grid or grid-stride over a fixed grid.
#pragma once

#include "../common.cuh"

namespace kevo {

// Body::apply<kVec>(params, i) computes and stores output elements [i, i + kVec) (n % kVec == 0,
// a manifest constraint on every workload).
template <int kBlock, int kVec, int kItems, GridShape kShape, typename Body>
__device__ __forceinline__ void elementwise(const typename Body::Params& p, long long n) {
  static_assert(kBlock <= 1024, "threads per block");
  constexpr long long kTile = (long long)kBlock * kVec * kItems;
  long long base = (long long)blockIdx.x * kTile;
  do {
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      // Consecutive threads take consecutive vectors: every access of a warp is coalesced.
      const long long i = base + ((long long)item * kBlock + threadIdx.x) * kVec;
      if (i < n) Body::template apply<kVec>(p, i);
    }
    base += (long long)gridDim.x * kTile;
  } while (kShape == GridShape::GridStride && base < n);
}

}  // namespace kevo
