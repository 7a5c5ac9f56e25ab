// kevo template family "scan": prefix scans (cumsum, cumprod) along one dim, inclusive or
// exclusive, forward or reverse, with a fused elementwise prologue (Body::load) and epilogue
// (Body::store). Four layouts: a block per row (tiles with a running carry), a warp per row,
// a single pass over several blocks per row with decoupled look-back (Merrill & Garland 2016),
// and a thread per column for scans along a dim that is not the innermost.
#pragma once

#include "../common.cuh"

namespace kevo {

// The layouts (the manifest's kLayout), one function each below.
enum class ScanLayout { BlockPerRow = 0, WarpPerRow = 1, LookBack = 2, ThreadPerColumn = 3 };

// Inclusive scan over the 32 lanes of a warp, in lane order.
template <typename Op>
__device__ __forceinline__ float warp_inclusive_scan(float v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const float before = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v = Op::combine(before, v);
  }
  return v;
}

// Exclusive scan of v over the kGroup threads of a group (one warp, or a whole 1-D block), in
// thread order; every thread also gets the group's total. Block groups stage one total per warp
// in `warp_totals` (kGroup / 32 floats) behind one __syncthreads: callers alternate between two
// such arrays, so that a slow warp still reading one call's totals is never overwritten.
template <typename Op, int kGroup>
__device__ __forceinline__ float group_exclusive_scan(float v, float* warp_totals, float& total) {
  const int lane = threadIdx.x & 31;
  const float inclusive = warp_inclusive_scan<Op>(v);
  float exclusive = __shfl_up_sync(0xffffffffu, inclusive, 1);
  if (lane == 0) exclusive = Op::identity();
  if constexpr (kGroup == 32) {
    total = __shfl_sync(0xffffffffu, inclusive, 31);
    return exclusive;
  } else {
    constexpr int kWarps = kGroup / 32;
    const int warp = threadIdx.x >> 5;
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    // Every warp scans the warp totals itself: lane k holds the total of warps 0..k.
    float t = lane < kWarps ? warp_totals[lane] : Op::identity();
    t = warp_inclusive_scan<Op>(t);
    total = __shfl_sync(0xffffffffu, t, kWarps - 1);
    const float before = __shfl_sync(0xffffffffu, t, warp > 0 ? warp - 1 : 0);
    return warp > 0 ? Op::combine(before, exclusive) : exclusive;
  }
}

// A thread's chunk of a row: kItems vectors of kVec elements, logical positions [start, start +
// kItems * kVec). A reverse scan's logical position q is the row's element len - 1 - q, so a
// chunk is still one contiguous piece of memory, read from its end. Positions past the row read
// as the identity and are not stored. Vectors never straddle the row's end (len % kVec == 0).
template <typename Op, int kItems, int kVec, bool kReverse, typename Body>
__device__ __forceinline__ void load_chunk(const typename Body::Params& p, long long row_base, long long len,
                                           long long start, float (&v)[kItems * kVec]) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const long long q = start + (long long)k * kVec;
    float t[kVec];
    if (q < len) {
      Body::template load<kVec>(p, row_base + (kReverse ? len - q - kVec : q), t);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) t[e] = Op::identity();
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[k * kVec + e] = t[kReverse ? kVec - 1 - e : e];
  }
}

template <int kItems, int kVec, bool kReverse, typename Body>
__device__ __forceinline__ void store_chunk(const typename Body::Params& p, long long row_base, long long len,
                                            long long start, const float (&v)[kItems * kVec]) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const long long q = start + (long long)k * kVec;
    if (q >= len) break;
    float t[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) t[e] = v[k * kVec + (kReverse ? kVec - 1 - e : e)];
    Body::template store<kVec>(p, row_base + (kReverse ? len - q - kVec : q), t);
  }
}

// The thread's own aggregate of its chunk.
template <typename Op, int kN>
__device__ __forceinline__ float chunk_total(const float (&v)[kN]) {
  float a = Op::identity();
#pragma unroll
  for (int i = 0; i < kN; ++i) a = Op::combine(a, v[i]);
  return a;
}

// Replaces the chunk by its scan, starting from `prefix` (everything before the chunk).
template <typename Op, bool kExclusive, int kN>
__device__ __forceinline__ void scan_chunk(float (&v)[kN], float prefix) {
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const float x = v[i];
    const float next = Op::combine(prefix, x);
    v[i] = kExclusive ? prefix : next;
    prefix = next;
  }
}

