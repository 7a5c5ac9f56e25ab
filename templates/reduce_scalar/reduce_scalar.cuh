// kevo template family "reduce_scalar": a reduction of every element of a (fused, generated)
// prologue to one value, deterministic: stage 1 a fixed grid, each block writing one partial
// into scratch; stage 2 one block combining the partials in a fixed order, then the epilogue.
// No atomics: the same inputs give the same bits on every run (on a GPU of the same SM count).
#pragma once

#include "../common.cuh"

namespace kevo {

// The problem P (generated) supplies:
//   P::Op                                  Sum, Prod, Max or Min (common.cuh);
//   P::load<kVec, kCache>(p, i, v)         the prologue: values [i, i + kVec) of the flat
//                                          domain of n elements (load_hinted<kVec, kCache>);
//   P::store(out, r, count)                the finish and the epilogue of the reduced value r
//                                          (count: the number of elements, for means).

// Stage 1: block b reduces tiles b, b + gridDim.x, ... of kBlock * kVec * kItems elements (each
// thread kItems vectors of kVec, kBlock * kVec apart, in flight, into kItems accumulators) and
// writes partial[b]. The order of every operation depends only on n and the grid.
template <int kBlock, int kVec, int kItems, LoadHint kCache, typename P>
__device__ __forceinline__ void reduce_scalar_partials(const typename P::Params& p, long long n,
                                                       float* __restrict__ partial) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "threads per block: whole warps, at most 1024");
  using Op = typename P::Op;
  __shared__ float scratch[32];
  constexpr long long kTile = (long long)kBlock * kVec * kItems;
  float acc[kItems];
#pragma unroll
  for (int it = 0; it < kItems; ++it) acc[it] = Op::identity();
  for (long long base = (long long)blockIdx.x * kTile; base < n; base += (long long)gridDim.x * kTile) {
    float v[kItems][kVec];
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const long long i = base + ((long long)it * kBlock + threadIdx.x) * kVec;
      if (i < n) P::template load<kVec, kCache>(p, i, v[it]);
    }
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const long long i = base + ((long long)it * kBlock + threadIdx.x) * kVec;
      if (i < n) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) acc[it] = Op::combine(acc[it], v[it][k]);
      }
    }
  }
  float s = acc[0];
#pragma unroll
  for (int it = 1; it < kItems; ++it) s = Op::combine(s, acc[it]);
  s = group_reduce<Op, kBlock>(s, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// Stage 2: one block combines partial[0, parts) (thread t takes t, t + kBlock, ...; then the
// block's fixed tree) and stores the epilogue of the result.
template <int kBlock, typename P>
__device__ __forceinline__ void reduce_scalar_finish(const float* __restrict__ partial, int parts,
                                                     float* __restrict__ out, long long count) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "threads per block: whole warps, at most 1024");
  using Op = typename P::Op;
  __shared__ float scratch[32];
  float s = Op::identity();
  for (int j = threadIdx.x; j < parts; j += kBlock) s = Op::combine(s, partial[j]);
  s = group_reduce<Op, kBlock>(s, scratch);
  if (threadIdx.x == 0) P::store(out, s, count);
}

}  // namespace kevo
