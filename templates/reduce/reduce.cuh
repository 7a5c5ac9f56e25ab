// kevo template family "reduce": a reduction over one axis (or several adjacent axes) of a tensor
// viewed as [outer, R, inner], with a fused prologue (the value reduced, generated from the graph)
// and epilogue (what is stored, generated). Two layouts: rows (inner == 1) and columns (inner > 1).
#pragma once

#include "../common.cuh"

namespace kevo {

// Reduction operators. State: what a thread accumulates; add(s, x, r): one element x at index r
// of the reduced axis (a thread sees its elements in increasing r); combine: two states (any
// order: index ties are broken by the indices themselves); shfl_xor: a state across lanes.
template <typename Base>
struct FloatOp {
  using State = float;
  static __device__ __forceinline__ State identity() { return Base::identity(); }
  static __device__ __forceinline__ void add(State& s, float x, int) { s = Base::combine(s, x); }
  static __device__ __forceinline__ State combine(State a, State b) { return Base::combine(a, b); }
  static __device__ __forceinline__ State shfl_xor(State s, int offset, int width) {
    return __shfl_xor_sync(0xffffffffu, s, offset, width);
  }
};
using SumOp = FloatOp<Sum>;
using ProdOp = FloatOp<Prod>;
using MaxOp = FloatOp<Max>;  // NaN propagates, as torch.amax
using MinOp = FloatOp<Min>;

// argmax / argmin: the first index of the extremum; NaN counts as the extremum (torch).
struct ArgState {
  float v;
  int i;
};
template <bool kMax>
struct ArgOp {
  using State = ArgState;
  static __device__ __forceinline__ State identity() {
    return {kMax ? -__int_as_float(0x7f800000) : __int_as_float(0x7f800000), 0x7fffffff};
  }
  // Whether b replaces a.
  static __device__ __forceinline__ bool wins(const State& a, const State& b) {
    const bool a_nan = a.v != a.v, b_nan = b.v != b.v;
    if (a_nan || b_nan) return b_nan && (!a_nan || b.i < a.i);
    const bool better = kMax ? b.v > a.v : b.v < a.v;
    return better || (b.v == a.v && b.i < a.i);
  }
  static __device__ __forceinline__ void add(State& s, float x, int r) {
    const State e{x, r};
    if (wins(s, e)) s = e;
  }
  static __device__ __forceinline__ State combine(State a, State b) { return wins(a, b) ? b : a; }
  static __device__ __forceinline__ State shfl_xor(State s, int offset, int width) {
    return {__shfl_xor_sync(0xffffffffu, s.v, offset, width), __shfl_xor_sync(0xffffffffu, s.i, offset, width)};
  }
};
using ArgMaxOp = ArgOp<true>;
using ArgMinOp = ArgOp<false>;

// logsumexp in one pass: the running maximum m and s = sum exp(x - m). m never becomes NaN (a
// NaN element makes s NaN instead); the result is logf(s) + m, which is -inf when every element
// is -inf and inf when one is inf, as torch's.
struct LseState {
  float m, s;
};
struct LogSumExpOp {
  using State = LseState;
  static __device__ __forceinline__ State identity() { return {-__int_as_float(0x7f800000), 0.f}; }
  static __device__ __forceinline__ void add(State& st, float x, int) {
    if (x > st.m) {
      st.s = st.s * expf(st.m - x) + 1.f;
      st.m = x;
    } else {
      st.s += x == st.m ? 1.f : expf(x - st.m);
    }
  }
  static __device__ __forceinline__ State combine(State a, State b) {
    const float m = fmaxf(a.m, b.m);
    const float sa = a.m == m ? a.s : a.s * expf(a.m - m);
    const float sb = b.m == m ? b.s : b.s * expf(b.m - m);
    return {m, sa + sb};
  }
  static __device__ __forceinline__ State shfl_xor(State s, int offset, int width) {
    return {__shfl_xor_sync(0xffffffffu, s.m, offset, width), __shfl_xor_sync(0xffffffffu, s.s, offset, width)};
  }
};

// Combines the states of a group of kThreads threads: a part of a warp (every lane gets the
// result) or, for kThreads > 32, the whole block (thread 0 gets it). Called in uniform control
// flow by every thread of the block.
template <typename Op, int kThreads>
__device__ __forceinline__ typename Op::State group_combine(typename Op::State s, typename Op::State* scratch) {
  if constexpr (kThreads <= 32) {
#pragma unroll
    for (int offset = kThreads / 2; offset > 0; offset >>= 1) s = Op::combine(s, Op::shfl_xor(s, offset, kThreads));
    return s;
  } else {
    constexpr int kWarps = kThreads / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) s = Op::combine(s, Op::shfl_xor(s, offset, 32));
    __syncthreads();  // scratch may still be read by the previous row's combine
    if (lane == 0) scratch[warp] = s;
    __syncthreads();
    if (warp == 0) {
      s = lane < kWarps ? scratch[lane] : Op::identity();
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) s = Op::combine(s, Op::shfl_xor(s, offset, 32));
    }
    return s;
  }
}

// The problem P (generated) supplies:
//   P::Op                                   the reduction operator;
//   P::load<kVec, kCache>(p, i, v)          the prologue: the values reduced at flat indices
//                                           [i, i + kVec) of the reduced input (never crossing
//                                           the end of a row of the contiguous axis), loaded
//                                           with load_hinted<kVec, kCache>;
//   P::store(p, o, s)                       the epilogue: finishes state s and stores output o.

