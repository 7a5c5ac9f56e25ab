// The conv family's index math (templates/conv/im2col.cuh) checked on the CPU: the implicit GEMM
// it describes (A gathered tap by tap with its bounds checks, the weight as B, results scattered
// to NCHW) must equal a direct convolution written from torch's definition, for strides,
// padding, dilation, groups, odd sizes, conv1d as height 1 and conv3d (Im2col3d), with taps
// computed or read back from the packed table, gathering from x itself (NCHW, NCDHW) or from its
// NHWC (NDHWC) copy (with the weight reordered as the plan's first kernels do), and transposed
// convolutions in 1-D, 2-D and 3-D (Im2colTransposed, Im2col3dTransposed, with the plan's weight
// rewrite) against their scatter definition. A wrong offset, bound or scatter shows here before a
// GPU sees it.
#include <gtest/gtest.h>

#include <random>
#include <type_traits>
#include <vector>

#include "cuda_host_shim.h"  // im2col.cuh is plain C++ apart from its qualifiers (and common.cuh's)
#include "templates/conv/im2col.cuh"

namespace {

template <int kKH, int kKW, int kSH, int kSW, int kPH, int kPW, int kDH, int kDW, int kG>
struct Geo {
  static constexpr int KH = kKH, KW = kKW, SH = kSH, SW = kSW, PH = kPH, PW = kPW, DH = kDH, DW = kDW, G = kG;
};
// A conv3d's: kernel, stride, padding and dilation along depth, height and width, then groups.
template <int kKD, int kKH, int kKW, int kSD, int kSH, int kSW, int kPD, int kPH, int kPW, int kDD, int kDH, int kDW, int kG>
struct Geo3 {
  static constexpr int KD = kKD, KH = kKH, KW = kKW, SD = kSD, SH = kSH, SW = kSW, PD = kPD, PH = kPH, PW = kPW,
                       DD = kDD, DH = kDH, DW = kDW, G = kG;
};

// Transposed convolutions' geometries: the same constants and kTransposed (Im2colTransposed, Im2col3dTransposed).
template <int kKH, int kKW, int kSH, int kSW, int kPH, int kPW, int kDH, int kDW, int kG>
struct GeoT : Geo<kKH, kKW, kSH, kSW, kPH, kPW, kDH, kDW, kG> {
  static constexpr bool kTransposed = true;
};
template <int kKD, int kKH, int kKW, int kSD, int kSH, int kSW, int kPD, int kPH, int kPW, int kDD, int kDH, int kDW, int kG>
struct Geo3T : Geo3<kKD, kKH, kKW, kSD, kSH, kSW, kPD, kPH, kPW, kDD, kDH, kDW, kG> {
  static constexpr bool kTransposed = true;
};

// A geometry's constants along depth, height and width (a 2-D one has a depth of 1).
struct Window {
  int k[3], s[3], p[3], d[3], g;
};
template <typename G>
Window window() {
  if constexpr (kevo::GeoHasDepth<G>::value)
    return {{G::KD, G::KH, G::KW}, {G::SD, G::SH, G::SW}, {G::PD, G::PH, G::PW}, {G::DD, G::DH, G::DW}, G::G};
  else
    return {{1, G::KH, G::KW}, {1, G::SH, G::SW}, {0, G::PH, G::PW}, {1, G::DH, G::DW}, G::G};
}

// A transposed convolution as torch defines it, written as the scatter it is (independent of the
// gather the index math does): every x[n, c, id, ih, iw] adds x * w[c, o, t, r, q] into
// y[n, g * OC/G + o, id*SD - PD + t*DD, ih*SH - PH + r*DH, iw*SW - PW + q*DW] where that lies inside y
// (g = c / (C/G); output_padding only makes y larger).
template <typename G>
std::vector<double> direct_transposed(const kevo::ConvShape& s, const std::vector<float>& x, const std::vector<float>& w) {
  const Window v = window<G>();
  std::vector<double> y(static_cast<size_t>(s.N) * s.OC * s.OD * s.OH * s.OW, 0.0);
  const int cg = s.C / v.g, ocg = s.OC / v.g, taps = v.k[0] * v.k[1] * v.k[2];
  const int in[3] = {s.D, s.H, s.W}, out[3] = {s.OD, s.OH, s.OW};
  for (int n = 0; n < s.N; ++n)
    for (int c = 0; c < s.C; ++c)
      for (int i = 0; i < s.D * s.H * s.W; ++i) {
        const int at[3] = {i / (s.H * s.W), i / s.W % s.H, i % s.W};
        const double xv = x[(static_cast<size_t>(n) * s.C + c) * s.D * s.H * s.W + i];
        for (int o = 0; o < ocg; ++o)
          for (int tap = 0; tap < taps; ++tap) {
            const int t3[3] = {tap / (v.k[1] * v.k[2]), tap / v.k[2] % v.k[1], tap % v.k[2]};
            int to[3];
            bool ok = true;
            for (int a = 0; a < 3; ++a) {
              to[a] = at[a] * v.s[a] - v.p[a] + t3[a] * v.d[a];
              ok = ok && to[a] >= 0 && to[a] < out[a] && at[a] < in[a];
            }
            if (!ok) continue;
            const size_t oc = static_cast<size_t>(c / cg * ocg + o);
            y[(((static_cast<size_t>(n) * s.OC + oc) * s.OD + to[0]) * s.OH + to[1]) * s.OW + to[2]] +=
                xv * w[(static_cast<size_t>(c) * ocg + o) * taps + tap];
          }
      }
  return y;
}

// y[n, oc, oh, ow] = sum over c < C/G, r, s of x[n, g*C/G + c, oh*SH - PH + r*DH, ow*SW - PW + s*DW] * w[oc, c, r, s]
// where g = oc / (OC/G) and taps outside the image count zero.
template <typename G>
std::vector<double> direct(const kevo::ConvShape& s, const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> y(static_cast<size_t>(s.N) * s.OC * s.OH * s.OW);
  const int cg = s.C / G::G, ocg = s.OC / G::G;
  for (int n = 0; n < s.N; ++n)
    for (int oc = 0; oc < s.OC; ++oc)
      for (int oh = 0; oh < s.OH; ++oh)
        for (int ow = 0; ow < s.OW; ++ow) {
          double acc = 0;
          for (int c = 0; c < cg; ++c)
            for (int r = 0; r < G::KH; ++r)
              for (int q = 0; q < G::KW; ++q) {
                const int ih = oh * G::SH - G::PH + r * G::DH, iw = ow * G::SW - G::PW + q * G::DW;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                const int ci = oc / ocg * cg + c;
                acc += double(x[((static_cast<size_t>(n) * s.C + ci) * s.H + ih) * s.W + iw]) *
                       w[((static_cast<size_t>(oc) * cg + c) * G::KH + r) * G::KW + q];
              }
          y[((static_cast<size_t>(n) * s.OC + oc) * s.OH + oh) * s.OW + ow] = acc;
        }
  return y;
}

// y[n, oc, od, oh, ow] = sum over c < C/G, t, r, q of x[n, g*C/G + c, od*SD - PD + t*DD, oh*SH - PH + r*DH,
// ow*SW - PW + q*DW] * w[oc, c, t, r, q], taps outside the volume counting zero.
template <typename G>
std::vector<double> direct3d(const kevo::ConvShape& s, const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> y(static_cast<size_t>(s.N) * s.OC * s.OD * s.OH * s.OW);
  const int cg = s.C / G::G, ocg = s.OC / G::G;
  size_t i = 0;
  for (int n = 0; n < s.N; ++n)
    for (int oc = 0; oc < s.OC; ++oc)
      for (int od = 0; od < s.OD; ++od)
        for (int oh = 0; oh < s.OH; ++oh)
          for (int ow = 0; ow < s.OW; ++ow, ++i) {
            double acc = 0;
            for (int c = 0; c < cg; ++c)
              for (int t = 0; t < G::KD; ++t)
                for (int r = 0; r < G::KH; ++r)
                  for (int q = 0; q < G::KW; ++q) {
                    const int id = od * G::SD - G::PD + t * G::DD, ih = oh * G::SH - G::PH + r * G::DH,
                              iw = ow * G::SW - G::PW + q * G::DW;
                    if (id < 0 || id >= s.D || ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                    const size_t ci = static_cast<size_t>(n) * s.C + oc / ocg * cg + c;
                    acc += double(x[((ci * s.D + id) * s.H + ih) * s.W + iw]) *
                           w[(((static_cast<size_t>(oc) * cg + c) * G::KD + t) * G::KH + r) * G::KW + q];
                  }
            y[i] = acc;
          }
  return y;
}

// The implicit GEMM as the kernel walks it: per group, A[m, k] through row/tap/inside/offset
// (taps from the packed table when `table`), B[oc, k] = the group's weight rows, stores at
// out_index(out_pixel(m), oc). Every y element must be written exactly once.
// x [N, C, H, W] -> [N, H, W, C] and w [OC, C/G, KH, KW] -> [OC, KH, KW, C/G], as conv_x_to_nhwc
// and conv_w_to_nhwc (templates/conv/conv.cuh) do (conv3d: D * H * W pixels, KD * KH * KW taps;
// D = 1 for conv2d).
template <typename G>
void to_nhwc(const kevo::ConvShape& s, std::vector<float>& x, std::vector<float>& w) {
  std::vector<float> xt(x.size()), wt(w.size());
  const int hw = s.D * s.H * s.W, cg = s.C / G::G, taps = kevo::ConvIndex<G>::kTaps;
  for (int n = 0; n < s.N; ++n)
    for (int c = 0; c < s.C; ++c)
      for (int p = 0; p < hw; ++p)
        xt[(static_cast<size_t>(n) * hw + p) * s.C + c] = x[(static_cast<size_t>(n) * s.C + c) * hw + p];
  for (int oc = 0; oc < s.OC; ++oc)
    for (int c = 0; c < cg; ++c)
      for (int rs = 0; rs < taps; ++rs)
        wt[(static_cast<size_t>(oc) * taps + rs) * cg + c] = w[(static_cast<size_t>(oc) * cg + c) * taps + rs];
  x.swap(xt);
  w.swap(wt);
}

template <typename G>
std::vector<double> implicit_gemm(const kevo::ConvShape& s, std::vector<float> x, std::vector<float> w, bool table,
                                  bool nhwc, std::vector<int>& writes) {
  using Ix = kevo::ConvIndex<G>;
  if (nhwc) to_nhwc<G>(s, x, w);
  if constexpr (kevo::GeoTransposed<G>::value) {  // the plan's rewrite of [C, OC/G, taps] into [OC, C/G, taps]
    std::vector<float> wt(w.size());
    for (size_t i = 0; i < wt.size(); ++i) {
      const long long from = Ix::weight_source(s, static_cast<long long>(i));
      EXPECT_GE(from, 0);
      EXPECT_LT(from, static_cast<long long>(w.size()));
      if (from < 0 || from >= static_cast<long long>(w.size())) return {};
      wt[i] = w[static_cast<size_t>(from)];
    }
    w.swap(wt);
  }
  // The transposed index math has no NHWC variant (compare() never asks for one).
  const auto tap_at = [&](int k) {
    if constexpr (kevo::GeoTransposed<G>::value) return Ix::tap(s, k);
    else return nhwc ? Ix::tap_nhwc(s, k) : Ix::tap(s, k);
  };
  const auto row_at = [&](int m, int g) {
    if constexpr (kevo::GeoTransposed<G>::value) return Ix::row(s, m, g);
    else return nhwc ? Ix::row_nhwc(s, m, g) : Ix::row(s, m, g);
  };
  const int M = Ix::gemm_m(s), OCg = Ix::gemm_n(s), K = Ix::gemm_k(s);
  std::vector<double> y(static_cast<size_t>(s.N) * s.OC * s.OD * s.OH * s.OW, 0.0);
  writes.assign(y.size(), 0);
  const int k_pad = (K + 15) / 16 * 16;  // the kernel's table covers whole k tiles; taps past K fail the bounds
  std::vector<typename Ix::Tap> taps;
  for (int k = 0; k < k_pad; ++k) {
    typename Ix::Tap t = tap_at(k);
    if (table) {
      int off, shifts;
      Ix::pack(t, off, shifts);
      t = Ix::unpack(off, shifts);
    }
    taps.push_back(t);
  }
  for (int g = 0; g < G::G; ++g)
    for (int m = 0; m < M + 3; ++m) {  // rows past M (a partial tile) must gather nothing
      const typename Ix::Row row = row_at(m, g);
      std::vector<double> a(static_cast<size_t>(k_pad), 0.0);
      for (int k = 0; k < k_pad; ++k) {
        if (!Ix::inside(s, row, taps[static_cast<size_t>(k)])) continue;
        EXPECT_LT(m, M);
        EXPECT_LT(k, K);
        const long long off = Ix::offset(s, row, taps[static_cast<size_t>(k)]);
        EXPECT_GE(off, 0);
        EXPECT_LT(off, static_cast<long long>(x.size()));
        if (off < 0 || off >= static_cast<long long>(x.size())) return y;
        a[static_cast<size_t>(k)] = x[static_cast<size_t>(off)];
      }
      if (m >= M) continue;
      const long long pixel = Ix::out_pixel(s, m);
      for (int n = 0; n < OCg; ++n) {
        double acc = 0;
        const float* wg = w.data() + static_cast<size_t>(g) * OCg * K;
        for (int k = 0; k < K; ++k) acc += a[static_cast<size_t>(k)] * wg[static_cast<size_t>(n) * K + k];
        const long long idx = Ix::out_index(s, pixel, g * OCg + n);
        y[static_cast<size_t>(idx)] = acc;
        ++writes[static_cast<size_t>(idx)];
      }
    }
  return y;
}

// The implicit GEMM in all four ways (layout, taps) against the direct convolution on random x, w.
template <typename G>
void compare(const kevo::ConvShape& s) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(static_cast<size_t>(s.N) * s.C * s.D * s.H * s.W),
      wt(static_cast<size_t>(s.OC) * (s.C / G::G) * kevo::ConvIndex<G>::kTaps);  // as many for a transposed one's [C, OC/G, taps]
  for (float& v : x) v = u(rng);
  for (float& v : wt) v = u(rng);
  std::vector<double> want;
  constexpr bool transposed = kevo::GeoTransposed<G>::value;
  if constexpr (transposed) want = direct_transposed<G>(s, x, wt);
  else if constexpr (kevo::GeoHasDepth<G>::value) want = direct3d<G>(s, x, wt);
  else want = direct<G>(s, x, wt);
  int nonzero = 0;
  for (double v : want) nonzero += v != 0;
  EXPECT_GT(nonzero, static_cast<int>(want.size()) / 4) << "outputs that see no input would test nothing";
  for (bool nhwc : {false, true})
    for (bool table : {false, true}) {
      if (transposed && nhwc) continue;  // transposed convolutions gather from NCHW x only
      std::vector<int> writes;
      const std::vector<double> got = implicit_gemm<G>(s, x, wt, table, nhwc, writes);
      ASSERT_EQ(got.size(), want.size()) << "(table " << table << ", nhwc " << nhwc << ")";
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(writes[i], 1) << "y[" << i << "] written " << writes[i] << " times (table " << table << ", nhwc " << nhwc << ")";
        ASSERT_NEAR(got[i], want[i], 1e-9) << "y[" << i << "] (table " << table << ", nhwc " << nhwc << ")";
      }
    }
}