// Layout BlockPerRow: block b scans row b in tiles of kThreads * kItems * kVec elements,
// carrying the total of the tiles before. The grid has exactly one block per row.
template <typename Op, int kThreads, int kItems, int kVec, bool kReverse, bool kExclusive, typename Body>
__device__ __forceinline__ void scan_rows_block(const typename Body::Params& p, long long len) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "threads per block: whole warps, at most 1024");
  static_assert(kItems * kVec <= 32, "elements held in registers per thread");
  constexpr int kChunk = kItems * kVec;
  constexpr long long kTile = (long long)kThreads * kChunk;
  __shared__ float warp_totals[2][kThreads / 32];
  const long long row_base = (long long)blockIdx.x * len;
  float carry = Op::identity();
  int parity = 0;
  for (long long tile = 0; tile < len; tile += kTile) {  // the same trip count in every thread
    const long long start = tile + (long long)threadIdx.x * kChunk;
    float v[kChunk];
    load_chunk<Op, kItems, kVec, kReverse, Body>(p, row_base, len, start, v);
    float total;
    const float before = group_exclusive_scan<Op, kThreads>(chunk_total<Op>(v), warp_totals[parity], total);
    scan_chunk<Op, kExclusive>(v, Op::combine(carry, before));
    store_chunk<kItems, kVec, kReverse, Body>(p, row_base, len, start, v);
    carry = Op::combine(carry, total);
    parity ^= 1;
  }
}

// Layout WarpPerRow: each warp of a block scans its own row, in tiles of 32 * kItems * kVec
// elements; no block-wide synchronisation, so warps past the last row just leave.
template <typename Op, int kThreads, int kItems, int kVec, bool kReverse, bool kExclusive, typename Body>
__device__ __forceinline__ void scan_rows_warp(const typename Body::Params& p, long long rows, long long len) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "threads per block: whole warps, at most 1024");
  static_assert(kItems * kVec <= 32, "elements held in registers per thread");
  constexpr int kChunk = kItems * kVec;
  constexpr long long kTile = 32LL * kChunk;
  const int lane = threadIdx.x & 31;
  const long long row = (long long)blockIdx.x * (kThreads / 32) + (threadIdx.x >> 5);
  if (row >= rows) return;
  const long long row_base = row * len;
  float carry = Op::identity();
  for (long long tile = 0; tile < len; tile += kTile) {
    const long long start = tile + (long long)lane * kChunk;
    float v[kChunk];
    load_chunk<Op, kItems, kVec, kReverse, Body>(p, row_base, len, start, v);
    float total;
    const float before = group_exclusive_scan<Op, 32>(chunk_total<Op>(v), nullptr, total);
    scan_chunk<Op, kExclusive>(v, Op::combine(carry, before));
    store_chunk<kItems, kVec, kReverse, Body>(p, row_base, len, start, v);
    carry = Op::combine(carry, total);
  }
}

// Decoupled look-back state: word 0 hands out tile tickets; word 1 + t is what tile t has
// published: its status in the high 32 bits, a float in the low ones. The words must be zero
// when the scan starts (scan_clear_state runs first, every launch).
enum TileStatus : unsigned { kTileEmpty = 0, kTileAggregate = 1, kTileInclusive = 2 };

__device__ __forceinline__ unsigned long long tile_word(unsigned status, float v) {
  return ((unsigned long long)status << 32) | __float_as_uint(v);
}

// Status and value travel in one 64-bit word, so relaxed GPU-scope accesses are enough: a reader
// never sees a status without its value.
__device__ __forceinline__ unsigned long long load_tile_word(const unsigned long long* p) {
  unsigned long long w;
  asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(w) : "l"(p) : "memory");
  return w;
}
__device__ __forceinline__ void store_tile_word(unsigned long long* p, unsigned long long w) {
  asm volatile("st.relaxed.gpu.u64 [%0], %1;" : : "l"(p), "l"(w) : "memory");
}

__device__ __forceinline__ void scan_clear_state(unsigned long long* state, long long words) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < words) state[i] = 0ull;
}

