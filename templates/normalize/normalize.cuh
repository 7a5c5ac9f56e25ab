// kevo template family "normalize": reduce-then-broadcast. A statistic of each row (the maximum
// and the sum of exponentials, the mean and the variance, a sum) is reduced on chip, then every
// element of the row is rewritten from it: softmax, log_softmax, layer, group and instance norm,
// RMS norm, batch norm. Three kernels:
//   normalize_rows     rows contiguous in memory (or, through ChannelRows, the channels of an
//                      [N, C, S] tensor: batch norm); a row is shared by kThreads threads of a CTA,
//                      or split over the kCluster CTAs of a thread-block cluster (sm_90+), and is
//                      re-read from global memory, or kept in shared memory or registers;
//                      normalize_rows_split_stats/_apply: a row split over kSplit CTAs that
//                      meet through a scratch buffer, in two launches (few, long rows);
//   normalize_columns  the reduced dim has an inner stride ([outer, reduce, inner]): a thread
//                      owns kVec adjacent columns, kBlockY threads share a column's reduction;
//   normalize_channel_columns  batch norm of an [N, C] matrix: Welford statistics per column,
//                      the rows split over kSplit CTAs that meet through a scratch buffer.
// The op itself is a small generated struct `Norm` (the candidate's), which computes the row's
// statistics with the helpers below and turns an element into its output.
#pragma once

namespace kevo {

// ---------------------------------------------------------------------------------------------
// Knob values.

enum RowCache { kCacheNone = 0, kCacheShared = 1, kCacheRegisters = 2 };
// kHintStream: the last read of x and the write of y bypass L2 residency (evict first), so that
// the rows still to be re-read stay in L2; kHintKeep: also mark the first read evict-last.
enum CacheHint { kHintNone = 0, kHintStream = 1, kHintKeep = 2 };
// kTwoPass: one pass per statistic (max then sum of exp; mean then variance); kSinglePass: all
// statistics in one read (online softmax, Welford).
enum StatsAlgo { kTwoPass = 0, kSinglePass = 1 };

// ---------------------------------------------------------------------------------------------
// Global memory accesses with L2 eviction priorities.

enum Evict { kEvictNormal = 0, kEvictFirst = 1, kEvictLast = 2 };

template <int kValue>
struct IntConstant {
  static constexpr int value = kValue;
};

template <int kVec, int kEvict>
__device__ __forceinline__ void load_global(float (&r)[kVec], const float* p) {
  if constexpr (kEvict == kEvictFirst) {
    if constexpr (kVec == 4) {
      const float4 t = __ldcs(reinterpret_cast<const float4*>(p));
      r[0] = t.x, r[1] = t.y, r[2] = t.z, r[3] = t.w;
    } else if constexpr (kVec == 2) {
      const float2 t = __ldcs(reinterpret_cast<const float2*>(p));
      r[0] = t.x, r[1] = t.y;
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) r[k] = __ldcs(p + k);
    }
  } else if constexpr (kEvict == kEvictLast) {
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    if constexpr (kVec == 4) {
      asm("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
          : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]) : "l"(p), "l"(policy));
    } else if constexpr (kVec == 2) {
      asm("ld.global.L2::cache_hint.v2.f32 {%0, %1}, [%2], %3;" : "=f"(r[0]), "=f"(r[1]) : "l"(p), "l"(policy));
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) asm("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(r[k]) : "l"(p + k), "l"(policy));
    }
  } else {
    load_vec<kVec>(r, p);
  }
}

template <int kVec, bool kStream>
__device__ __forceinline__ void store_global(float* p, const float (&r)[kVec]) {
  if constexpr (!kStream) {
    store_vec<kVec>(p, r);
  } else if constexpr (kVec == 4) {
    __stcs(reinterpret_cast<float4*>(p), make_float4(r[0], r[1], r[2], r[3]));
  } else if constexpr (kVec == 2) {
    __stcs(reinterpret_cast<float2*>(p), make_float2(r[0], r[1]));
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) __stcs(p + k, r[k]);
  }
}

