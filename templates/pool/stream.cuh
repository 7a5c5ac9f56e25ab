// kevo template family "pool", streaming kernel: pooling built for memory throughput. A warp owns
// a strip of 32 * kCols vectors of kVec columns of one plane (lane l: the vectors l, l + 32, ...,
// so every load of the warp is 32 consecutive vectors) and walks down kRows output rows. The
// window's columns come from the lane's own vector and the neighbouring lanes' by shuffles; its
// rows from a ring of the last input rows' horizontal results kept in registers, so each input
// element is loaded once, plus a halo: the window's columns left and right of the strip, and the
// (kH - 1) * dH input rows shared with the next warp down. kAhead steps' input rows are in
// flight while a step computes (the walk's loop unrolled so that its rotations are pure
// register renaming, or kept rolled for fewer registers). With kVec > 1 a lane's outputs are
// kVec adjacent columns: they are stored directly (kStage Direct) or through the warp's slice of
// shared memory, so that each store instruction writes 32 consecutive floats (kStage Staged).
// The window and the average's divisor are pool.cuh's (Window, pool_span, pool_divisor, pool_tile).
#pragma once

#include "../common.cuh"
#include "pool.cuh"

namespace kevo {

// How a lane's kVec adjacent outputs reach global memory (the manifest's kStage): stored by the
// lane itself, or staged through the warp's slice of shared memory and stored 32 floats at a time.
enum class Stores { Direct = 0, Staged = 1 };
// The walk down the rows (the manifest's kRolled): unrolled until the ring's rotation is register
// renaming, or one step per iteration with the ring rotating by moves (fewer registers).
enum class Walk { Unrolled = 0, Rolled = 1 };

// Max in one instruction where the target has it (max.NaN, sm_80+: NaN propagates as in torch).
struct StreamMax {
  static __device__ __forceinline__ float identity() { return -__int_as_float(0x7f800000); }
  static __device__ __forceinline__ float combine(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return Max::combine(a, b);
#endif
  }
};
template <bool kAverage>
struct StreamOp {
  using type = StreamMax;
};
template <>
struct StreamOp<true> {
  using type = Sum;
};

// The columns of a window around a lane's kVec outputs (stride 1 along W): output column c
// reads input columns c - kLeft ... c + kRight (those the dilation picks), so the lane's kVec
// outputs read kReach columns starting kLeft left of its vector, of which kHaloL vectors to the
// left and kHaloR to the right belong to other lanes.
template <typename Window, int kVec>
struct StreamCols {
  static constexpr int kLeft = Window::kPadW;
  static constexpr int kRight = (Window::kW - 1) * Window::kDilationW - Window::kPadW;
  static constexpr int kReach = kLeft + kVec + kRight;
  static constexpr int kHaloL = (kLeft + kVec - 1) / kVec, kHaloR = (kRight + kVec - 1) / kVec;
  // Whether some output of the vector reads the column pos (relative to the vector's first).
  __host__ __device__ static constexpr bool used(int pos) {
    for (int e = 0; e < kVec; ++e)
      for (int k = 0; k < Window::kW; ++k)
        if (e + k * Window::kDilationW - Window::kPadW == pos) return true;
    return false;
  }
};

// One input row as a lane holds it: its kCols vectors of the strip (32 apart), and a halo vector
// the window needs beyond the strip: lanes [0, kHaloR) hold the vector 32 * kCols to the right of
// their first, lanes [32 - kHaloL, 32) the vector 32 to the left of it (one load for both sides;
// kHaloL + kHaloR <= 32 keeps them apart).
template <int kCols, int kVec>
struct StreamRow {
  float main[kCols][kVec];
  float halo[kVec];
};

// Component c of the row's chunk m as the lane holds it (-1 and kCols: the halo of that side).
template <int kCols, int kVec>
__device__ __forceinline__ float stream_chunk(const StreamRow<kCols, kVec>& r, int m, int c) {
  return m < 0 || m >= kCols ? r.halo[c] : r.main[m][c];
}

// Compile-time shape of the vertical walk. A step computes one output row; the ring holds the
// horizontal results of the kSpan input rows of its window; the next step keeps the last kCarry
// of them and loads kNew rows (stride >= span: none kept, rows between windows never read).
template <typename Window>
struct StreamSteps {
  static constexpr int kSpan = pool_span(1, Window::kH, Window::kStrideH, Window::kDilationH);
  static constexpr int kNew = Window::kStrideH < kSpan ? Window::kStrideH : kSpan;
  static constexpr int kCarry = kSpan - kNew;
  // Whether the row entering the ring at position q is in some window (dilation leaves gaps): it
  // sits at q, q - kNew, q - 2 kNew, ... in the following steps, and a step reads multiples of dH.
  __host__ __device__ static constexpr bool used(int q) {
    for (; q >= 0; q -= kNew)
      if (q % Window::kDilationH == 0) return true;
    return false;
  }
  // Steps unrolled per loop iteration: enough that the ring's and the prefetch queue's rotations
  // come back to where they started (pure register renaming), unless that makes the body long.
  __host__ __device__ static constexpr int gcd(int a, int b) { return b == 0 ? a : gcd(b, a % b); }
  __host__ __device__ static constexpr int unroll(int ahead, int rows) {
    const int period = kCarry > 0 ? kSpan / gcd(kSpan, kNew) : 1;
    const int u = ahead / gcd(ahead, period) * period;
    return u > rows ? rows : u > 16 ? ahead : u;
  }
};

template <typename Op, int kCols, int kVec>
__device__ __forceinline__ void stream_clear(StreamRow<kCols, kVec>& r) {
#pragma unroll
  for (int c = 0; c < kVec; ++c) {
#pragma unroll
    for (int m = 0; m < kCols; ++m) r.main[m][c] = Op::identity();
    r.halo[c] = Op::identity();
  }
}

// The vector at element i of the pooling's input (aligned: W and the column are multiples of
// kVec), or the identity where the vector lies outside the row or the row is not read.
template <typename Op, int kVec, typename Body>
__device__ __forceinline__ void stream_vector(float (&v)[kVec], const typename Body::Params& p, long long i, bool in) {
  if (in) {
    Body::template load_vec<kVec>(p, i, v);
  } else {
#pragma unroll
    for (int c = 0; c < kVec; ++c) v[c] = Op::identity();
  }
}

// Loads input row ih of the lane's strip into r; rows outside the input (padding), columns
// outside it and rows not wanted read as the identity. col is the lane's first column.
template <typename Window, typename Op, int kCols, int kVec, typename Body>
__device__ __forceinline__ void stream_load(StreamRow<kCols, kVec>& r, const typename Body::Params& p,
                                            long long in_plane, int ih, bool wanted, int H, int W, int col, int lane) {
  using C = StreamCols<Window, kVec>;
  const bool in_row = wanted && (unsigned)ih < (unsigned)H;
  const long long row = in_plane + (long long)ih * W;
#pragma unroll
  for (int m = 0; m < kCols; ++m) {
    const int c = col + 32 * kVec * m;
    stream_vector<Op, kVec, Body>(r.main[m], p, row + c, in_row && c < W);
  }
  if constexpr (C::kHaloL + C::kHaloR > 0) {
    const bool right = lane < C::kHaloR, left = lane >= 32 - C::kHaloL;
    const int c = right ? col + 32 * kVec * kCols : col - 32 * kVec;
    stream_vector<Op, kVec, Body>(r.halo, p, row + c, in_row && (right || left) && c >= 0 && c < W);
  } else {
#pragma unroll
    for (int c = 0; c < kVec; ++c) r.halo[c] = Op::identity();
  }
}

// The horizontal window of every output column of the lane in row r: out[m][e] combines the
// columns col + 32 kVec m + e - kPadW + kw * kDilationW. Column pos of the lane's reach (relative
// to its vector) is component pos mod kVec of lane (lane + d) mod 32's vector, d = pos div kVec,
// in chunk m, or in the next (d > 0) or previous (d < 0) chunk where that wraps: each lane sends
// the component its receiver needs, so a column is one shuffle, and every column is fetched once
// for all kVec outputs.
template <typename Window, typename Op, int kCols, int kVec>
__device__ __forceinline__ void stream_window(const StreamRow<kCols, kVec>& r, float (&out)[kCols][kVec], int lane) {
  using C = StreamCols<Window, kVec>;
#pragma unroll
  for (int m = 0; m < kCols; ++m) {
    float reach[C::kReach];
#pragma unroll
    for (int i = 0; i < C::kReach; ++i) {
      const int pos = i - C::kLeft;
      if (!C::used(pos)) continue;
      if (pos >= 0 && pos < kVec) {
        reach[i] = r.main[m][pos];
        continue;
      }
      const int d = pos >= 0 ? pos / kVec : -((kVec - 1 - pos) / kVec);
      const int c = pos - d * kVec;
      const bool same = d > 0 ? lane >= d : lane < 32 + d;
      const float send = same ? r.main[m][c] : stream_chunk(r, d > 0 ? m + 1 : m - 1, c);
      reach[i] = __shfl_sync(0xffffffffu, send, (lane + d) & 31);
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      out[m][e] = reach[e];
#pragma unroll
      for (int kw = 1; kw < Window::kW; ++kw) out[m][e] = Op::combine(out[m][e], reach[e + kw * Window::kDilationW]);
    }
  }
}

// Block (kBlockW, kBlockH) = kBlockW / 32 warps side by side along W (neighbouring strips) times
// kBlockH along H (consecutive groups of kRows output rows); the 1-D grid enumerates
// planes x groups_h x groups_w, W fastest, so the warps sharing a halo run together.
template <typename Window, int kBlockW, int kBlockH, int kCols, int kRows, int kAhead, int kVec, Stores kStage,
          Walk kRolled, typename Body>
__device__ __forceinline__ void pool2d_stream(const typename Body::Params& p, int H, int W, int OH, int OW,
                                              int groups_h, int groups_w) {
  static_assert(kBlockW % 32 == 0, "whole warps along W");
  static_assert(kBlockW * kBlockH <= 1024, "threads per block");
  static_assert(Window::kStrideW == 1, "lanes take the window's columns from their neighbours: stride 1 along W only");
  static_assert((Window::kW - 1) * Window::kDilationW <= 32,
                "the window's columns beyond a strip, left and right together, are one halo column per lane");
  static_assert(Window::kPadW <= (Window::kW - 1) * Window::kDilationW,
                "padding within the window (torch: pw <= kw / 2)");
  static_assert(kAhead <= kRows, "loads ahead of the walk's end are wasted");
  static_assert(kStage == Stores::Direct || kVec > 1, "staged stores are for vectors");
  static_assert(kStage == Stores::Direct || kBlockW * kBlockH * kCols * kVec * 4 <= 232448,
                "staged stores: a strip's row of outputs per warp");
  using Op = typename StreamOp<Window::kAverage>::type;
  using S = StreamSteps<Window>;
  using C = StreamCols<Window, kVec>;
  static_assert(C::kLeft >= 0 && C::kRight >= 0 && C::kHaloL + C::kHaloR <= 32, "halos of one vector per lane");
  // Rolled: one step per iteration, the ring and the queue rotating by register moves (fewer
  // registers); otherwise enough steps that the rotations are renaming.
  constexpr int kUnroll = kRolled == Walk::Rolled ? 1 : S::unroll(kAhead, kRows);
  constexpr int kStrip = 32 * kCols * kVec;  // columns of a warp's strip

  const int lane = threadIdx.x & 31;
  const int gw = (int)(blockIdx.x % (unsigned)groups_w), gh = (int)(blockIdx.x / (unsigned)groups_w % (unsigned)groups_h);
  const long long plane = blockIdx.x / (unsigned)groups_w / (unsigned)groups_h;
  const int strip0 = (gw * (kBlockW / 32) + (int)(threadIdx.x / 32)) * kStrip;  // the strip's first column
  const int col = strip0 + kVec * lane;                                          // the lane's first column
  const int oh0 = (gh * kBlockH + (int)threadIdx.y) * kRows;
  // Whole warps leave here or never: every shuffle below has all 32 lanes.
  if (strip0 >= OW || oh0 >= OH) return;
  const int steps = min(kRows, OH - oh0);
  const long long in_plane = plane * H * W, out_plane = plane * OH * OW;
  const int ih0 = oh0 * Window::kStrideH - Window::kPadH;  // the first input row of step 0's window

  // Step s's window covers input rows ih0 + s * kStrideH + [0, kSpan): the first kCarry of step
  // 0's are loaded up front, then each step's kNew new rows kAhead steps before the step.
  // (Everything starts as the identity: rows no window reads are never loaded, only copied.)
  float ring[S::kSpan][kCols][kVec];
#pragma unroll
  for (int q = 0; q < S::kSpan; ++q)
#pragma unroll
    for (int m = 0; m < kCols; ++m)
#pragma unroll
      for (int e = 0; e < kVec; ++e) ring[q][m][e] = Op::identity();
  StreamRow<kCols, kVec> ahead[kAhead][S::kNew];
#pragma unroll
  for (int a = 0; a < kAhead; ++a)
#pragma unroll
    for (int t = 0; t < S::kNew; ++t) stream_clear<Op>(ahead[a][t]);
  {
    StreamRow<kCols, kVec> first[S::kCarry > 0 ? S::kCarry : 1];
#pragma unroll
    for (int q = 0; q < S::kCarry; ++q)
      if (S::used(q)) stream_load<Window, Op, kCols, kVec, Body>(first[q], p, in_plane, ih0 + q, true, H, W, col, lane);
#pragma unroll
    for (int a = 0; a < kAhead; ++a)
#pragma unroll
      for (int t = 0; t < S::kNew; ++t)
        if (S::used(S::kCarry + t))
          stream_load<Window, Op, kCols, kVec, Body>(ahead[a][t], p, in_plane,
                                                     ih0 + a * Window::kStrideH + S::kCarry + t, a < steps, H, W, col,
                                                     lane);
#pragma unroll
    for (int q = 0; q < S::kCarry; ++q)
      if (S::used(q)) stream_window<Window, Op, kCols, kVec>(first[q], ring[q], lane);
  }

#pragma unroll kUnroll
  for (int s = 0; s < kRows; ++s) {
    if (s == steps) break;  // the same for the whole warp
    StreamRow<kCols, kVec> rows[S::kNew];
#pragma unroll
    for (int t = 0; t < S::kNew; ++t) rows[t] = ahead[0][t];
#pragma unroll
    for (int a = 0; a + 1 < kAhead; ++a)
#pragma unroll
      for (int t = 0; t < S::kNew; ++t) ahead[a][t] = ahead[a + 1][t];
    // Step s + kAhead's rows go in flight before this step's arithmetic.
#pragma unroll
    for (int t = 0; t < S::kNew; ++t)
      if (S::used(S::kCarry + t))
        stream_load<Window, Op, kCols, kVec, Body>(ahead[kAhead - 1][t], p, in_plane,
                                                   ih0 + (s + kAhead) * Window::kStrideH + S::kCarry + t,
                                                   s + kAhead < steps, H, W, col, lane);
#pragma unroll
    for (int t = 0; t < S::kNew; ++t)
      if (S::used(S::kCarry + t)) stream_window<Window, Op, kCols, kVec>(rows[t], ring[S::kCarry + t], lane);

    // The vertical window: rows 0, dH, ..., (kH - 1) dH of the ring.
    const int oh = oh0 + s;
    const long long out_row = out_plane + (long long)oh * OW;
    float result[kCols][kVec];
#pragma unroll
    for (int m = 0; m < kCols; ++m)
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        float v = ring[0][m][e];
#pragma unroll
        for (int kh = 1; kh < Window::kH; ++kh) v = Op::combine(v, ring[kh * Window::kDilationH][m][e]);
        if constexpr (Window::kAverage)
          v /= pool_divisor<Window>(oh * Window::kStrideH - Window::kPadH, col + 32 * kVec * m + e - Window::kPadW, H,
                                    W);
        result[m][e] = v;
      }
    if constexpr (kStage == Stores::Staged) {
      // Through the warp's slice of shared memory: written as the lanes' vectors, read back as 32
      // consecutive floats per store instruction.
      float* stage = pool_tile + (threadIdx.y * (kBlockW / 32) + threadIdx.x / 32) * kStrip;
#pragma unroll
      for (int m = 0; m < kCols; ++m) store_vec<kVec>(stage + (32 * m + lane) * kVec, result[m]);
      __syncwarp();
#pragma unroll
      for (int j = 0; j < kCols * kVec; ++j) {
        const int ow = strip0 + 32 * j + lane;
        if (ow < OW) Body::store(p, out_row + ow, stage[32 * j + lane]);
      }
      __syncwarp();
    } else {
#pragma unroll
      for (int m = 0; m < kCols; ++m)
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const int ow = col + 32 * kVec * m + e;
          if (ow < OW) Body::store(p, out_row + ow, result[m][e]);
        }
    }
#pragma unroll
    for (int q = 0; q < S::kCarry; ++q)
#pragma unroll
      for (int m = 0; m < kCols; ++m)
#pragma unroll
        for (int e = 0; e < kVec; ++e) ring[q][m][e] = ring[q + S::kNew][m][e];
  }
}

}  // namespace kevo