// Rows layout (inner == 1): each row of R contiguous elements is reduced by a group of kThreads
// threads (a warp part, a warp or the whole block); a block holds kRows groups. Group g of block b
// takes row b * kRows + g (one pass) and then every gridDim.x * kRows-th row (grid-stride).
// Each thread loads kItems vectors of kVec elements per step, kThreads * kVec apart.
template <int kThreads, int kRows, int kVec, int kItems, LoadHint kCache, GridShape kShape, typename P>
__device__ __forceinline__ void reduce_rows(const typename P::Params& p, long long rows, int R) {
  static_assert(kThreads <= 32 || kRows == 1, "a row reduced by more than a warp takes the whole block");
  static_assert((kThreads * kRows) % 32 == 0, "whole warps: the shuffles name every lane");
  static_assert(kThreads * kRows <= 1024, "threads per block");
  using Op = typename P::Op;
  using State = typename Op::State;
  __shared__ State scratch[32];
  constexpr int kStep = kThreads * kVec * kItems;
  const int lane = threadIdx.x % kThreads, group = threadIdx.x / kThreads;
  // base is the same for the whole block, so the loop (and the __syncthreads in group_combine)
  // is uniform; a group past the last row still takes part in the combine.
  for (long long base = (long long)blockIdx.x * kRows; base < rows; base += (long long)gridDim.x * kRows) {
    const long long row = base + group;
    State s = Op::identity();
    if (row < rows) {
      const long long at = row * R;
      for (int j0 = lane * kVec; j0 < R; j0 += kStep) {
        float v[kItems][kVec];
#pragma unroll
        for (int it = 0; it < kItems; ++it) {
          const int j = j0 + it * kThreads * kVec;
          if (j < R) P::template load<kVec, kCache>(p, at + j, v[it]);
        }
#pragma unroll
        for (int it = 0; it < kItems; ++it) {
          const int j = j0 + it * kThreads * kVec;
          if (j < R) {
#pragma unroll
            for (int k = 0; k < kVec; ++k) Op::add(s, v[it][k], j + k);
          }
        }
      }
    }
    s = group_combine<Op, kThreads>(s, scratch);
    if (lane == 0 && row < rows) P::store(p, row, s);
    if (kShape == GridShape::OnePass) break;
  }
}

// Columns layout (inner > 1): block b takes slice o = b / tiles of the outer axis and a tile of
// kTx * kCols * kVec adjacent columns of the inner axis (tile b % tiles). Thread (tx, ty) reads
// columns (c * kTx + tx) * kVec .. + kVec of the tile (a warp reads adjacent addresses) at rows
// r = ty, ty + kSplit, ...: the kSplit threads of a column split R, kItems rows in flight each,
// and their states are combined in shared memory in the order of ty.
template <int kTx, int kSplit, int kCols, int kVec, int kItems, LoadHint kCache, typename P>
__device__ __forceinline__ void reduce_columns(const typename P::Params& p, int R, long long inner) {
  using Op = typename P::Op;
  using State = typename Op::State;
  constexpr int kTile = kTx * kCols * kVec;
  static_assert(kTx * kSplit <= 1024, "threads per block");
  static_assert((kTx * kSplit) % 32 == 0, "blocks of whole warps");
  static_assert(kSplit == 1 || kSplit * kTile * sizeof(State) <= 49152, "static shared memory of the split combine");
  const long long tiles = (inner + kTile - 1) / kTile;
  const long long o = blockIdx.x / tiles;
  const long long c0 = (blockIdx.x - o * tiles) * kTile;
  const int tx = threadIdx.x % kTx, ty = threadIdx.x / kTx;
  const long long slice = o * R;

  State s[kCols][kVec];
#pragma unroll
  for (int c = 0; c < kCols; ++c)
#pragma unroll
    for (int k = 0; k < kVec; ++k) s[c][k] = Op::identity();

  for (int r0 = ty; r0 < R; r0 += kSplit * kItems) {
    float v[kItems][kCols][kVec];
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int r = r0 + it * kSplit;
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const long long col = c0 + (c * kTx + tx) * kVec;
        if (r < R && col < inner) P::template load<kVec, kCache>(p, (slice + r) * inner + col, v[it][c]);
      }
    }
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int r = r0 + it * kSplit;
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const long long col = c0 + (c * kTx + tx) * kVec;
        if (r < R && col < inner) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) Op::add(s[c][k], v[it][c][k], r);
        }
      }
    }
  }

  if constexpr (kSplit == 1) {
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const long long col = c0 + (c * kTx + tx) * kVec;
      if (col < inner) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) P::store(p, o * inner + col + k, s[c][k]);
      }
    }
  } else {
    // part[ty][t]: thread ty's state of tile column t; then each column is combined over ty.
    __shared__ State part[kSplit][kTile];
#pragma unroll
    for (int c = 0; c < kCols; ++c)
#pragma unroll
      for (int k = 0; k < kVec; ++k) part[ty][(c * kTx + tx) * kVec + k] = s[c][k];
    __syncthreads();
    for (int t = threadIdx.x; t < kTile; t += kTx * kSplit) {
      State a = part[0][t];
#pragma unroll
      for (int y = 1; y < kSplit; ++y) a = Op::combine(a, part[y][t]);
      if (c0 + t < inner) P::store(p, o * inner + c0 + t, a);
    }
  }
}

}  // namespace kevo