// ---------------------------------------------------------------------------------------------
// Thread-block clusters (sm_90+): rank, barrier, and loads from another CTA's shared memory.

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Every thread of every CTA of the cluster; release/acquire orders the shared memory writes.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ float4 load_cluster(const float4* local, unsigned rank) {
  unsigned remote;
  float4 v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(local))), "r"(rank));
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
  return v;
}

// ---------------------------------------------------------------------------------------------
// Running statistics. Each has identity(), push(v) for a vector of elements, merge(a, b), and
// packs into a float4 to travel through shared memory.

__device__ __forceinline__ float neg_inf() { return -__int_as_float(0x7f800000); }

struct MaxAcc {
  float max;
  static __device__ __forceinline__ MaxAcc identity() { return {neg_inf()}; }
  template <int kVec>
  __device__ __forceinline__ void push(const float (&v)[kVec]) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) max = Max::combine(max, v[k]);
  }
  static __device__ __forceinline__ MaxAcc merge(MaxAcc a, MaxAcc b) { return {Max::combine(a.max, b.max)}; }
  __device__ __forceinline__ float4 pack() const { return make_float4(max, 0.f, 0.f, 0.f); }
  static __device__ __forceinline__ MaxAcc unpack(float4 t) { return {t.x}; }
};

struct SumAcc {
  float sum;
  static __device__ __forceinline__ SumAcc identity() { return {0.f}; }
  template <int kVec>
  __device__ __forceinline__ void push(const float (&v)[kVec]) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) sum += v[k];
  }
  static __device__ __forceinline__ SumAcc merge(SumAcc a, SumAcc b) { return {a.sum + b.sum}; }
  __device__ __forceinline__ float4 pack() const { return make_float4(sum, 0.f, 0.f, 0.f); }
  static __device__ __forceinline__ SumAcc unpack(float4 t) { return {t.x}; }
};

// Online softmax (Milakov & Gimelshein, 2018): the maximum so far and the sum of exp(v - max).
// Exponents are taken against max, or 0 while max is -inf, so -inf elements add 0 (not NaN).
struct SoftmaxAcc {
  float max, sum;
  static __device__ __forceinline__ float shift(float m) { return m == neg_inf() ? 0.f : m; }
  static __device__ __forceinline__ SoftmaxAcc identity() { return {neg_inf(), 0.f}; }
  template <int kVec>
  __device__ __forceinline__ void push(const float (&v)[kVec]) {
    float m = max;
#pragma unroll
    for (int k = 0; k < kVec; ++k) m = Max::combine(m, v[k]);
    const float s = shift(m);
    float total = sum * expf(max - s);  // rescale the old sum to the new maximum
#pragma unroll
    for (int k = 0; k < kVec; ++k) total += expf(v[k] - s);
    max = m, sum = total;
  }
  static __device__ __forceinline__ SoftmaxAcc merge(SoftmaxAcc a, SoftmaxAcc b) {
    const float m = Max::combine(a.max, b.max), s = shift(m);
    return {m, a.sum * expf(a.max - s) + b.sum * expf(b.max - s)};
  }
  __device__ __forceinline__ float4 pack() const { return make_float4(max, sum, 0.f, 0.f); }
  static __device__ __forceinline__ SoftmaxAcc unpack(float4 t) { return {t.x, t.y}; }
};

