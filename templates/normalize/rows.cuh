// kevo template family "normalize", the row kernel (normalize_rows): rows contiguous in memory
// (or, through ChannelRows, the channels of an [N, C, S] tensor: batch norm); a row is shared by
// kThreads threads of a CTA, or split over the kCluster CTAs of a thread-block cluster (sm_90+),
// and is re-read from global memory, or kept in shared memory or registers between passes.
// normalize_rows_split_stats/_apply: a row split over kSplit CTAs that meet through a scratch
// buffer, in two launches (few, long rows).
#pragma once

#include "../common.cuh"
#include "memory.cuh"
#include "statistics.cuh"

namespace kevo {

// ---------------------------------------------------------------------------------------------
// Row layouts: where element `col` of row `row` lives. The row kernels take one (default: rows).

// Rows of n contiguous elements, row r at r * n.
struct ContiguousRows {
  __device__ __forceinline__ long long start(long long row, int n) const { return row * n; }
  __device__ __forceinline__ long long offset(int col) const { return col; }
};

// The channels of an [N, C, S] tensor as rows (batch norm): row c is channel c, its N runs of S
// contiguous elements; element col = i * S + s of the row is at i * C * S + c * S + s. A vector
// must not straddle two runs (S % kVec == 0, which the manifest requires). col / S is a
// multiply-high by a magic number (Granlund & Montgomery, as CUTLASS's FastDivmod), computed once
// per thread; exact for every col < 2^31 and 1 <= S <= 2^30.
struct ChannelRows {
  unsigned spatial, magic, shift;
  long long sample;  // C * S: from one sample's run to the next

  __device__ __forceinline__ ChannelRows(int channels, int s)
      : spatial(static_cast<unsigned>(s)), sample(static_cast<long long>(channels) * s) {
    shift = s > 1 ? 32 - __clz(s - 1) : 0;  // ceil(log2(s))
    // magic = floor(2^32 * (2^shift - s) / s) + 1 by long division in 32 bits (2^shift - s < s):
    // a 64-bit division would be a call, whose saved registers ptxas reports as spills.
    unsigned q = 0, rem = (1u << shift) - spatial;
#pragma unroll 1
    for (int i = 0; i < 32; ++i) {
      rem <<= 1, q <<= 1;
      if (rem >= spatial) rem -= spatial, q |= 1;
    }
    magic = q + 1;
  }
  __device__ __forceinline__ long long start(long long row, int) const { return row * spatial; }
  __device__ __forceinline__ long long offset(int col) const {
    const unsigned c = static_cast<unsigned>(col);
    const unsigned i = static_cast<unsigned>((static_cast<unsigned long long>(__umulhi(c, magic)) + c) >> shift);
    return static_cast<long long>(i) * sample + (c - i * spatial);
  }
};

// ---------------------------------------------------------------------------------------------
// One thread's share of a row chunk [begin, end): its vectors start at begin + (i * kThreads +
// lane) * kVec. The first pass reads global memory (and fills the cache); later passes read the
// cache, or global memory again when there is none. Each thread only reads back cache entries it
// wrote itself, so the cache needs no barrier. x and y point at the row's start; the layout places
// its elements.
template <int kThreads, int kVec, int kItems, Cache kCache, L2Hint kHint, class Norm, class Layout = ContiguousRows>
struct RowPart {
  static constexpr int kVector = kVec;
  static constexpr int kTile = kThreads * kVec * kItems;  // elements per tile of the row
  const float* __restrict__ x;  // the row's element 0
  float* __restrict__ y;
  int begin, end, lane;
  float* cache;  // Cache::Shared: the chunk, indexed col - begin
  Layout layout;
  float regs[kCache == Cache::Registers ? kItems : 1][kVec];

  template <bool kFirst, bool kLast>
  __host__ __device__ static constexpr Evict evict() {
    if (kCache != Cache::Global || kLast) return kHint >= L2Hint::Stream ? Evict::First : Evict::Normal;
    return kHint == L2Hint::Keep ? Evict::Last : Evict::Normal;
  }

