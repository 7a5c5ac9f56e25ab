// kevo template family "normalize", the column kernel (normalize_columns): the reduced dim has
// an inner stride ([outer, reduce, inner]); a thread owns kVec adjacent columns, kBlockY threads
// share a column's reduction.
#pragma once

#include "../common.cuh"
#include "memory.cuh"

namespace kevo {

// ---------------------------------------------------------------------------------------------
// The column kernel's body: x viewed as [outer, reduce, inner], the statistic a sum over
// `reduce` for each (outer, inner) column. A CTA of kBlockX * kBlockY threads takes a tile of
// kBlockX * kVec adjacent columns of one outer index; thread (tx, ty) owns columns tx * kVec ..
// + kVec - 1 and the reduce indices ty, ty + kBlockY, ... (a warp reads 32 * kVec consecutive
// floats). The kBlockY partial sums of a column meet in shared memory. Dynamic shared memory
// (Cache::Shared): reduce * kBlockX * kVec floats.
//
// Norm (generated) provides: Params; Stats; term(x) (what is summed); finish(sum, count) -> Stats;
// apply(params, stats, x) -> the output element.

template <int kBlockX, int kBlockY, int kVec, int kItems, Cache kCache, L2Hint kHint, class Norm>
__device__ __forceinline__ void normalize_columns(const typename Norm::Params& p, const float* __restrict__ x,
                                                  float* __restrict__ y, long long outer, int reduce, long long inner) {
  static_assert(kBlockX % 32 == 0 && kBlockX * kBlockY <= 1024, "whole warps along inner, at most 1024 threads");
  static_assert(kHint != L2Hint::Keep || kCache == Cache::Global,
                "evict-last hints only matter when the columns are re-read from global memory");
  constexpr int kWidth = kBlockX * kVec;  // columns per tile
  constexpr Evict kFirstRead = kCache == Cache::Global ? (kHint == L2Hint::Keep ? Evict::Last : Evict::Normal)
                                                  : (kHint >= L2Hint::Stream ? Evict::First : Evict::Normal);
  constexpr Evict kLastRead = kHint >= L2Hint::Stream ? Evict::First : Evict::Normal;
  __shared__ __align__(16) float partial[kBlockY > 1 ? 2 * kBlockY * kWidth : 1];  // [2][kBlockY][kWidth]
  float* cache = reinterpret_cast<float*>(normalize_dynamic_smem);                  // [reduce][kWidth]
  const int tx = threadIdx.x % kBlockX, ty = threadIdx.x / kBlockX;
  const long long col_tiles = (inner + kWidth - 1) / kWidth, tiles = outer * col_tiles;
  int half = 0;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {  // uniform over the CTA
    const long long c = (t % col_tiles) * kWidth + tx * kVec;
    const bool live = c < inner;  // inner % kVec == 0: a vector is wholly in or out
    const long long at = (t / col_tiles) * reduce * inner + c;  // element (o, 0, c); (o, r, c) is at + r * inner
    float regs[kCache == Cache::Registers ? kItems : 1][kVec];
    float sum[kVec], carry[kVec];  // compensated: sum - carry (kahan_add)
#pragma unroll
    for (int k = 0; k < kVec; ++k) sum[k] = 0.f, carry[k] = 0.f;

    // Pass 1: the sums of term(x).
    if constexpr (kCache == Cache::Registers) {  // the manifest guarantees reduce <= kBlockY * kItems
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int r = ty + i * kBlockY;
        if (live && r < reduce) load_global<kVec, kFirstRead>(regs[i], x + at + r * inner);
      }
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int r = ty + i * kBlockY;
        if (live && r < reduce) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) kahan_add(sum[k], carry[k], Norm::term(regs[i][k]));
        }
      }
    } else {
      for (int r0 = ty; r0 < reduce; r0 += kBlockY * kItems) {
        float v[kItems][kVec];
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          const int r = r0 + i * kBlockY;
          if (live && r < reduce) load_global<kVec, kFirstRead>(v[i], x + at + r * inner);
        }
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          const int r = r0 + i * kBlockY;
          if (live && r < reduce) {
            if constexpr (kCache == Cache::Shared) store_vec<kVec>(cache + r * kWidth + tx * kVec, v[i]);
#pragma unroll
            for (int k = 0; k < kVec; ++k) kahan_add(sum[k], carry[k], Norm::term(v[i][k]));
          }
        }
      }
    }

#pragma unroll
    for (int k = 0; k < kVec; ++k) sum[k] -= carry[k];

    // The kBlockY partial sums of each column, added in order of ty.
    if constexpr (kBlockY > 1) {
      float* mine = partial + half * kBlockY * kWidth + tx * kVec;
      store_vec<kVec>(mine + ty * kWidth, sum);
      __syncthreads();
      load_vec<kVec>(sum, mine);
      for (int j = 1; j < kBlockY; ++j) {
        float other[kVec];
        load_vec<kVec>(other, mine + j * kWidth);
#pragma unroll
        for (int k = 0; k < kVec; ++k) sum[k] += other[k];
      }
      half ^= 1;  // the other half is written next tile, after this tile's barrier
    }
    typename Norm::Stats s[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) s[k] = Norm::finish(sum[k], reduce);

    // Pass 2: the outputs.
    auto output = [&](const float (&v)[kVec], int r) {
      float out[kVec];
#pragma unroll
      for (int k = 0; k < kVec; ++k) out[k] = Norm::apply(p, s[k], v[k]);
      store_global<kVec, kHint >= L2Hint::Stream>(y + at + r * inner, out);
    };
    if constexpr (kCache == Cache::Registers) {
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int r = ty + i * kBlockY;
        if (live && r < reduce) output(regs[i], r);
      }
    } else {
      for (int r0 = ty; r0 < reduce; r0 += kBlockY * kItems) {
        float v[kItems][kVec];
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          const int r = r0 + i * kBlockY;
          if (live && r < reduce) {
            if constexpr (kCache == Cache::Shared) load_vec<kVec>(v[i], cache + r * kWidth + tx * kVec);
            else load_global<kVec, kLastRead>(v[i], x + at + r * inner);
          }
        }
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          const int r = r0 + i * kBlockY;
          if (live && r < reduce) output(v[i], r);
        }
      }
    }
  }
}

}  // namespace kevo