// Welford's count, mean and sum of squared deviations; vectors and partial results combine with
// Chan's formula, which stays accurate for long rows whose mean is far from zero.
struct WelfordAcc {
  float count, mean, m2;
  static __device__ __forceinline__ WelfordAcc identity() { return {0.f, 0.f, 0.f}; }
  template <int kVec>
  __device__ __forceinline__ void push(const float (&v)[kVec]) {
    float vmean = 0.f;
#pragma unroll
    for (int k = 0; k < kVec; ++k) vmean += v[k];
    vmean *= 1.f / kVec;
    float vm2 = 0.f;
#pragma unroll
    for (int k = 0; k < kVec; ++k) vm2 += (v[k] - vmean) * (v[k] - vmean);
    *this = merge(*this, {static_cast<float>(kVec), vmean, vm2});
  }
  static __device__ __forceinline__ WelfordAcc merge(WelfordAcc a, WelfordAcc b) {
    if (b.count == 0.f) return a;
    if (a.count == 0.f) return b;
    const float count = a.count + b.count, delta = b.mean - a.mean, f = b.count / count;
    return {count, a.mean + delta * f, a.m2 + b.m2 + delta * delta * a.count * f};
  }
  __device__ __forceinline__ float4 pack() const { return make_float4(count, mean, m2, 0.f); }
  static __device__ __forceinline__ WelfordAcc unpack(float4 t) { return {t.x, t.y, t.z}; }
};

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
// Norm::stats to merge once per row: single-pass statistics only (the manifest enforces it).
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
template <int kThreads, int kVec, int kItems, int kCache, int kHint, class Norm, class Layout = ContiguousRows>
struct RowPart {
  static constexpr int kVector = kVec;
  static constexpr int kTile = kThreads * kVec * kItems;  // elements per tile of the row
  const float* __restrict__ x;  // the row's element 0
  float* __restrict__ y;
  int begin, end, lane;
  float* cache;  // kCacheShared: the chunk, indexed col - begin
  Layout layout;
  float regs[kCache == kCacheRegisters ? kItems : 1][kVec];

  template <bool kFirst, bool kLast>
  __host__ __device__ static constexpr int evict() {
    if (kCache != kCacheNone || kLast) return kHint >= kHintStream ? kEvictFirst : kEvictNormal;
    return kHint == kHintKeep ? kEvictLast : kEvictNormal;
  }

  // f(v, col) for each of this thread's vectors.
  template <bool kFirst, bool kLast, class F>
  __device__ __forceinline__ void visit(F&& f) {
    if constexpr (kCache == kCacheRegisters) {  // the manifest guarantees end - begin <= kTile
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
            if (kFirst || kCache == kCacheNone) {
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
            if (kFirst && kCache == kCacheShared) store_vec<kVec>(cache + (col - begin), v[i]);
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
      store_global<kVec, kHint >= kHintStream>(y + layout.offset(col), out);
    });
  }
};

// ---------------------------------------------------------------------------------------------
// Row statistics, for the generated Norm structs.

struct SoftmaxStats {
  float max, sum;  // the row's maximum and the sum of exp(x - max)
};

template <int kAlgo, class Part, class Reducer>
__device__ __forceinline__ SoftmaxStats softmax_stats(Part& part, Reducer& red) {
  if constexpr (kAlgo == kTwoPass) {
    MaxAcc m = MaxAcc::identity();
    part.template pass<true>([&](const auto& v, int) { m.push(v); });
    m = red.merge(m);
    SumAcc s = SumAcc::identity();
    part.template pass<false>([&](const auto& v, int) {
#pragma unroll
      for (int k = 0; k < Part::kVector; ++k) s.sum += expf(v[k] - m.max);
    });
    s = red.merge(s);
    return {m.max, s.sum};
  } else {
    SoftmaxAcc a = SoftmaxAcc::identity();
    part.template pass<true>([&](const auto& v, int) { a.push(v); });
    a = red.merge(a);
    return {a.max, a.sum};
  }
}

struct MeanVar {
  float mean, var;  // biased variance, as layer/group/instance norm use
};

template <int kAlgo, class Part, class Reducer>
__device__ __forceinline__ MeanVar mean_var(Part& part, Reducer& red, int n) {
  if constexpr (kAlgo == kTwoPass) {
    SumAcc s = SumAcc::identity();
    part.template pass<true>([&](const auto& v, int) { s.push(v); });
    const float mean = red.merge(s).sum / n;
    SumAcc q = SumAcc::identity();
    part.template pass<false>([&](const auto& v, int) {
#pragma unroll
      for (int k = 0; k < Part::kVector; ++k) q.sum += (v[k] - mean) * (v[k] - mean);
    });
    return {mean, red.merge(q).sum / n};
  } else {
    WelfordAcc a = WelfordAcc::identity();
    part.template pass<true>([&](const auto& v, int) { a.push(v); });
    a = red.merge(a);
    return {a.mean, a.m2 / n};
  }
}

