// kevo template family "conv", index math: where element (m, k) of the implicit GEMM's A operand
// (the im2col matrix of an NCHW input, never stored) and element (m, oc) of its result lie in
// the convolution's input and output. Plain C++ with no instruction of its own, so that the host
// test (tests/mutate/host/conv_index_host_test.cpp, through tests/mutate/host/cuda_host_shim.h)
// checks it against a direct convolution.
#pragma once

#include "../common.cuh"

namespace kevo {

// Sizes known only at run time (they vary between workloads). C and OC count every group.
struct ConvShape {
  int N, C, H, W, OC, OH, OW;
};

// The implicit GEMM of one group g: M = N * OH * OW output pixels (m = (n * OH + oh) * OW + ow),
// N_gemm = OC / G output channels, K = C / G * KH * KW taps (k = (c * KH + r) * KW + s, the order
// of the weight's [OC, C / G, KH, KW], so that the weight is B stored K-major). Geo holds what
// the op graph fixes (kernel size, stride, padding, dilation, groups) as constants, so that the
// divisions by KH * KW and KW compile to multiplications.
template <typename Geo>
struct Im2col {
  static constexpr int kTaps = Geo::KH * Geo::KW;
  // A coordinate (or shift) that must fail the bounds check: past any H or W the lowering accepts
  // (below 16384), and twice of it still far from overflowing an int. Valid coordinates are at
  // least -PH and shifts at least 0, so a far row plus any tap, or any row plus a far tap, is out.
  static constexpr int kFar = 1 << 24;

  // Output pixel m of group g: its window's top-left input element (offset into x, possibly
  // outside the image) and that element's coordinates; rows past M get coordinates that fail.
  struct Row {
    long long base;
    int ih0, iw0;
  };
  // Tap k: its offset from a window's top-left element and its coordinate shifts; taps past K
  // get a shift that fails.
  struct Tap {
    int off, dh, dw;
  };

  static __device__ __forceinline__ int gemm_m(const ConvShape& s) { return s.N * s.OH * s.OW; }
  static __device__ __forceinline__ int gemm_n(const ConvShape& s) { return s.OC / Geo::G; }
  static __device__ __forceinline__ int gemm_k(const ConvShape& s) { return s.C / Geo::G * kTaps; }

  static __device__ __forceinline__ Row row(const ConvShape& s, int m, int g) {
    if (m >= gemm_m(s)) return {0, kFar, kFar};  // positive, as a far tap's shift: the sum never cancels
    const int ohw = s.OH * s.OW, n = m / ohw, p = m - n * ohw, oh = p / s.OW, ow = p - oh * s.OW;
    const int ih0 = oh * Geo::SH - Geo::PH, iw0 = ow * Geo::SW - Geo::PW;
    const long long plane = (long long)n * s.C + (long long)g * (s.C / Geo::G);
    return {plane * s.H * s.W + (long long)ih0 * s.W + iw0, ih0, iw0};
  }

  static __device__ __forceinline__ Tap tap(const ConvShape& s, int k) {
    if (k >= gemm_k(s)) return {0, kFar, kFar};
    const int c = k / kTaps, rs = k - c * kTaps, r = rs / Geo::KW, q = rs - r * Geo::KW;
    const int dh = r * Geo::DH, dw = q * Geo::DW;
    return {c * s.H * s.W + dh * s.W + dw, dh, dw};
  }

  // The same for x transposed to NHWC (the plan's copy; the weight likewise to [OC, KH, KW, C / G]):
  // k = (r * KW + s) * C / G + c, so that a 16-byte chunk of k is consecutive channels of one
  // input pixel (C / G a multiple of the chunk: a manifest constraint).
  static __device__ __forceinline__ Row row_nhwc(const ConvShape& s, int m, int g) {
    if (m >= gemm_m(s)) return {0, kFar, kFar};
    const int ohw = s.OH * s.OW, n = m / ohw, p = m - n * ohw, oh = p / s.OW, ow = p - oh * s.OW;
    const int ih0 = oh * Geo::SH - Geo::PH, iw0 = ow * Geo::SW - Geo::PW;
    return {(((long long)n * s.H + ih0) * s.W + iw0) * s.C + (long long)g * (s.C / Geo::G), ih0, iw0};
  }
  static __device__ __forceinline__ Tap tap_nhwc(const ConvShape& s, int k) {
    if (k >= gemm_k(s)) return {0, kFar, kFar};
    const int cg = s.C / Geo::G, rs = k / cg, c = k - rs * cg, r = rs / Geo::KW, q = rs - r * Geo::KW;
    const int dh = r * Geo::DH, dw = q * Geo::DW;
    return {(dh * s.W + dw) * s.C + c, dh, dw};
  }

  // A tap as one 8-byte table entry (the shared-memory offset table): shifts below 2^15 each.
  static __device__ __forceinline__ void pack(const Tap& t, int& off, int& shifts) {
    off = t.off;
    shifts = t.dh >= kFar ? (0x7fff << 16) | 0x7fff : (t.dh << 16) | t.dw;
  }
  static __device__ __forceinline__ Tap unpack(int off, int shifts) {
    const int dh = shifts >> 16, dw = shifts & 0xffff;
    return {off, dh == 0x7fff ? kFar : dh, dw == 0x7fff ? kFar : dw};
  }

  // Whether A[m, k] lies inside the image (else it is padding, or outside the GEMM: zero).
  static __device__ __forceinline__ bool inside(const ConvShape& s, const Row& r, const Tap& t) {
    return (unsigned)(r.ih0 + t.dh) < (unsigned)s.H && (unsigned)(r.iw0 + t.dw) < (unsigned)s.W;
  }
  static __device__ __forceinline__ long long offset(const Row& r, const Tap& t) { return r.base + t.off; }

  // Where output channel oc (of all groups) of pixel m lies in y[N, OC, OH, OW]: the pixel's part
  // (out_pixel) once per row, plus oc * OH * OW.
  static __device__ __forceinline__ long long out_pixel(const ConvShape& s, int m) {
    const int ohw = s.OH * s.OW, n = m / ohw;
    return (long long)n * s.OC * ohw + (m - n * ohw);
  }
  static __device__ __forceinline__ long long out_index(const ConvShape& s, long long pixel, int oc) {
    return pixel + (long long)oc * s.OH * s.OW;
  }
};

}  // namespace kevo