// Called by one whole warp: the total of tiles [first, t) (the tiles of the row before tile t),
// read from their published words, 32 at a time, back to the nearest inclusive prefix.
template <typename Op>
__device__ __forceinline__ float look_back(const unsigned long long* tiles, long long first, long long t) {
  const int lane = threadIdx.x & 31;
  float prefix = Op::identity();
  for (long long end = t;; end -= 32) {
    const long long j = end - 1 - lane;  // lane 0 reads the nearest tile
    unsigned long long w;
    do {
      w = j >= first ? load_tile_word(tiles + j) : tile_word(kTileInclusive, Op::identity());
    } while (__any_sync(0xffffffffu, (w >> 32) == kTileEmpty));
    const unsigned inclusive = __ballot_sync(0xffffffffu, (w >> 32) == kTileInclusive);
    const int stop = inclusive ? __ffs(inclusive) - 1 : 31;  // lanes past it are not needed
    const float v = lane <= stop ? __uint_as_float((unsigned)(w & 0xffffffffu)) : Op::identity();
    prefix = Op::combine(warp_reduce<Op>(v), prefix);  // these tiles come before the later ones
    if (inclusive) return prefix;
  }
}

// Layout LookBack: one tile of kThreads * kItems * kVec elements per block, tiles_per_row tiles
// per row, in a single pass. Blocks take tickets in launch order, so a tile waits only on tiles
// whose blocks are already running: no deadlock whatever order the hardware starts blocks in.
template <typename Op, int kThreads, int kItems, int kVec, bool kReverse, bool kExclusive, typename Body>
__device__ __forceinline__ void scan_rows_lookback(const typename Body::Params& p, long long len,
                                                   long long tiles_per_row, unsigned long long* state) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "threads per block: whole warps, at most 1024");
  static_assert(kItems * kVec <= 32, "elements held in registers per thread");
  constexpr int kChunk = kItems * kVec;
  constexpr long long kTile = (long long)kThreads * kChunk;
  __shared__ float warp_totals[kThreads / 32];
  __shared__ long long ticket;
  __shared__ float tile_prefix;
  if (threadIdx.x == 0) ticket = (long long)atomicAdd(state, 1ull);
  __syncthreads();
  const long long t = ticket;
  const long long row = t / tiles_per_row, tile = t % tiles_per_row;
  const long long row_base = row * len;
  const long long start = tile * kTile + (long long)threadIdx.x * kChunk;
  float v[kChunk];
  load_chunk<Op, kItems, kVec, kReverse, Body>(p, row_base, len, start, v);
  float total;
  const float before = group_exclusive_scan<Op, kThreads>(chunk_total<Op>(v), warp_totals, total);
  unsigned long long* tiles = state + 1;
  if (threadIdx.x < 32) {
    float prefix = Op::identity();
    if (tile > 0) {
      if (threadIdx.x == 0) store_tile_word(tiles + t, tile_word(kTileAggregate, total));
      prefix = look_back<Op>(tiles, t - tile, t);
    }
    if (threadIdx.x == 0) {
      store_tile_word(tiles + t, tile_word(kTileInclusive, Op::combine(prefix, total)));
      tile_prefix = prefix;
    }
  }
  __syncthreads();
  scan_chunk<Op, kExclusive>(v, Op::combine(tile_prefix, before));
  store_chunk<kItems, kVec, kReverse, Body>(p, row_base, len, start, v);
}

// Layout ThreadPerColumn: a scan along a dim with `inner` elements after it; each thread scans
// kVec adjacent columns sequentially (consecutive threads take consecutive columns, so every
// step of a warp is coalesced), kItems steps loaded ahead at a time.
template <typename Op, int kThreads, int kItems, int kVec, bool kReverse, bool kExclusive, typename Body>
__device__ __forceinline__ void scan_columns(const typename Body::Params& p, long long outer, long long len,
                                             long long inner) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "threads per block: whole warps, at most 1024");
  static_assert(kItems * kVec <= 32, "elements held in registers per thread");
  const long long vectors = inner / kVec;
  const long long c = (long long)blockIdx.x * kThreads + threadIdx.x;
  if (c >= outer * vectors) return;
  const long long base = (c / vectors) * len * inner + (c % vectors) * kVec;
  float running[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) running[e] = Op::identity();
  for (long long j0 = 0; j0 < len; j0 += kItems) {
    float v[kItems][kVec];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const long long j = j0 + k;
      if (j < len) Body::template load<kVec>(p, base + (kReverse ? len - 1 - j : j) * inner, v[k]);
    }
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const long long j = j0 + k;
      if (j >= len) break;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float next = Op::combine(running[e], v[k][e]);
        v[k][e] = kExclusive ? running[e] : next;
        running[e] = next;
      }
      Body::template store<kVec>(p, base + (kReverse ? len - 1 - j : j) * inner, v[k]);
    }
  }
}

}  // namespace kevo
