// kevo template family "normalize", the channel-column kernel (normalize_channel_columns): batch
// norm of an [N, C] matrix, Welford statistics per column, the rows split over kSplit CTAs that
// meet through a scratch buffer.
#pragma once

#include "../common.cuh"
#include "memory.cuh"
#include "statistics.cuh"

namespace kevo {

// ---------------------------------------------------------------------------------------------
// Batch norm of an [N, C] matrix: each column's mean and (biased) variance over the N rows, then
// every element rewritten. Welford statistics; the rows of a column are split over kSplit CTAs.
// CTA b takes the tile b / kSplit of kBlockX * kVec adjacent columns and the row chunk b % kSplit
// (ceil(rows / kSplit) rows); thread (tx, ty) owns columns tx * kVec .. + kVec - 1 of the tile and
// rows ty, ty + kBlockY, ... of the chunk, kItems of them per step (a warp reads 32 * kVec
// consecutive floats). The kBlockY statistics of a column merge through shared memory in order of
// ty, the kSplit chunks' in chunk order, so every CTA of a column gets the same bits. kPass:
//   ColumnPass::Stats  stores the chunk's statistics in partials[chunk][column] (a plan scratch buffer);
//   ColumnPass::Apply  merges a column's kSplit partials and rewrites the chunk (the second launch);
//   ColumnPass::Fused  kSplit == 1: both in one launch, the chunk read twice (the second time from L2).
//
// Norm (generated) provides: Params; Stats; prologue(x) (the fused ops before the norm);
// stats(params, mean, var, column) -> Stats; apply(params, stats, x) -> the output element.

enum class ColumnPass { Stats = 0, Apply = 1, Fused = 2 };

template <int kBlockX, int kBlockY, int kVec, int kItems, int kSplit, L2Hint kHint, ColumnPass kPass, class Norm>
__device__ __forceinline__ void normalize_channel_columns(const typename Norm::Params& p, const float* __restrict__ x,
                                                          float4* __restrict__ partials, float* __restrict__ y,
                                                          int rows, long long cols) {
  static_assert(kBlockX % 32 == 0 && kBlockX * kBlockY <= 1024, "whole warps along the columns, at most 1024 threads");
  static_assert(kVec == 1 || kVec == 2 || kVec == 4, "float, float2 or float4 accesses");
  static_assert(kPass != ColumnPass::Fused || kSplit == 1, "one launch only when a CTA holds whole columns");
  static_assert(kBlockX * kBlockY * kVec * 16 <= 49152,
                "static shared memory: the packed statistics of every thread's columns");
  constexpr int kWidth = kBlockX * kVec;  // columns per tile
  constexpr bool kStats = kPass != ColumnPass::Apply, kApply = kPass != ColumnPass::Stats;
  __shared__ float4 slots[kStats && kBlockY > 1 ? kBlockY * kWidth : 1];  // [kBlockY][kWidth] packed statistics
  const int tx = threadIdx.x % kBlockX, ty = threadIdx.x / kBlockX;
  const long long c = static_cast<long long>(blockIdx.x / kSplit) * kWidth + tx * kVec;
  const bool live = c < cols;  // cols % kVec == 0: a vector is wholly in or out
  const int chunk = static_cast<int>((rows + (long long)kSplit - 1) / kSplit);
  const int begin = static_cast<int>(min((long long)rows, (long long)(blockIdx.x % kSplit) * chunk));
  const int end = min(rows, begin + chunk);

  // The chunk's rows of this thread's columns, kItems at a time: f(v, r) for each loaded row r.
  auto visit = [&](auto&& f, auto evict) {
    for (int r0 = begin + ty; r0 < end; r0 += kBlockY * kItems) {
      float v[kItems][kVec];
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int r = r0 + i * kBlockY;
        if (live && r < end) {
          load_global<kVec, decltype(evict)::value>(v[i], x + static_cast<long long>(r) * cols + c);
#pragma unroll
          for (int k = 0; k < kVec; ++k) v[i][k] = Norm::prologue(v[i][k]);
        }
      }
      f(v, r0);
    }
  };

  WelfordAcc acc[kVec];
  if constexpr (kStats) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) acc[k] = WelfordAcc::identity();
    visit(
        [&](const float (&v)[kItems][kVec], int r0) {
          if (!live) return;
          if (r0 + (kItems - 1) * kBlockY < end) {  // a full step: kItems values per column at once
#pragma unroll
            for (int k = 0; k < kVec; ++k) {
              float column[kItems];
#pragma unroll
              for (int i = 0; i < kItems; ++i) column[i] = v[i][k];
              acc[k].push(column);
            }
          } else {
#pragma unroll
            for (int i = 0; i < kItems; ++i)
              if (r0 + i * kBlockY < end)
#pragma unroll
                for (int k = 0; k < kVec; ++k) acc[k] = WelfordAcc::merge(acc[k], {1.f, v[i][k], 0.f, 0.f, 0.f});
          }
        },
        EvictConstant<Evict::Normal>{});
    if constexpr (kBlockY > 1) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) slots[ty * kWidth + tx * kVec + k] = acc[k].pack();
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc[k] = WelfordAcc::unpack(slots[tx * kVec + k]);
        for (int j = 1; j < kBlockY; ++j)
          acc[k] = WelfordAcc::merge(acc[k], WelfordAcc::unpack(slots[j * kWidth + tx * kVec + k]));
      }
    }
    if constexpr (kPass == ColumnPass::Stats) {
      if (ty == 0 && live)
#pragma unroll
        for (int k = 0; k < kVec; ++k) partials[(blockIdx.x % kSplit) * cols + c + k] = acc[k].pack();
      return;
    }
  }
  if constexpr (kApply) {
    if (!live) return;  // no barrier follows
    if constexpr (kPass == ColumnPass::Apply) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc[k] = WelfordAcc::unpack(partials[c + k]);
        for (int j = 1; j < kSplit; ++j)
          acc[k] = WelfordAcc::merge(acc[k], WelfordAcc::unpack(partials[j * cols + c + k]));
      }
    }
    typename Norm::Stats s[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) s[k] = Norm::stats(p, acc[k].average(), acc[k].deviations() / rows, c + k);
    visit(
        [&](const float (&v)[kItems][kVec], int r0) {
#pragma unroll
          for (int i = 0; i < kItems; ++i) {
            const int r = r0 + i * kBlockY;
            if (r < end) {
              float out[kVec];
#pragma unroll
              for (int k = 0; k < kVec; ++k) out[k] = Norm::apply(p, s[k], v[i][k]);
              store_global<kVec, kHint >= L2Hint::Stream>(y + static_cast<long long>(r) * cols + c, out);
            }
          }
        },
        EvictConstant<kHint >= L2Hint::Stream ? Evict::First : Evict::Normal>{});
  }
}

}  // namespace kevo