int out_size(int in, int k, int stride, int pad, int dil) { return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1; }

template <typename G>
void check(int n, int c, int h, int w, int oc) {
  compare<G>({n, c, h, w, oc, out_size(h, G::KH, G::SH, G::PH, G::DH), out_size(w, G::KW, G::SW, G::PW, G::DW)});
}

template <typename G>
void check3d(int n, int c, int d, int h, int w, int oc) {
  compare<G>({n, c, h, w, oc, out_size(h, G::KH, G::SH, G::PH, G::DH), out_size(w, G::KW, G::SW, G::PW, G::DW), d,
              out_size(d, G::KD, G::SD, G::PD, G::DD)});
}

TEST(ConvIndexHost, PlainThreeByThree) { check<Geo<3, 3, 1, 1, 0, 0, 1, 1, 1>>(2, 8, 16, 16, 16); }
TEST(ConvIndexHost, StridePaddingDilationGroupsOnOddSizes) { check<Geo<3, 3, 2, 2, 1, 1, 2, 2, 4>>(3, 8, 13, 11, 12); }
TEST(ConvIndexHost, StemSevenBySevenStrideTwoPaddingThree) { check<Geo<7, 7, 2, 2, 3, 3, 1, 1, 1>>(1, 3, 15, 13, 8); }
TEST(ConvIndexHost, UnequalStridesAndPaddingAlongHeightAndWidth) { check<Geo<2, 5, 3, 1, 1, 2, 1, 3, 2>>(2, 4, 10, 17, 6); }
TEST(ConvIndexHost, DepthwiseGroups) { check<Geo<3, 3, 1, 1, 1, 1, 1, 1, 6>>(2, 6, 7, 9, 6); }
TEST(ConvIndexHost, Conv1dAsHeightOne) { check<Geo<1, 5, 1, 1, 0, 2, 1, 1, 1>>(2, 3, 1, 19, 4); }
// Past the 16,384 the lowering once capped sizes at (KernelBench's conv1d runs 131,072 long): far
// rows and taps still fail the bounds check, in-range ones still land.
TEST(ConvIndexHost, Conv1dLongerThanSixteenThousand) { check<Geo<1, 3, 1, 2, 0, 1, 1, 1, 1>>(1, 2, 1, 40001, 3); }