  // f(v, col) for each of this thread's vectors.
  template <bool kFirst, bool kLast, class F>
  __device__ __forceinline__ void visit(F&& f) {
    if constexpr (kCache == Cache::Registers) {  // the manifest guarantees end - begin <= kTile
      if constexpr (kFirst) {
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          const int col = begin + (i * kThreads + lane) * kVec;
          if (col < end) {
            load_global<kVec, evict<kFirst, kLast>()>(regs[i], x + layout.offset(col));
            Norm::prologue(regs[i]);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int col = begin + (i * kThreads + lane) * kVec;
        if (col < end) f(regs[i], col);
      }
    } else {
      for (int base = begin; base < end; base += kTile) {
        float v[kItems][kVec];
#pragma unroll
        for (int i = 0; i < kItems; ++i) {  // all loads of the tile first: kItems in flight
          const int col = base + (i * kThreads + lane) * kVec;
          if (col < end) {
            if (kFirst || kCache == Cache::Global) {
              load_global<kVec, evict<kFirst, kLast>()>(v[i], x + layout.offset(col));
              Norm::prologue(v[i]);
            } else {
              load_vec<kVec>(v[i], cache + (col - begin));
            }
          }
        }
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          const int col = base + (i * kThreads + lane) * kVec;
          if (col < end) {
            if (kFirst && kCache == Cache::Shared) store_vec<kVec>(cache + (col - begin), v[i]);
            f(v[i], col);
          }
        }
      }
    }
  }

  // A statistics pass (the first one reads global memory).
  template <bool kFirst, class F>
  __device__ __forceinline__ void pass(F&& f) {
    visit<kFirst, false>(f);
  }