// The sum of term(x) over the row.
template <class Part, class Reducer, class Term>
__device__ __forceinline__ float row_sum(Part& part, Reducer& red, Term term) {
  SumAcc s = SumAcc::identity();
  part.template pass<true>([&](const auto& v, int) {
#pragma unroll
    for (int k = 0; k < Part::kVector; ++k) s.sum += term(v[k]);
  });
  return red.merge(s).sum;
}

// ---------------------------------------------------------------------------------------------
// The row kernel's body. rows x n elements, row r at x + r * n. A CTA holds kRows row slots of
// kThreads threads each; with kCluster > 1 the kernel carries __cluster_dims__(kCluster, 1, 1)
// and CTA `rank` of a cluster takes chunk `rank` of each of the cluster's rows (the cluster's
// statistics merge through distributed shared memory). Clusters (or CTAs) stride over the row
// tiles, so any grid that is a multiple of kCluster is correct. Dynamic shared memory
// (kCacheShared): kRows * chunk floats, chunk = ceil(n / (kCluster * kVec)) * kVec.
//
// Norm (generated) provides: Params; Stats; prologue<kVec>(v) applied to loaded elements;
// stats<kAlgo>(params, part, reducer, n) -> Stats; apply<kVec>(params, stats, row, col, v, out).
// `layout` places a row's elements (ContiguousRows: row r at x + r * n).

extern __shared__ float4 normalize_dynamic_smem[];

template <int kThreads, int kRows, int kCluster, int kVec, int kItems, int kCache, int kHint, int kAlgo, class Norm,
          class Layout = ContiguousRows>
__device__ __forceinline__ void normalize_rows(const typename Norm::Params& p, const float* __restrict__ x,
                                               float* __restrict__ y, long long rows, int n,
                                               const Layout& layout = Layout{}) {
  static_assert(kThreads % 32 == 0 && kThreads * kRows <= 1024, "whole warps, at most 1024 threads");
  static_assert(kVec == 1 || kVec == 2 || kVec == 4, "float, float2 or float4 accesses");
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

template <int kThreads, int kSplit, int kVec, int kItems, int kHint, int kAlgo, class Norm, class Layout = ContiguousRows>
__device__ __forceinline__ void normalize_rows_split_stats(const typename Norm::Params& p, const float* __restrict__ x,
                                                           float4* __restrict__ partials, long long rows, int n,
                                                           const Layout& layout = Layout{}) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
  __shared__ float4 warp_slots[2 * (kThreads / 32)];
  const int lane = threadIdx.x;
  RowReducer<kThreads, 1, 1> cta{warp_slots, nullptr, 0, lane};
  for (long long t = blockIdx.x; t < rows * kSplit; t += gridDim.x) {
    int begin, end;
    split_chunk<kSplit, kVec>(t, n, begin, end);
    RowPart<kThreads, kVec, kItems, kCacheNone, kHint, Norm, Layout> part{x + layout.start(t / kSplit, n), nullptr,
                                                                          begin, end, lane, nullptr, layout};
    SplitStore<RowReducer<kThreads, 1, 1>&> red{cta, partials + t};
    Norm::template stats<kAlgo>(p, part, red, n);  // the merge stored the chunk's statistics
  }
}