// conv3d: a Geometry with a kernel depth takes Im2col3d, whose packed table entry holds three shifts.
TEST(ConvIndexHost, Conv3dPlainThreeCubed) { check3d<Geo3<3, 3, 3, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1>>(2, 4, 6, 7, 8, 8); }
TEST(ConvIndexHost, Conv3dStrideTwoPaddingDilationGroupsOnOddSizes) {
  check3d<Geo3<3, 3, 3, 2, 2, 2, 1, 1, 1, 2, 2, 2, 4>>(2, 8, 9, 11, 7, 12);
}
TEST(ConvIndexHost, Conv3dUnequalKernelStridesPaddingAndDilationPerDimension) {
  check3d<Geo3<2, 3, 5, 1, 2, 1, 1, 0, 2, 2, 1, 3, 2>>(1, 4, 7, 9, 13, 6);
}
TEST(ConvIndexHost, Conv3dDepthwiseGroupsWithPadding) { check3d<Geo3<3, 1, 3, 1, 1, 2, 1, 0, 1, 1, 1, 1, 4>>(3, 4, 5, 3, 9, 4); }
TEST(ConvIndexHost, Conv3dPointwiseStrideTwo) { check3d<Geo3<1, 1, 1, 2, 2, 2, 0, 0, 0, 1, 1, 1, 1>>(2, 8, 5, 7, 9, 4); }