  // The output pass: f(v, col, out) computes the outputs of a vector.
  template <class F>
  __device__ __forceinline__ void write(F&& f) {
    visit<false, true>([&](const float (&v)[kVec], int col) {
      float out[kVec];
      f(v, col, out);
      store_global<kVec, kHint >= L2Hint::Stream>(y + layout.offset(col), out);
    });
  }
};

// ---------------------------------------------------------------------------------------------
// Row statistics, for the generated Norm structs.

struct SoftmaxStats {
  float max, sum;  // the row's maximum and the sum of exp(x - max)
};

template <StatsAlgo kAlgo, class Part, class Reducer>
__device__ __forceinline__ SoftmaxStats softmax_stats(Part& part, Reducer& red) {
  if constexpr (kAlgo == StatsAlgo::TwoPass) {
    MaxAcc m = MaxAcc::identity();
    part.template pass<true>([&](const auto& v, int) { m.push(v); });
    m = red.merge(m);
    SumAcc s = SumAcc::identity();
    part.template pass<false>([&](const auto& v, int) {
#pragma unroll
      for (int k = 0; k < Part::kVector; ++k) s.add(expf(v[k] - m.max));
    });
    return {m.max, red.merge(s).total()};
  } else {
    SoftmaxAcc a = SoftmaxAcc::identity();
    part.template pass<true>([&](const auto& v, int) { a.push(v); });
    a = red.merge(a);
    return {a.max, a.total()};
  }
}

struct MeanVar {
  float mean, var;  // biased variance, as layer/group/instance norm use
};

template <StatsAlgo kAlgo, class Part, class Reducer>
__device__ __forceinline__ MeanVar mean_var(Part& part, Reducer& red, int n) {
  if constexpr (kAlgo == StatsAlgo::TwoPass) {
    SumAcc s = SumAcc::identity();
    part.template pass<true>([&](const auto& v, int) { s.push(v); });
    const float mean = red.merge(s).total() / n;
    SumAcc q = SumAcc::identity();
    part.template pass<false>([&](const auto& v, int) {
#pragma unroll
      for (int k = 0; k < Part::kVector; ++k) q.add((v[k] - mean) * (v[k] - mean));
    });
    return {mean, red.merge(q).total() / n};
  } else {
    WelfordAcc a = WelfordAcc::identity();
    part.template pass<true>([&](const auto& v, int) { a.push(v); });
    a = red.merge(a);
    return {a.average(), a.deviations() / n};
  }
}

// The sum of term(x) over the row.
template <class Part, class Reducer, class Term>
__device__ __forceinline__ float row_sum(Part& part, Reducer& red, Term term) {
  SumAcc s = SumAcc::identity();
  part.template pass<true>([&](const auto& v, int) {
#pragma unroll
    for (int k = 0; k < Part::kVector; ++k) s.add(term(v[k]));
  });
  return red.merge(s).total();
}

// ---------------------------------------------------------------------------------------------
// The row kernel's body. rows x n elements, row r at x + r * n. A CTA holds kRows row slots of
// kThreads threads each; with kCluster > 1 the kernel carries __cluster_dims__(kCluster, 1, 1)
// and CTA `rank` of a cluster takes chunk `rank` of each of the cluster's rows (the cluster's
// statistics merge through distributed shared memory). Clusters (or CTAs) stride over the row
// tiles, so any grid that is a multiple of kCluster is correct. Dynamic shared memory
// (Cache::Shared): kRows * chunk floats, chunk = ceil(n / (kCluster * kVec)) * kVec.
//
// Norm (generated) provides: Params; Stats; kStatsAlgos (2: two-pass and single-pass statistics;
// 1: a plain sum, one algorithm); prologue<kVec>(v) applied to loaded elements;
// stats<kAlgo>(params, part, reducer, n) -> Stats; apply<kVec>(params, stats, row, col, v, out).
// `layout` places a row's elements (ContiguousRows: row r at x + r * n).

template <int kThreads, int kRows, int kCluster, int kVec, int kItems, Cache kCache, L2Hint kHint, StatsAlgo kAlgo,
          class Norm, class Layout = ContiguousRows>
__device__ __forceinline__ void normalize_rows(const typename Norm::Params& p, const float* __restrict__ x,
                                               float* __restrict__ y, long long rows, int n,
                                               const Layout& layout = Layout{}) {
  static_assert(kThreads % 32 == 0 && kThreads * kRows <= 1024, "whole warps, at most 1024 threads");
  static_assert(kVec == 1 || kVec == 2 || kVec == 4, "float, float2 or float4 accesses");
  static_assert(kHint != L2Hint::Keep || kCache == Cache::Global,
                "evict-last hints only matter when the row is re-read from global memory");
  static_assert(kAlgo == StatsAlgo::TwoPass || Norm::kStatsAlgos == 2, "the op has only one statistics algorithm");
  __shared__ float4 warp_slots[2 * kRows * (kThreads / 32)];
  __shared__ float4 cluster_slots[2 * kRows];
  const int group = threadIdx.x / kThreads, lane = threadIdx.x % kThreads;
  const int rank = kCluster > 1 ? static_cast<int>(cluster_rank()) : 0;
  const int chunk = static_cast<int>((n + (long long)kCluster * kVec - 1) / ((long long)kCluster * kVec) * kVec);
  const int begin = static_cast<int>(min((long long)n, (long long)rank * chunk));
  const int end = min(n, begin + chunk);
  RowReducer<kThreads, kRows, kCluster> red{warp_slots, cluster_slots, group, lane};
  float* cache = reinterpret_cast<float*>(normalize_dynamic_smem) + (long long)group * chunk;

  const long long tiles = (rows + kRows - 1) / kRows;
  // Uniform over the CTA and the cluster: every thread merges (and syncs) the same number of times.
  for (long long t = blockIdx.x / kCluster; t < tiles; t += gridDim.x / kCluster) {
    const long long row = t * kRows + group;
    const bool live = row < rows;  // a slot past the last row reduces nothing and writes nothing
    const long long at = layout.start(live ? row : 0, n);
    RowPart<kThreads, kVec, kItems, kCache, kHint, Norm, Layout> part{x + at, y + at, begin, live ? end : begin, lane,
                                                                      cache, layout};
    const typename Norm::Stats s = Norm::template stats<kAlgo>(p, part, red, n);
    part.write([&](const float (&v)[kVec], int col, float (&out)[kVec]) { Norm::apply(p, s, row, col, v, out); });
  }
  if constexpr (kCluster > 1) cluster_sync();  // no CTA exits while another may read its slots
}

// Split rows: the row is cut into kSplit chunks of ceil(n / (kSplit * kVec)) * kVec elements, and
// CTA tile t takes chunk t % kSplit of row t / kSplit in both launches. partials: [rows][kSplit]
// packed statistics (a scratch buffer of the plan, fully written by the first launch).
template <int kSplit, int kVec>
__device__ __forceinline__ void split_chunk(long long t, int n, int& begin, int& end) {
  const long long chunk = (n + (long long)kSplit * kVec - 1) / ((long long)kSplit * kVec) * kVec;
  begin = static_cast<int>(min((long long)n, (t % kSplit) * chunk));
  end = static_cast<int>(min((long long)n, begin + chunk));
}

template <int kThreads, int kSplit, int kVec, int kItems, L2Hint kHint, StatsAlgo kAlgo, class Norm,
          class Layout = ContiguousRows>
__device__ __forceinline__ void normalize_rows_split_stats(const typename Norm::Params& p, const float* __restrict__ x,
                                                           float4* __restrict__ partials, long long rows, int n,
                                                           const Layout& layout = Layout{}) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
  static_assert(kAlgo == StatsAlgo::TwoPass || Norm::kStatsAlgos == 2, "the op has only one statistics algorithm");
  static_assert(kAlgo == StatsAlgo::SinglePass || Norm::kStatsAlgos == 1, "a split row needs single-pass statistics");
  __shared__ float4 warp_slots[2 * (kThreads / 32)];
  const int lane = threadIdx.x;
  RowReducer<kThreads, 1, 1> cta{warp_slots, nullptr, 0, lane};
  for (long long t = blockIdx.x; t < rows * kSplit; t += gridDim.x) {
    int begin, end;
    split_chunk<kSplit, kVec>(t, n, begin, end);
    RowPart<kThreads, kVec, kItems, Cache::Global, kHint, Norm, Layout> part{x + layout.start(t / kSplit, n), nullptr,
                                                                            begin, end, lane, nullptr, layout};
    SplitStore<RowReducer<kThreads, 1, 1>&> red{cta, partials + t};
    Norm::template stats<kAlgo>(p, part, red, n);  // the merge stored the chunk's statistics
  }
}

