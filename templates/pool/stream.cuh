// kevo template family "pool", streaming kernel: pooling built for memory throughput. A warp owns
// a strip of 32 * kCols columns of one plane (lane l: columns l, l + 32, ..., every access of the
// warp 32 consecutive floats) and walks down kRows output rows. The window's columns come from
// the neighbouring lanes by shuffles; its rows from a ring of the last input rows' horizontal
// results kept in registers, so each input element is loaded once, plus a halo: the window's
// columns left and right of the strip, and the (kH - 1) * dH input rows shared with the next
// warp down. kAhead steps' input rows are in flight while a step computes. Pasted after
// pool/pool.cuh (Window, PoolOp, pool_divisor).
#pragma once

namespace kevo {

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

// One input row as a lane holds it: its kCols columns of the strip (32 apart), and a halo column
// the window needs beyond the strip: lanes [0, kRight) hold the column 32 * kCols to the right of
// their first, lanes [32 - kLeft, 32) the column 32 to the left of it (one load for both sides;
// kLeft + kRight <= 32 keeps them apart).
template <int kCols>
struct StreamRow {
  float main[kCols];
  float halo;
};

// The row's chunk m as the lane holds it (-1 and kCols: the halo of that side).
template <int kCols>
__device__ __forceinline__ float stream_chunk(const StreamRow<kCols>& r, int m) {
  return m < 0 || m >= kCols ? r.halo : r.main[m];
}

// Compile-time shape of the vertical walk. A step computes one output row; the ring holds the
// horizontal results of the kSpan input rows of its window; the next step keeps the last kCarry
// of them and loads kNew rows (stride >= span: none kept, rows between windows never read).
template <typename Window>
struct StreamSteps {
  static constexpr int kSpan = pool_span(1, Window::kH, Window::kStrideH, Window::kDilationH);
  static constexpr int kNew = Window::kStrideH < kSpan ? Window::kStrideH : kSpan;
  static constexpr int kCarry = kSpan - kNew;
  // Columns the window reaches left and right of an output's own column (stride 1 along W).
  static constexpr int kLeft = Window::kPadW;
  static constexpr int kRight = (Window::kW - 1) * Window::kDilationW - Window::kPadW;
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

template <typename Op, int kCols>
__device__ __forceinline__ void stream_clear(StreamRow<kCols>& r) {
#pragma unroll
  for (int m = 0; m < kCols; ++m) r.main[m] = Op::identity();
  r.halo = Op::identity();
}

// Loads input row ih of the lane's strip into r; rows outside the input (padding), columns
// outside it and rows not wanted read as the identity. col is the lane's first column.
template <typename Window, typename Op, int kCols, typename Body>
__device__ __forceinline__ void stream_load(StreamRow<kCols>& r, const typename Body::Params& p, long long in_plane,
                                            int ih, bool wanted, int H, int W, int col, int lane) {
  using S = StreamSteps<Window>;
  const bool in_row = wanted && (unsigned)ih < (unsigned)H;
  const long long row = in_plane + (long long)ih * W;
#pragma unroll
  for (int m = 0; m < kCols; ++m) {
    const int c = col + 32 * m;
    r.main[m] = in_row && c < W ? Body::load(p, row + c) : Op::identity();
  }
  r.halo = Op::identity();
  if constexpr (S::kLeft + S::kRight > 0) {
    const bool right = lane < S::kRight, left = lane >= 32 - S::kLeft;
    const int c = right ? col + 32 * kCols : col - 32;
    if (in_row && (right || left) && c >= 0 && c < W) r.halo = Body::load(p, row + c);
  }
}

// The horizontal window of every output column of the lane in row r: out[m] combines the
// columns col + 32 m - kPadW + kw * kDilationW. Tap j of chunk m is lane (lane + j) mod 32 of
// chunk m, or of the next (j > 0) or previous (j < 0) chunk where that wraps: each lane sends
// the chunk its receiver needs, so a tap is one shuffle.
template <typename Window, typename Op, int kCols>
__device__ __forceinline__ void stream_window(const StreamRow<kCols>& r, float (&out)[kCols], int lane) {
#pragma unroll
  for (int m = 0; m < kCols; ++m) {
#pragma unroll
    for (int kw = 0; kw < Window::kW; ++kw) {
      const int j = kw * Window::kDilationW - Window::kPadW;
      float v;
      if (j == 0) {
        v = r.main[m];
      } else {
        const bool same = j > 0 ? lane >= j : lane < 32 + j;
        const float send = same ? r.main[m] : stream_chunk(r, j > 0 ? m + 1 : m - 1);
        v = __shfl_sync(0xffffffffu, send, (lane + j) & 31);
      }
      out[m] = kw == 0 ? v : Op::combine(out[m], v);
    }
  }
}

// Block (kBlockW, kBlockH) = kBlockW / 32 warps side by side along W (neighbouring strips) times
// kBlockH along H (consecutive groups of kRows output rows); the 1-D grid enumerates
// planes x groups_h x groups_w, W fastest, so the warps sharing a halo run together.
template <typename Window, int kBlockW, int kBlockH, int kCols, int kRows, int kAhead, typename Body>
__device__ __forceinline__ void pool2d_stream(const typename Body::Params& p, int H, int W, int OH, int OW,
                                              int groups_h, int groups_w) {
  static_assert(kBlockW % 32 == 0, "whole warps along W");
  static_assert(Window::kStrideW == 1, "lanes share columns: stride 1 along W");
  using Op = typename StreamOp<Window::kAverage>::type;
  using S = StreamSteps<Window>;
  static_assert(S::kLeft >= 0 && S::kRight >= 0 && S::kLeft + S::kRight <= 32, "halos of one column per lane");
  constexpr int kUnroll = S::unroll(kAhead, kRows);

  const int lane = threadIdx.x & 31;
  const int gw = (int)(blockIdx.x % (unsigned)groups_w), gh = (int)(blockIdx.x / (unsigned)groups_w % (unsigned)groups_h);
  const long long plane = blockIdx.x / (unsigned)groups_w / (unsigned)groups_h;
  const int col = (gw * (kBlockW / 32) + (int)(threadIdx.x / 32)) * (32 * kCols) + lane;  // the lane's first column
  const int oh0 = (gh * kBlockH + (int)threadIdx.y) * kRows;
  // Whole warps leave here or never: every shuffle below has all 32 lanes.
  if (col - lane >= OW || oh0 >= OH) return;
  const int steps = min(kRows, OH - oh0);
  const long long in_plane = plane * H * W, out_plane = plane * OH * OW;
  const int ih0 = oh0 * Window::kStrideH - Window::kPadH;  // the first input row of step 0's window

  // Step s's window covers input rows ih0 + s * kStrideH + [0, kSpan): the first kCarry of step
  // 0's are loaded up front, then each step's kNew new rows kAhead steps before the step.
  // (Everything starts as the identity: rows no window reads are never loaded, only copied.)
  float ring[S::kSpan][kCols];
#pragma unroll
  for (int q = 0; q < S::kSpan; ++q)
#pragma unroll
    for (int m = 0; m < kCols; ++m) ring[q][m] = Op::identity();
  StreamRow<kCols> ahead[kAhead][S::kNew];
#pragma unroll
  for (int a = 0; a < kAhead; ++a)
#pragma unroll
    for (int t = 0; t < S::kNew; ++t) stream_clear<Op>(ahead[a][t]);
  {
    StreamRow<kCols> first[S::kCarry > 0 ? S::kCarry : 1];
#pragma unroll
    for (int q = 0; q < S::kCarry; ++q)
      if (S::used(q)) stream_load<Window, Op, kCols, Body>(first[q], p, in_plane, ih0 + q, true, H, W, col, lane);
#pragma unroll
    for (int a = 0; a < kAhead; ++a)
#pragma unroll
      for (int t = 0; t < S::kNew; ++t)
        if (S::used(S::kCarry + t))
          stream_load<Window, Op, kCols, Body>(ahead[a][t], p, in_plane, ih0 + a * Window::kStrideH + S::kCarry + t,
                                               a < steps, H, W, col, lane);
#pragma unroll
    for (int q = 0; q < S::kCarry; ++q)
      if (S::used(q)) stream_window<Window, Op, kCols>(first[q], ring[q], lane);
  }

#pragma unroll kUnroll
  for (int s = 0; s < kRows; ++s) {
    if (s == steps) break;  // the same for the whole warp
    StreamRow<kCols> rows[S::kNew];
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
        stream_load<Window, Op, kCols, Body>(ahead[kAhead - 1][t], p, in_plane,
                                             ih0 + (s + kAhead) * Window::kStrideH + S::kCarry + t, s + kAhead < steps,
                                             H, W, col, lane);
#pragma unroll
    for (int t = 0; t < S::kNew; ++t)
      if (S::used(S::kCarry + t)) stream_window<Window, Op, kCols>(rows[t], ring[S::kCarry + t], lane);

    // The vertical window: rows 0, dH, ..., (kH - 1) dH of the ring.
    const int oh = oh0 + s;
#pragma unroll
    for (int m = 0; m < kCols; ++m) {
      float v = ring[0][m];
#pragma unroll
      for (int kh = 1; kh < Window::kH; ++kh) v = Op::combine(v, ring[kh * Window::kDilationH][m]);
      const int ow = col + 32 * m;
      if (ow < OW) {
        if constexpr (Window::kAverage)
          v /= pool_divisor<Window>(oh * Window::kStrideH - Window::kPadH, ow - Window::kPadW, H, W);
        Body::store(p, out_plane + (long long)oh * OW + ow, v);
      }
    }
#pragma unroll
    for (int q = 0; q < S::kCarry; ++q)
#pragma unroll
      for (int m = 0; m < kCols; ++m) ring[q][m] = ring[q + S::kNew][m];
  }
}

}  // namespace kevo
