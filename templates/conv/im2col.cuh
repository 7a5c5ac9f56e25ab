// kevo template family "conv", index math: where element (m, k) of the implicit GEMM's A operand
// (the im2col matrix of an NCHW or NCDHW input, never stored) and element (m, oc) of its result lie
// in the convolution's input and output. Plain C++ with no instruction of its own, so that the host
// test (tests/lower/host/conv_index_host_test.cpp, through tests/lower/host/cuda_host_shim.h)
// checks it against a direct convolution.
#pragma once

#include "../common.cuh"

namespace kevo {

// Sizes known only at run time (they vary between workloads). C and OC count every group. D and
// OD are conv3d's depths; conv2d's index math (Im2col) never reads them.
struct ConvShape {
  int N, C, H, W, OC, OH, OW;
  int D = 1, OD = 1;
};

// The implicit GEMM of one group g: M = N * OH * OW output pixels (m = (n * OH + oh) * OW + ow),
// N_gemm = OC / G output channels, K = C / G * KH * KW taps (k = (c * KH + r) * KW + s, the order
// of the weight's [OC, C / G, KH, KW], so that the weight is B stored K-major). Geo holds what
// the op graph fixes (kernel size, stride, padding, dilation, groups) as constants, so that the
// divisions by KH * KW and KW compile to multiplications.
template <typename Geo>
struct Im2col {
  static constexpr int kTaps = Geo::KH * Geo::KW;
  // A coordinate (or shift) that must fail the bounds check: past any H or W plus padding and shift
  // the lowering accepts (sizes below 2^23, shifts below 2^15), and twice of it still far from
  // overflowing an int. Valid coordinates are at
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
  static __device__ __forceinline__ long long offset(const ConvShape&, const Row& r, const Tap& t) { return r.base + t.off; }

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

// The same for conv3d: x[N, C, D, H, W], w[OC, C / G, KD, KH, KW], y[N, OC, OD, OH, OW]. M = N * OD
// * OH * OW (m = ((n * OD + od) * OH + oh) * OW + ow), K = C / G * KD * KH * KW (k = ((c * KD + t) *
// KH + r) * KW + q, the weight's order). Geo adds KD, SD, PD, DD to the 2-D constants. A separate
// struct rather than a depth of 1 inside Im2col, so that conv2d's rows, taps and table entries (and
// the registers and instructions they cost) stay what they were.
template <typename Geo>
struct Im2col3d {
  static constexpr int kPlaneTaps = Geo::KH * Geo::KW, kTaps = Geo::KD * kPlaneTaps;
  static constexpr int kFar = 1 << 24;  // as Im2col's: past any D, H or W the lowering accepts
  // A table entry's shifts, packed into 32 bits: depth 10 bits, height and width 11 each; all ones
  // marks a far tap, so the lowering keeps DD * (KD - 1) below 1023 and the others below 2047.
  static constexpr unsigned kDepthMask = 0x3ff, kPlaneMask = 0x7ff;

  struct Row {
    long long base;
    int id0, ih0, iw0;
  };
  struct Tap {
    int off, dd, dh, dw;
  };

  static __device__ __forceinline__ int gemm_m(const ConvShape& s) { return s.N * s.OD * s.OH * s.OW; }
  static __device__ __forceinline__ int gemm_n(const ConvShape& s) { return s.OC / Geo::G; }
  static __device__ __forceinline__ int gemm_k(const ConvShape& s) { return s.C / Geo::G * kTaps; }

  // Output pixel m: its batch index n and its window's corner (id0, ih0, iw0), possibly outside x.
  static __device__ __forceinline__ void corner(const ConvShape& s, int m, int& n, int& id0, int& ih0, int& iw0) {
    const int ohw = s.OH * s.OW, odhw = s.OD * ohw;
    n = m / odhw;
    const int p = m - n * odhw, od = p / ohw, q = p - od * ohw, oh = q / s.OW, ow = q - oh * s.OW;
    id0 = od * Geo::SD - Geo::PD, ih0 = oh * Geo::SH - Geo::PH, iw0 = ow * Geo::SW - Geo::PW;
  }