// Transposed: OH = (H - 1) * SH - 2 * PH + DH * (KH - 1) + output_padding + 1.
int out_size_transposed(int in, int k, int stride, int pad, int dil, int extra) {
  return (in - 1) * stride - 2 * pad + dil * (k - 1) + extra + 1;
}

// conv_transpose2d (1d as height 1) with output paddings {oph, opw}.
template <typename G>
void check_transposed(int n, int c, int h, int w, int oc, int oph, int opw) {
  compare<G>({n, c, h, w, oc, out_size_transposed(h, G::KH, G::SH, G::PH, G::DH, oph),
              out_size_transposed(w, G::KW, G::SW, G::PW, G::DW, opw)});
}
template <typename G>
void check_transposed3d(int n, int c, int d, int h, int w, int oc, int opd, int oph, int opw) {
  compare<G>({n, c, h, w, oc, out_size_transposed(h, G::KH, G::SH, G::PH, G::DH, oph),
              out_size_transposed(w, G::KW, G::SW, G::PW, G::DW, opw), d,
              out_size_transposed(d, G::KD, G::SD, G::PD, G::DD, opd)});
}

// Transposed convolutions: the implicit GEMM over the transposed index math (a tap reads x where the
// output coordinate plus padding minus the tap's shift divides by the stride) against the scatter.
TEST(ConvIndexHost, TransposedStrideOneIsAFullConvolution) { check_transposed<GeoT<3, 3, 1, 1, 0, 0, 1, 1, 1>>(2, 4, 7, 9, 6, 0, 0); }
TEST(ConvIndexHost, TransposedStrideTwoPaddingGroupsAndOutputPadding) {
  check_transposed<GeoT<3, 3, 2, 2, 1, 1, 1, 1, 4>>(2, 8, 9, 7, 12, 1, 1);
}
TEST(ConvIndexHost, TransposedStrideThreeDilationTwoOnOddSizes) {
  check_transposed<GeoT<3, 4, 3, 3, 2, 1, 2, 2, 2>>(1, 6, 5, 7, 4, 2, 1);
}
TEST(ConvIndexHost, TransposedAsymmetricKernelStridesAndPadding) {
  check_transposed<GeoT<2, 5, 1, 3, 0, 2, 1, 1, 1>>(2, 3, 6, 8, 5, 0, 2);
}
TEST(ConvIndexHost, TransposedDepthwise) { check_transposed<GeoT<3, 3, 2, 2, 1, 1, 1, 1, 6>>(2, 6, 5, 6, 6, 0, 1); }
TEST(ConvIndexHost, Transposed1dDilationAndOutputPadding) {
  check_transposed<GeoT<1, 5, 1, 2, 0, 3, 1, 3, 1>>(3, 5, 1, 17, 7, 0, 2);  // output_padding < dilation
}
TEST(ConvIndexHost, Transposed1dStrideThreeGroups) { check_transposed<GeoT<1, 4, 1, 3, 0, 1, 1, 1, 2>>(2, 4, 1, 11, 6, 0, 1); }
TEST(ConvIndexHost, Transposed3dStrideTwoPaddingOutputPadding) {
  check_transposed3d<Geo3T<3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1>>(2, 4, 4, 5, 3, 6, 1, 0, 1);
}
TEST(ConvIndexHost, Transposed3dUnequalPerDimensionWithGroupsAndDilation) {
  check_transposed3d<Geo3T<2, 3, 4, 1, 3, 2, 0, 1, 2, 2, 1, 2, 2>>(1, 4, 3, 4, 5, 6, 1, 2, 1);
}
TEST(ConvIndexHost, Transposed3dStrideThree) {
  check_transposed3d<Geo3T<3, 2, 3, 3, 3, 3, 1, 0, 1, 1, 1, 1, 2>>(2, 6, 3, 4, 3, 4, 2, 1, 0);
}

}  // namespace