template <int kThreads, int kSplit, int kVec, int kItems, L2Hint kHint, StatsAlgo kAlgo, class Norm,
          class Layout = ContiguousRows>
__device__ __forceinline__ void normalize_rows_split_apply(const typename Norm::Params& p, const float* __restrict__ x,
                                                           const float4* __restrict__ partials, float* __restrict__ y,
                                                           long long rows, int n, const Layout& layout = Layout{}) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
  static_assert(kAlgo == StatsAlgo::TwoPass || Norm::kStatsAlgos == 2, "the op has only one statistics algorithm");
  static_assert(kAlgo == StatsAlgo::SinglePass || Norm::kStatsAlgos == 1, "a split row needs single-pass statistics");
  const int lane = threadIdx.x;
  for (long long t = blockIdx.x; t < rows * kSplit; t += gridDim.x) {
    const long long row = t / kSplit;
    int begin, end;
    split_chunk<kSplit, kVec>(t, n, begin, end);
    const long long at = layout.start(row, n);
    using Part = RowPart<kThreads, kVec, kItems, Cache::Global, kHint, Norm, Layout>;
    Part part{x + at, y + at, begin, end, lane, nullptr, layout};
    Part none{x + at, y + at, begin, begin, lane, nullptr, layout};
    SplitLoad red{partials + row * kSplit, kSplit};
    const typename Norm::Stats s = Norm::template stats<kAlgo>(p, none, red, n);
    part.write([&](const float (&v)[kVec], int col, float (&out)[kVec]) { Norm::apply(p, s, row, col, v, out); });
  }
}

}  // namespace kevo