  static __device__ __forceinline__ Row row(const ConvShape& s, int m, int g) {
    if (m >= gemm_m(s)) return {0, kFar, kFar, kFar};
    int n, id0, ih0, iw0;
    corner(s, m, n, id0, ih0, iw0);
    const long long plane = (long long)n * s.C + (long long)g * (s.C / Geo::G);
    return {plane * s.D * s.H * s.W + ((long long)id0 * s.H + ih0) * s.W + iw0, id0, ih0, iw0};
  }

  static __device__ __forceinline__ Tap tap(const ConvShape& s, int k) {
    if (k >= gemm_k(s)) return {0, kFar, kFar, kFar};
    const int c = k / kTaps, trs = k - c * kTaps, t = trs / kPlaneTaps, rs = trs - t * kPlaneTaps;
    const int r = rs / Geo::KW, q = rs - r * Geo::KW;
    const int dd = t * Geo::DD, dh = r * Geo::DH, dw = q * Geo::DW;
    return {c * s.D * s.H * s.W + (dd * s.H + dh) * s.W + dw, dd, dh, dw};
  }

  // NDHWC (the plan's copy; the weight as [OC, KD, KH, KW, C / G]): k = ((t * KH + r) * KW + q) * C / G + c.
  static __device__ __forceinline__ Row row_nhwc(const ConvShape& s, int m, int g) {
    if (m >= gemm_m(s)) return {0, kFar, kFar, kFar};
    int n, id0, ih0, iw0;
    corner(s, m, n, id0, ih0, iw0);
    return {((((long long)n * s.D + id0) * s.H + ih0) * s.W + iw0) * s.C + (long long)g * (s.C / Geo::G), id0, ih0, iw0};
  }
  static __device__ __forceinline__ Tap tap_nhwc(const ConvShape& s, int k) {
    if (k >= gemm_k(s)) return {0, kFar, kFar, kFar};
    const int cg = s.C / Geo::G, trs = k / cg, c = k - trs * cg, t = trs / kPlaneTaps, rs = trs - t * kPlaneTaps;
    const int r = rs / Geo::KW, q = rs - r * Geo::KW;
    const int dd = t * Geo::DD, dh = r * Geo::DH, dw = q * Geo::DW;
    return {((dd * s.H + dh) * s.W + dw) * s.C + c, dd, dh, dw};
  }

  static __device__ __forceinline__ void pack(const Tap& t, int& off, int& shifts) {
    off = t.off;
    shifts = t.dd >= kFar ? -1
                          : (int)(((unsigned)t.dd << 22) | ((unsigned)t.dh << 11) | (unsigned)t.dw);
  }
  static __device__ __forceinline__ Tap unpack(int off, int shifts) {
    const unsigned u = (unsigned)shifts, dd = u >> 22, dh = (u >> 11) & kPlaneMask, dw = u & kPlaneMask;
    return {off, dd == kDepthMask ? kFar : (int)dd, dh == kPlaneMask ? kFar : (int)dh, dw == kPlaneMask ? kFar : (int)dw};
  }

  static __device__ __forceinline__ bool inside(const ConvShape& s, const Row& r, const Tap& t) {
    return (unsigned)(r.id0 + t.dd) < (unsigned)s.D && (unsigned)(r.ih0 + t.dh) < (unsigned)s.H &&
           (unsigned)(r.iw0 + t.dw) < (unsigned)s.W;
  }
  static __device__ __forceinline__ long long offset(const ConvShape&, const Row& r, const Tap& t) { return r.base + t.off; }

