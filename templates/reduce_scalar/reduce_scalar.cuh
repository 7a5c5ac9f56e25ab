// kevo template family "reduce_scalar": a reduction of every element of a (fused, generated)
// prologue to one value, deterministic: stage 1 a fixed grid, each block writing one partial
// into scratch; stage 2 one block combining the partials in a fixed order, then the epilogue.
// No atomics: the same inputs give the same bits on every run (on a GPU of the same SM count).
#pragma once

namespace kevo {

// kVec consecutive floats with a cache hint: 0 default, 1 read-only (__ldg), 2 streaming
// (__ldcs, evict first: the data is read once). Alignment as for load_vec.
template <int kVec, int kCache>
__device__ __forceinline__ void scalar_load(float (&r)[kVec], const float* __restrict__ p) {
  if constexpr (kCache == 0) {
    load_vec<kVec>(r, p);
  } else if constexpr (kVec == 4) {
    const float4* q = reinterpret_cast<const float4*>(p);
    const float4 t = kCache == 1 ? __ldg(q) : __ldcs(q);
    r[0] = t.x, r[1] = t.y, r[2] = t.z, r[3] = t.w;
  } else if constexpr (kVec == 2) {
    const float2* q = reinterpret_cast<const float2*>(p);
    const float2 t = kCache == 1 ? __ldg(q) : __ldcs(q);
    r[0] = t.x, r[1] = t.y;
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) r[k] = kCache == 1 ? __ldg(p + k) : __ldcs(p + k);
  }
}

// The problem P (generated) supplies:
//   P::Op                                  Sum, Prod, Max or Min (common.cuh);
//   P::load<kVec, kCache>(p, i, v)         the prologue: values [i, i + kVec) of the flat
//                                          domain of n elements;
//   P::store(out, r, count)                the finish and the epilogue of the reduced value r
//                                          (count: the number of elements, for means).

// Stage 1: block b reduces tiles b, b + gridDim.x, ... of kBlock * kVec * kItems elements (each
// thread kItems vectors of kVec, kBlock * kVec apart, in flight, into kItems accumulators) and
// writes partial[b]. The order of every operation depends only on n and the grid.
template <int kBlock, int kVec, int kItems, int kCache, typename P>
__device__ __forceinline__ void reduce_scalar_partials(const typename P::Params& p, long long n,
                                                       float* __restrict__ partial) {
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
  using Op = typename P::Op;
  __shared__ float scratch[32];
  float s = Op::identity();
  for (int j = threadIdx.x; j < parts; j += kBlock) s = Op::combine(s, partial[j]);
  s = group_reduce<Op, kBlock>(s, scratch);
  if (threadIdx.x == 0) P::store(out, s, count);
}

}  // namespace kevo
