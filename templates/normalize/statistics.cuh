// kevo template family "normalize", statistics: the merges of running statistics
// (accumulators.cuh) across the threads that share a row, the CTAs of a cluster (RowReducer) and
// the CTAs of a row split through global memory (SplitStore, SplitLoad).
#pragma once

#include "../common.cuh"
#include "accumulators.cuh"
#include "memory.cuh"

namespace kevo {

template <class Acc>
__device__ __forceinline__ Acc shfl(Acc a, int lane) {
  const float4 t = a.pack();
  return Acc::unpack(make_float4(__shfl_sync(0xffffffffu, t.x, lane), __shfl_sync(0xffffffffu, t.y, lane),
                                 __shfl_sync(0xffffffffu, t.z, lane), __shfl_sync(0xffffffffu, t.w, lane)));
}

// Lanes 0..kCount-1 of the warp hold partial statistics; every lane gets their merge, taken in
// lane order so that all lanes (and all CTAs of a cluster) agree to the bit.
template <int kCount, class Acc>
__device__ __forceinline__ Acc ordered_merge(Acc mine) {
  Acc total = shfl(mine, 0);
#pragma unroll
  for (int j = 1; j < kCount; ++j) total = Acc::merge(total, shfl(mine, j));
  return total;
}

// Merges the statistics of the kThreads threads that share a row inside a CTA (warp shuffles,
// then shared memory) and of the kCluster CTAs that share it in a cluster (distributed shared
// memory). Every thread of the CTA calls merge() the same number of times; slots alternate
// between two halves, so one barrier per merge is enough: a slot half is rewritten two merges
// later, after every reader of it has passed the barrier of the merge in between.
template <int kThreads, int kRows, int kCluster>
struct RowReducer {
  static constexpr int kWarps = kThreads / 32;
  float4* warp_slots;     // [2][kRows][kWarps], shared
  float4* cluster_slots;  // [2][kRows], shared
  int group, lane;        // the row slot of this thread in the CTA, its index in the row's threads
  int half = 0;

  template <class Acc>
  __device__ __forceinline__ Acc merge(Acc a) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) a = Acc::merge(a, shfl(a, (lane & 31) ^ offset));
    a = shfl(a, 0);  // the butterfly leaves the lanes a rounding apart; take lane 0's
    if constexpr (kWarps > 1) {
      float4* slots = warp_slots + (half * kRows + group) * kWarps;
      if ((lane & 31) == 0) slots[lane >> 5] = a.pack();
      __syncthreads();
      a = ordered_merge<kWarps>((lane & 31) < kWarps ? Acc::unpack(slots[lane & 31]) : Acc::identity());
    }
    if constexpr (kCluster > 1) {
      float4* slot = cluster_slots + half * kRows + group;
      if (lane == 0) *slot = a.pack();
      cluster_sync();
      a = ordered_merge<kCluster>((lane & 31) < kCluster ? Acc::unpack(load_cluster(slot, lane & 31)) : Acc::identity());
    }
    half ^= 1;
    return a;
  }
};

// Split rows (a row shared by kSplit CTAs that meet through global memory, in two launches). The
// statistics launch merges a chunk's statistics in the CTA and stores them, packed, in the
// row's partials; the output launch ignores its (empty) chunk's statistics and merges the row's
// partials instead, in chunk order, so every CTA of the row gets the same bits. Both expect
// Norm::stats to merge once per row: single-pass statistics only (the split kernels assert it).
template <class Inner>
struct SplitStore {
  Inner inner;
  float4* slot;  // partials[row][chunk]

  template <class Acc>
  __device__ __forceinline__ Acc merge(Acc a) {
    a = inner.merge(a);
    if (threadIdx.x == 0) *slot = a.pack();
    return a;
  }
};

struct SplitLoad {
  const float4* slots;  // partials[row]
  int count;

  template <class Acc>
  __device__ __forceinline__ Acc merge(Acc) {
    Acc a = Acc::unpack(slots[0]);
    for (int j = 1; j < count; ++j) a = Acc::merge(a, Acc::unpack(slots[j]));
    return a;
  }
};

}  // namespace kevo