  // y[N, OC, OD, OH, OW]: the pixel's part once per row, plus oc * OD * OH * OW.
  static __device__ __forceinline__ long long out_pixel(const ConvShape& s, int m) {
    const int odhw = s.OD * s.OH * s.OW, n = m / odhw;
    return (long long)n * s.OC * odhw + (m - n * odhw);
  }
  static __device__ __forceinline__ long long out_index(const ConvShape& s, long long pixel, int oc) {
    return pixel + (long long)oc * s.OD * s.OH * s.OW;
  }
};

// Transposed convolutions (conv_transpose1d/2d/3d, the gradient of a convolution with respect to
// its input): y[n, oc, oh, ow] = sum over c (of oc's group), r, q of x[n, c, ih, iw] * w[c, oc % OCg,
// r, q] where ih = (oh + PH - r * DH) / SH divides exactly and lies in [0, H) (iw likewise). The same
// implicit GEMM per group: M = N * OH * OW output pixels, N_gemm = OC / G, K = C / G * KH * KW taps
// with k = (c * KH + r) * KW + q, B the plan's rewrite of torch's [C, OC / G, KH, KW] weight into
// [OC, C / G, KH, KW] (weight_source). Only one tap in SH * SW per axis pair lands on an input
// element: the others are zero fills, the price of gathering the zero-interleaved input without
// storing it (a per-phase decomposition into SH * SW dense convolutions would skip them).
// tconv_inside: whether output coordinate t (padding added) under a tap shifted by d reads an input
// element of an axis of n: (t - d) >= 0, a multiple of the constant stride S, and below S * n (the
// lowering keeps S * n below 2^31). Far rows (t = -kFar) and far taps (d = kFar) give a negative
// t - d, which fails as a large unsigned value, as long as t stays below kFar (the lowering keeps
// o + P below 2^24).
template <int S>
__device__ __forceinline__ bool tconv_inside(int t, int d, int n) {
  const unsigned a = (unsigned)(t - d);
  return a < (unsigned)(S * n) && a % S == 0;
}
template <int S>
__device__ __forceinline__ int tconv_coord(int t, int d) { return int((unsigned)(t - d) / S); }

// Element i of the rewritten weight w'[OC, C / G, taps] (oc = g * OCg + o) and where it lies in
// torch's w[C, OCg, taps]: w'[g * OCg + o, c, rs] = w[g * Cg + c, o, rs].
template <int kTaps, int G>
__device__ __forceinline__ long long tconv_weight_source(const ConvShape& s, long long i) {
  const int Cg = s.C / G, OCg = s.OC / G;
  const long long K = (long long)Cg * kTaps, oc = i / K;
  const int k = int(i - oc * K), g = int(oc / OCg), o = int(oc - (long long)g * OCg), c = k / kTaps, rs = k - c * kTaps;
  return ((long long)(g * Cg + c) * OCg + o) * kTaps + rs;
}

// conv_transpose2d (and 1d as height 1): Im2col's GEMM sizes, taps' table entries and output
// scatter, with rows that keep (oh + PH, ow + PW) and taps that keep their channel plane and
// shifts (r * DH, q * DW) apart, since the input coordinate is their difference over the stride.
template <typename Geo>
struct Im2colTransposed : private Im2col<Geo> {
  using Base = Im2col<Geo>;
  using Base::gemm_k;
  using Base::gemm_m;
  using Base::gemm_n;
  using Base::kFar;
  using Base::kTaps;
  using Base::out_index;
  using Base::out_pixel;
  using Base::pack;
  using Base::unpack;
  using Tap = typename Base::Tap;  // off: the channel's plane (c * H * W); dh, dw: the kernel shifts

  // Output pixel m of group g: its batch and group's first input plane, and (oh + PH, ow + PW);
  // rows past M get coordinates that fail.
  struct Row {
    long long base;
    int th, tw;
  };

  static __device__ __forceinline__ Row row(const ConvShape& s, int m, int g) {
    if (m >= gemm_m(s)) return {0, -kFar, -kFar};
    const int ohw = s.OH * s.OW, n = m / ohw, p = m - n * ohw, oh = p / s.OW, ow = p - oh * s.OW;
    const long long plane = (long long)n * s.C + (long long)g * (s.C / Geo::G);
    return {plane * s.H * s.W, oh + Geo::PH, ow + Geo::PW};
  }
  static __device__ __forceinline__ Tap tap(const ConvShape& s, int k) {
    if (k >= gemm_k(s)) return {0, kFar, kFar};
    const int c = k / kTaps, rs = k - c * kTaps, r = rs / Geo::KW, q = rs - r * Geo::KW;
    return {c * s.H * s.W, r * Geo::DH, q * Geo::DW};
  }
  static __device__ __forceinline__ bool inside(const ConvShape& s, const Row& r, const Tap& t) {
    return tconv_inside<Geo::SH>(r.th, t.dh, s.H) && tconv_inside<Geo::SW>(r.tw, t.dw, s.W);
  }
  static __device__ __forceinline__ long long offset(const ConvShape& s, const Row& r, const Tap& t) {
    return r.base + t.off + (tconv_coord<Geo::SH>(r.th, t.dh) * s.W + tconv_coord<Geo::SW>(r.tw, t.dw));
  }
  static __device__ __forceinline__ long long weight_source(const ConvShape& s, long long i) {
    return tconv_weight_source<kTaps, Geo::G>(s, i);
  }
};

// conv_transpose3d: Im2col3d's sizes, packed table entries and scatter, rows keeping (od + PD,
// oh + PH, ow + PW).
template <typename Geo>
struct Im2col3dTransposed : private Im2col3d<Geo> {
  using Base = Im2col3d<Geo>;
  using Base::gemm_k;
  using Base::gemm_m;
  using Base::gemm_n;
  using Base::kFar;
  using Base::kPlaneTaps;
  using Base::kTaps;
  using Base::out_index;
  using Base::out_pixel;
  using Base::pack;
  using Base::unpack;
  using Tap = typename Base::Tap;  // off: the channel's volume (c * D * H * W); dd, dh, dw: the kernel shifts