template <int kThreads, int kSplit, int kVec, int kItems, int kHint, int kAlgo, class Norm, class Layout = ContiguousRows>
__device__ __forceinline__ void normalize_rows_split_apply(const typename Norm::Params& p, const float* __restrict__ x,
                                                           const float4* __restrict__ partials, float* __restrict__ y,
                                                           long long rows, int n, const Layout& layout = Layout{}) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
  const int lane = threadIdx.x;
  for (long long t = blockIdx.x; t < rows * kSplit; t += gridDim.x) {
    const long long row = t / kSplit;
    int begin, end;
    split_chunk<kSplit, kVec>(t, n, begin, end);
    const long long at = layout.start(row, n);
    RowPart<kThreads, kVec, kItems, kCacheNone, kHint, Norm, Layout> part{x + at, y + at, begin, end, lane, nullptr, layout};
    RowPart<kThreads, kVec, kItems, kCacheNone, kHint, Norm, Layout> none{x + at, y + at, begin, begin, lane, nullptr, layout};
    SplitLoad red{partials + row * kSplit, kSplit};
    const typename Norm::Stats s = Norm::template stats<kAlgo>(p, none, red, n);
    part.write([&](const float (&v)[kVec], int col, float (&out)[kVec]) { Norm::apply(p, s, row, col, v, out); });
  }
}

// ---------------------------------------------------------------------------------------------
// The column kernel's body: x viewed as [outer, reduce, inner], the statistic a sum over
// `reduce` for each (outer, inner) column. A CTA of kBlockX * kBlockY threads takes a tile of
// kBlockX * kVec adjacent columns of one outer index; thread (tx, ty) owns columns tx * kVec ..
// + kVec - 1 and the reduce indices ty, ty + kBlockY, ... (a warp reads 32 * kVec consecutive
// floats). The kBlockY partial sums of a column meet in shared memory. Dynamic shared memory
// (kCacheShared): reduce * kBlockX * kVec floats.
//
// Norm (generated) provides: Params; Stats; term(x) (what is summed); finish(sum, count) -> Stats;
// apply(params, stats, x) -> the output element.

