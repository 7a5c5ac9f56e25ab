// kevo template family "pool": max and average pooling over the last two dims of a tensor
// (1-D pooling is the case H = 1), with a fused elementwise prologue (Body::load, applied to
// every input element read) and epilogue (Body::store). Each thread computes a kOutH x kOutW
// patch of outputs, loading every input element its windows share once; the block's input tile
// is read from global memory directly or staged in shared memory first.
#pragma once

#include "../common.cuh"

namespace kevo {

// Where a block's threads read their windows' inputs (the manifest's kShared): global memory
// directly, or a tile of the input staged in shared memory first.
enum class TileSource { Global = 0, Shared = 1 };

// The window of a pooling op, as compile-time constants (generated per task):
//   struct Window {
//     static constexpr int kH, kW;                  // kernel size
//     static constexpr int kStrideH, kStrideW, kPadH, kPadW, kDilationH, kDilationW;
//     static constexpr bool kAverage;               // false: max (NaN propagates), true: average
//     static constexpr bool kCountPad;              // average: padding counts in the divisor
//     static constexpr int kDivisor;                // average: divisor_override, 0 when not given
//   };

// What a window combines: max (the identity -inf pads) or a sum (0 pads), divided afterwards.
template <bool kAverage>
struct PoolOp {
  using type = Max;
};
template <>
struct PoolOp<true> {
  using type = Sum;
};

// Input rows (or columns) spanned by n consecutive outputs along one dim.
__host__ __device__ constexpr int pool_span(int n, int k, int stride, int dilation) { return (n - 1) * stride + (k - 1) * dilation + 1; }

// Dynamic shared memory for the staged input tile.
extern __shared__ float pool_tile[];

// torch's divisor for an average window starting at (h0, w0) (input coordinates, padding
// included in the count or not), the window clipped to the padded input, then to the input.
template <typename Window>
__device__ __forceinline__ float pool_divisor(int h0, int w0, int H, int W) {
  if constexpr (Window::kDivisor != 0) {
    return (float)Window::kDivisor;
  } else {
    int h1 = min(h0 + Window::kH, H + Window::kPadH), w1 = min(w0 + Window::kW, W + Window::kPadW);
    if constexpr (Window::kCountPad) return (float)((h1 - h0) * (w1 - w0));
    h0 = max(h0, 0), w0 = max(w0, 0), h1 = min(h1, H), w1 = min(w1, W);
    return (float)((h1 - h0) * (w1 - w0));
  }
}

// Block (kBlockW, kBlockH) computes an output tile of (kBlockH * kOutH) x (kBlockW * kOutW) of one
// plane; the 1-D grid enumerates planes x tiles_h x tiles_w. Thread (x, y) owns outputs rows
// y * kOutH + [0, kOutH) and columns x * kOutW + [0, kOutW) of the tile.
template <typename Window, int kBlockW, int kBlockH, int kOutW, int kOutH, TileSource kShared, typename Body>
__device__ __forceinline__ void pool2d(const typename Body::Params& p, int H, int W, int OH, int OW, int tiles_h,
                                       int tiles_w) {
  using Op = typename PoolOp<Window::kAverage>::type;
  constexpr int kSpanH = pool_span(kOutH, Window::kH, Window::kStrideH, Window::kDilationH);
  constexpr int kSpanW = pool_span(kOutW, Window::kW, Window::kStrideW, Window::kDilationW);
  constexpr int kTileH = pool_span(kBlockH * kOutH, Window::kH, Window::kStrideH, Window::kDilationH);
  constexpr int kTileW = pool_span(kBlockW * kOutW, Window::kW, Window::kStrideW, Window::kDilationW);
  static_assert(kBlockW * kBlockH <= 1024, "threads per block");
  static_assert(kBlockW * kBlockH >= 32, "at least one full warp per block");
  static_assert(kShared == TileSource::Global || kTileH * kTileW * 4 <= 232448,
                "the staged input tile must fit in shared memory");

  const long long tile = blockIdx.x;
  const int tw = (int)(tile % tiles_w), th = (int)(tile / tiles_w % tiles_h);
  const long long plane = tile / tiles_w / tiles_h;
  const long long in_plane = plane * H * W, out_plane = plane * OH * OW;
  const int oh_tile = th * (kBlockH * kOutH), ow_tile = tw * (kBlockW * kOutW);
  const int oh0 = oh_tile + threadIdx.y * kOutH, ow0 = ow_tile + threadIdx.x * kOutW;
  // Input coordinates of the thread's first window (top-left, padding included).
  const int ih0 = oh0 * Window::kStrideH - Window::kPadH, iw0 = ow0 * Window::kStrideW - Window::kPadW;

  // Padding (and anything outside the input) reads as the identity: -inf for max, 0 for a sum.
  auto read_input = [&](int ih, int iw) {
    return (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W ? Body::load(p, in_plane + (long long)ih * W + iw)
                                                                    : Op::identity();
  };
  if constexpr (kShared == TileSource::Shared) {
    const int ih_tile = oh_tile * Window::kStrideH - Window::kPadH, iw_tile = ow_tile * Window::kStrideW - Window::kPadW;
    for (int i = threadIdx.y * kBlockW + threadIdx.x; i < kTileH * kTileW; i += kBlockW * kBlockH)
      pool_tile[i] = read_input(ih_tile + i / kTileW, iw_tile + i % kTileW);
    __syncthreads();
  }
  // Element (r, c) of the thread's kSpanH x kSpanW input patch.
  auto read_patch = [&](int r, int c) {
    if constexpr (kShared == TileSource::Shared)
      return pool_tile[(threadIdx.y * kOutH * Window::kStrideH + r) * kTileW + threadIdx.x * kOutW * Window::kStrideW + c];
    else
      return read_input(ih0 + r, iw0 + c);
  };

  float acc[kOutH][kOutW];
#pragma unroll
  for (int i = 0; i < kOutH; ++i)
#pragma unroll
    for (int j = 0; j < kOutW; ++j) acc[i][j] = Op::identity();
  // Row by row through the patch: each element is read once and goes to every window holding it
  // (all of the branching below is on compile-time values once the loops are unrolled).
#pragma unroll
  for (int r = 0; r < kSpanH; ++r) {
    float row[kSpanW];
#pragma unroll
    for (int c = 0; c < kSpanW; ++c) row[c] = read_patch(r, c);
#pragma unroll
    for (int i = 0; i < kOutH; ++i) {
      const int dr = r - i * Window::kStrideH;  // the row's offset in output row i's window
      if (dr < 0 || dr % Window::kDilationH != 0 || dr / Window::kDilationH >= Window::kH) continue;
#pragma unroll
      for (int j = 0; j < kOutW; ++j)
#pragma unroll
        for (int kw = 0; kw < Window::kW; ++kw)
          acc[i][j] = Op::combine(acc[i][j], row[j * Window::kStrideW + kw * Window::kDilationW]);
    }
  }

#pragma unroll
  for (int i = 0; i < kOutH; ++i) {
    const int oh = oh0 + i;
    if (oh >= OH) break;
#pragma unroll
    for (int j = 0; j < kOutW; ++j) {
      const int ow = ow0 + j;
      if (ow >= OW) break;
      float v = acc[i][j];
      if constexpr (Window::kAverage)
        v /= pool_divisor<Window>(ih0 + i * Window::kStrideH, iw0 + j * Window::kStrideW, H, W);
      Body::store(p, out_plane + (long long)oh * OW + ow, v);
    }
  }
}

}  // namespace kevo