  struct Row {
    long long base;
    int td, th, tw;
  };

  static __device__ __forceinline__ Row row(const ConvShape& s, int m, int g) {
    if (m >= gemm_m(s)) return {0, -kFar, -kFar, -kFar};
    const int ohw = s.OH * s.OW, odhw = s.OD * ohw, n = m / odhw;
    const int p = m - n * odhw, od = p / ohw, q = p - od * ohw, oh = q / s.OW, ow = q - oh * s.OW;
    const long long plane = (long long)n * s.C + (long long)g * (s.C / Geo::G);
    return {plane * s.D * s.H * s.W, od + Geo::PD, oh + Geo::PH, ow + Geo::PW};
  }
  static __device__ __forceinline__ Tap tap(const ConvShape& s, int k) {
    if (k >= gemm_k(s)) return {0, kFar, kFar, kFar};
    const int c = k / kTaps, trs = k - c * kTaps, t = trs / kPlaneTaps, rs = trs - t * kPlaneTaps;
    const int r = rs / Geo::KW, q = rs - r * Geo::KW;
    return {c * s.D * s.H * s.W, t * Geo::DD, r * Geo::DH, q * Geo::DW};
  }
  static __device__ __forceinline__ bool inside(const ConvShape& s, const Row& r, const Tap& t) {
    return tconv_inside<Geo::SD>(r.td, t.dd, s.D) && tconv_inside<Geo::SH>(r.th, t.dh, s.H) &&
           tconv_inside<Geo::SW>(r.tw, t.dw, s.W);
  }
  static __device__ __forceinline__ long long offset(const ConvShape& s, const Row& r, const Tap& t) {
    return r.base + t.off +
           ((tconv_coord<Geo::SD>(r.td, t.dd) * s.H + tconv_coord<Geo::SH>(r.th, t.dh)) * s.W +
            tconv_coord<Geo::SW>(r.tw, t.dw));
  }
  static __device__ __forceinline__ long long weight_source(const ConvShape& s, long long i) {
    return tconv_weight_source<kTaps, Geo::G>(s, i);
  }
};

// What a Geometry says of itself: a kernel depth (KD: conv3d) and kTransposed (a transposed
// convolution); a Geometry without the member has none.
template <typename Geo, typename = int>
struct GeoHasDepth {
  static constexpr bool value = false;
};
template <typename Geo>
struct GeoHasDepth<Geo, decltype((void)Geo::KD, 0)> {
  static constexpr bool value = true;
};
template <typename Geo, typename = int>
struct GeoTransposed {
  static constexpr bool value = false;
};
template <typename Geo>
struct GeoTransposed<Geo, decltype((void)Geo::kTransposed, 0)> {
  static constexpr bool value = Geo::kTransposed;
};

// The index math of a Geometry: Im2col3d where it has a kernel depth (KD), Im2col otherwise, each
// in its transposed variant where the Geometry says kTransposed.
template <typename Geo, bool kDepth = GeoHasDepth<Geo>::value, bool kTransposed = GeoTransposed<Geo>::value>
struct ConvIndexOf {
  using type = Im2col<Geo>;
};
template <typename Geo>
struct ConvIndexOf<Geo, true, false> {
  using type = Im2col3d<Geo>;
};
template <typename Geo>
struct ConvIndexOf<Geo, false, true> {
  using type = Im2colTransposed<Geo>;
};
template <typename Geo>
struct ConvIndexOf<Geo, true, true> {
  using type = Im2col3dTransposed<Geo>;
};
template <typename Geo>
using ConvIndex = typename ConvIndexOf<Geo>::type;

}  // namespace kevo