template <int kBlockX, int kBlockY, int kVec, int kItems, int kCache, int kHint, class Norm>
__device__ __forceinline__ void normalize_columns(const typename Norm::Params& p, const float* __restrict__ x,
                                                  float* __restrict__ y, long long outer, int reduce, long long inner) {
  static_assert(kBlockX % 32 == 0 && kBlockX * kBlockY <= 1024, "whole warps along inner, at most 1024 threads");
  constexpr int kWidth = kBlockX * kVec;  // columns per tile
  constexpr int kFirstRead = kCache == kCacheNone ? (kHint == kHintKeep ? kEvictLast : kEvictNormal)
                                                  : (kHint >= kHintStream ? kEvictFirst : kEvictNormal);
  constexpr int kLastRead = kHint >= kHintStream ? kEvictFirst : kEvictNormal;
  __shared__ __align__(16) float partial[kBlockY > 1 ? 2 * kBlockY * kWidth : 1];  // [2][kBlockY][kWidth]
  float* cache = reinterpret_cast<float*>(normalize_dynamic_smem);                  // [reduce][kWidth]
  const int tx = threadIdx.x % kBlockX, ty = threadIdx.x / kBlockX;
  const long long col_tiles = (inner + kWidth - 1) / kWidth, tiles = outer * col_tiles;
  int half = 0;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {  // uniform over the CTA
    const long long c = (t % col_tiles) * kWidth + tx * kVec;
    const bool live = c < inner;  // inner % kVec == 0: a vector is wholly in or out
    const long long at = (t / col_tiles) * reduce * inner + c;  // element (o, 0, c); (o, r, c) is at + r * inner
    float regs[kCache == kCacheRegisters ? kItems : 1][kVec];
    float sum[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) sum[k] = 0.f;

    // Pass 1: the sums of term(x).
    if constexpr (kCache == kCacheRegisters) {  // the manifest guarantees reduce <= kBlockY * kItems
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
          for (int k = 0; k < kVec; ++k) sum[k] += Norm::term(regs[i][k]);
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
            if constexpr (kCache == kCacheShared) store_vec<kVec>(cache + r * kWidth + tx * kVec, v[i]);
#pragma unroll
            for (int k = 0; k < kVec; ++k) sum[k] += Norm::term(v[i][k]);
          }
        }
      }
    }

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
      store_global<kVec, kHint >= kHintStream>(y + at + r * inner, out);
    };
    if constexpr (kCache == kCacheRegisters) {
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
            if constexpr (kCache == kCacheShared) load_vec<kVec>(v[i], cache + r * kWidth + tx * kVec);
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

// ---------------------------------------------------------------------------------------------
// Batch norm of an [N, C] matrix: each column's mean and (biased) variance over the N rows, then
// every element rewritten. Welford statistics; the rows of a column are split over kSplit CTAs.
// CTA b takes the tile b / kSplit of kBlockX * kVec adjacent columns and the row chunk b % kSplit
// (ceil(rows / kSplit) rows); thread (tx, ty) owns columns tx * kVec .. + kVec - 1 of the tile and
// rows ty, ty + kBlockY, ... of the chunk, kItems of them per step (a warp reads 32 * kVec
// consecutive floats). The kBlockY statistics of a column merge through shared memory in order of
// ty, the kSplit chunks' in chunk order, so every CTA of a column gets the same bits. kPass:
//   kStatsPass  stores the chunk's statistics in partials[chunk][column] (a plan scratch buffer);
//   kApplyPass  merges a column's kSplit partials and rewrites the chunk (the second launch);
//   kFusedPass  kSplit == 1: both in one launch, the chunk read twice (the second time from L2).
//
// Norm (generated) provides: Params; Stats; prologue(x) (the fused ops before the norm);
// stats(params, mean, var, column) -> Stats; apply(params, stats, x) -> the output element.

enum ColumnPass { kStatsPass = 0, kApplyPass = 1, kFusedPass = 2 };

template <int kBlockX, int kBlockY, int kVec, int kItems, int kSplit, int kHint, int kPass, class Norm>
__device__ __forceinline__ void normalize_channel_columns(const typename Norm::Params& p, const float* __restrict__ x,
                                                          float4* __restrict__ partials, float* __restrict__ y,
                                                          int rows, long long cols) {
  static_assert(kBlockX % 32 == 0 && kBlockX * kBlockY <= 1024, "whole warps along the columns, at most 1024 threads");
  static_assert(kVec == 1 || kVec == 2 || kVec == 4, "float, float2 or float4 accesses");
  static_assert(kPass != kFusedPass || kSplit == 1, "one launch only when a CTA holds whole columns");
  constexpr int kWidth = kBlockX * kVec;  // columns per tile
  constexpr bool kStats = kPass != kApplyPass, kApply = kPass != kStatsPass;
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
                for (int k = 0; k < kVec; ++k) acc[k] = WelfordAcc::merge(acc[k], {1.f, v[i][k], 0.f});
          }
        },
        IntConstant<kEvictNormal>{});
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
    if constexpr (kPass == kStatsPass) {
      if (ty == 0 && live)
#pragma unroll
        for (int k = 0; k < kVec; ++k) partials[(blockIdx.x % kSplit) * cols + c + k] = acc[k].pack();
      return;
    }
  }
  if constexpr (kApply) {
    if (!live) return;  // no barrier follows
    if constexpr (kPass == kApplyPass) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc[k] = WelfordAcc::unpack(partials[c + k]);
        for (int j = 1; j < kSplit; ++j)
          acc[k] = WelfordAcc::merge(acc[k], WelfordAcc::unpack(partials[j * cols + c + k]));
      }
    }
    typename Norm::Stats s[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) s[k] = Norm::stats(p, acc[k].mean, acc[k].m2 / rows, c + k);
    visit(
        [&](const float (&v)[kItems][kVec], int r0) {
#pragma unroll
          for (int i = 0; i < kItems; ++i) {
            const int r = r0 + i * kBlockY;
            if (r < end) {
              float out[kVec];
#pragma unroll
              for (int k = 0; k < kVec; ++k) out[k] = Norm::apply(p, s[k], v[i][k]);
              store_global<kVec, kHint >= kHintStream>(y + static_cast<long long>(r) * cols + c, out);
            }
          }
        },
        IntConstant<kHint >= kHintStream ? kEvictFirst : kEvictNormal>{});
  }
}

}  // namespace kevo
