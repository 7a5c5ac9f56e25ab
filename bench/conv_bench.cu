// The conv family on one GPU, without kevo: instances of templates/conv checked against a direct
// convolution accumulated in fp64 (at the tasks' tolerance, 1e-4) and timed (TFLOP/s), on task
// 14's workload and KernelBench-like shapes (odd sizes, stride 2, padding, dilation, groups, a
// 7x7 stem with K = 147, a padded 3x3x3 conv3d). cuDNN, eager and torch.compile are timed by
// bench/conv_torch.py.
// SHAPE picks one problem, so that bench/conv_bench.sh compiles the shapes in parallel.
// nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DSHAPE=1 bench/conv_bench.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../templates/conv/conv.cuh"

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

template <int kKH, int kKW, int kS, int kP, int kD, int kG>
struct Geo {
  static constexpr int KH = kKH, KW = kKW, SH = kS, SW = kS, PH = kP, PW = kP, DH = kD, DW = kD, G = kG;
};
// A conv3d's: a cubic kernel, the same stride, padding and dilation along the depth.
template <int kK, int kS, int kP, int kD, int kG>
struct Geo3 : Geo<kK, kK, kS, kP, kD, kG> {
  static constexpr int KD = kK, SD = kS, PD = kP, DD = kD;
};
// The depth's constants of either (a conv2d is a conv3d of depth 1 here, in the reference only).
template <typename Gx, typename = int>
struct Depth {
  static constexpr int KD = 1, SD = 1, PD = 0, DD = 1;
};
template <typename Gx>
struct Depth<Gx, decltype((void)Gx::KD, 0)> {
  static constexpr int KD = Gx::KD, SD = Gx::SD, PD = Gx::PD, DD = Gx::DD;
};

// The problems: task 14 (3x3, no padding), a grouped strided dilated conv on odd sizes, a 7x7
// stem (stride 2, padding 3, K = 147), a padded 3x3 with many channels on a small odd image, a
// padded 3x3x3 conv3d (K = 864; D = 1 for the others).
constexpr int kDepth = SHAPE == 5 ? 16 : 1;
#if SHAPE == 1
using G = Geo<3, 3, 1, 0, 1, 1>;
constexpr int N = 128, C = 64, OC = 128, H = 128, W = 128;
constexpr const char* kName = "task14";
#elif SHAPE == 2
using G = Geo<3, 3, 2, 1, 2, 4>;
constexpr int N = 32, C = 64, OC = 128, H = 57, W = 45;
constexpr const char* kName = "grouped_s2_d2";
#elif SHAPE == 3
using G = Geo<7, 7, 2, 3, 1, 1>;
constexpr int N = 32, C = 3, OC = 64, H = 224, W = 224;
constexpr const char* kName = "stem7x7";
#elif SHAPE == 5
using G = Geo3<3, 1, 1, 1, 1>;
constexpr int N = 16, C = 32, OC = 64, H = 64, W = 64;
constexpr const char* kName = "conv3d_pad1";
#else
using G = Geo<3, 3, 1, 1, 1, 1>;
constexpr int N = 32, C = 256, OC = 256, H = 31, W = 31;
constexpr const char* kName = "pad1_c256";
#endif
using GD = Depth<G>;
constexpr int D = kDepth, OD = (D + 2 * GD::PD - GD::DD * (GD::KD - 1) - 1) / GD::SD + 1;
constexpr int OH = (H + 2 * G::PH - G::DH * (G::KH - 1) - 1) / G::SH + 1;
constexpr int OW = (W + 2 * G::PW - G::DW * (G::KW - 1) - 1) / G::SW + 1;
constexpr int K = C / G::G * GD::KD * G::KH * G::KW;

// Task 14's tail: relu(acc + b[ch]) + b2[ch].
struct Tail14 {
  struct Params {
    const float* b;
    const float* b2;
  };
  static __device__ __forceinline__ float apply(const Params& p, float v, long long, int ch) {
    return fmaxf(v + p.b[ch], 0.f) + p.b2[ch];
  }
};

__global__ void __launch_bounds__(256) x_nhwc_kernel(const float* x, float* xt) {
  kevo::conv_x_to_nhwc<float>(x, xt, C, D * H * W);
}
__global__ void __launch_bounds__(256) w_nhwc_kernel(const float* w, float* wt) {
  kevo::conv_w_to_nhwc<float, G>(w, wt, OC, C / G::G);
}

template <typename Cfg>
__global__ void __launch_bounds__(Cfg::kThreads) conv_kernel(kevo::ConvOperands<float, float> op, Tail14::Params tp) {
  kevo::conv2d<Cfg, G, Tail14>(op, tp);  // conv3d's index math where G has a depth (kevo::ConvIndex)
}

// The reference: one thread per output, fp64 accumulation, the tail in fp64.
__global__ void direct_kernel(const float* x, const float* w, const float* b, const float* b2, float* y) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)N * OC * OD * OH * OW) return;
  const int ow = i % OW, oh = i / OW % OH, od = i / ((long long)OW * OH) % OD;
  const int oc = i / ((long long)OW * OH * OD) % OC, n = i / ((long long)OW * OH * OD * OC);
  const int cg = C / G::G, g = oc / (OC / G::G);
  double acc = 0;
  for (int c = 0; c < cg; ++c)
    for (int t = 0; t < GD::KD; ++t)
      for (int r = 0; r < G::KH; ++r)
        for (int q = 0; q < G::KW; ++q) {
          const int id = od * GD::SD - GD::PD + t * GD::DD, ih = oh * G::SH - G::PH + r * G::DH,
                    iw = ow * G::SW - G::PW + q * G::DW;
          if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
          acc += double(x[((((long long)n * C + g * cg + c) * D + id) * H + ih) * W + iw]) *
                 w[(((oc * cg + c) * GD::KD + t) * G::KH + r) * G::KW + q];
        }
  y[i] = float(fmax(acc + b[oc], 0.0) + b2[oc]);
}

float time_ms(const std::function<void()>& f, int reps = 20) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t s, e;
  cudaEventCreate(&s), cudaEventCreate(&e);
  std::vector<float> t;
  for (int r = 0; r < 3; ++r) {
    cudaEventRecord(s);
    for (int i = 0; i < reps; ++i) f();
    cudaEventRecord(e);
    CHECK(cudaEventSynchronize(e));
    float ms;
    cudaEventElapsedTime(&ms, s, e);
    t.push_back(ms / reps);
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

struct Buffers {
  float *x, *w, *b, *b2, *y, *ref, *xt, *wt;  // xt, wt: the NHWC plan's copies
  size_t ny;
  std::vector<float> ref_host;
};

template <typename Cfg>
void run(const char* label, const Buffers& d, int& failures) {
  if (Cfg::kSharedBytes > 232448) {
    std::printf("skip %s: %d bytes of shared memory\n", label, Cfg::kSharedBytes);
    return;
  }
  CHECK(cudaFuncSetAttribute(conv_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSharedBytes));
  constexpr bool kNhwc = Cfg::kLayout == kevo::ConvLayout::Nhwc;
  const kevo::ConvOperands<float, float> op{kNhwc ? d.xt : d.x, kNhwc ? d.wt : d.w, d.y, {N, C, H, W, OC, OH, OW, D, OD}};
  const Tail14::Params tp{d.b, d.b2};
  const int tiles = ((N * OD * OH * OW + Cfg::kBM - 1) / Cfg::kBM) * ((OC / G::G + Cfg::kBN - 1) / Cfg::kBN);
  // The whole plan: with NHWC, the two copies first (timed with the convolution).
  auto launch = [&] {
    if (kNhwc) {
      x_nhwc_kernel<<<dim3((D * H * W + 31) / 32, (C + 31) / 32, N), dim3(32, 8)>>>(d.x, d.xt);
      w_nhwc_kernel<<<(OC * K + 255) / 256, 256>>>(d.w, d.wt);
    }
    conv_kernel<Cfg><<<dim3(tiles, G::G), Cfg::kThreads, Cfg::kSharedBytes>>>(op, tp);
  };
  CHECK(cudaMemset(d.y, 0xff, d.ny * 4));  // poison: NaN where nothing is written
  launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> y(d.ny);
  const std::vector<float>& ref = d.ref_host;
  CHECK(cudaMemcpy(y.data(), d.y, d.ny * 4, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < d.ny; ++i) {
    const double e = std::fabs(double(y[i]) - ref[i]);
    if (!(e <= 1e-4 + 1e-4 * std::fabs(ref[i]))) ++bad;
    if (!(e <= worst)) worst = e;
  }
  const double flop = 2.0 * N * OD * OH * OW * OC * K;
  const float ms = time_ms(launch);
  std::printf("%s %-14s %-44s %s max err %.2e  %8.3f ms %7.1f TFLOP/s\n", bad ? "FAIL" : "ok  ", kName, label,
              bad ? (std::to_string(bad) + " bad").c_str() : "", worst, ms, flop / ms / 1e9);
  failures += bad != 0;
}

using P = kevo::Precision;
using R = kevo::Raster;
using O = kevo::TapOffsets;
using E = kevo::ConvEpilogue;
constexpr kevo::WeightCopy kCopy = K % 4 == 0 ? kevo::WeightCopy::Chunk16 : kevo::WeightCopy::Chunk4;
using L = kevo::ConvLayout;
template <P kP, int BM, int BN, int BK, int WM, int WN, int S, O kO, E kE, L kL = L::Nchw>
using Cfg = kevo::ConvConfig<float, float, kP, BM, BN, BK, WM, WN, S, R::RowMajor, 8, kO, kL, kCopy, kE, (K + BK - 1) / BK * BK>;
constexpr bool kNhwcOk = (C / G::G) % 4 == 0;  // the NHWC gather's 16-byte chunks of channels

int main() {
  std::printf("%s: N=%d C=%d OC=%d D=%d H=%d W=%d -> %dx%dx%d, K=%d, groups %d\n", kName, N, C, OC, D, H, W, OD, OH, OW,
              K, G::G);
  Buffers d;
  const size_t nx = (size_t)N * C * D * H * W, nw = (size_t)OC * K;
  d.ny = (size_t)N * OC * OD * OH * OW;
  std::mt19937 rng(14);
  std::uniform_real_distribution<float> u01(0.f, 1.f), uw(-1.f / std::sqrt(float(K)), 1.f / std::sqrt(float(K)));
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(nx), w(nw), b(OC), b2(OC);
  for (auto& v : x) v = u01(rng);
  for (auto& v : w) v = uw(rng);
  for (auto& v : b) v = uw(rng);
  for (auto& v : b2) v = nd(rng);
  CHECK(cudaMalloc(&d.x, nx * 4));
  CHECK(cudaMalloc(&d.w, nw * 4));
  CHECK(cudaMalloc(&d.b, OC * 4));
  CHECK(cudaMalloc(&d.b2, OC * 4));
  CHECK(cudaMalloc(&d.y, d.ny * 4));
  CHECK(cudaMalloc(&d.ref, d.ny * 4));
  CHECK(cudaMalloc(&d.xt, nx * 4));
  CHECK(cudaMalloc(&d.wt, nw * 4));
  CHECK(cudaMemcpy(d.x, x.data(), nx * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d.w, w.data(), nw * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d.b, b.data(), OC * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d.b2, b2.data(), OC * 4, cudaMemcpyHostToDevice));
  direct_kernel<<<int((d.ny + 255) / 256), 256>>>(d.x, d.w, d.b, d.b2, d.ref);
  CHECK(cudaDeviceSynchronize());
  d.ref_host.resize(d.ny);
  CHECK(cudaMemcpy(d.ref_host.data(), d.ref, d.ny * 4, cudaMemcpyDeviceToHost));
  int failures = 0;
  run<Cfg<P::Tf32x3, 128, 128, 32, 2, 2, 3, O::Table, E::Staged>>("3xTF32 128x128x32 w2x2 s3 table staged", d, failures);
  run<Cfg<P::Tf32x3, 128, 128, 32, 4, 2, 4, O::Computed, E::Staged>>("3xTF32 128x128x32 w4x2 s4 computed staged", d, failures);
  run<Cfg<P::Tf32x3, 128, 64, 32, 4, 1, 4, O::Table, E::Registers>>("3xTF32 128x64x32 w4x1 s4 table regs", d, failures);
  run<Cfg<P::Bf16x3, 128, 128, 32, 2, 2, 3, O::Table, E::Staged>>("3xbf16 128x128x32 w2x2 s3 table staged", d, failures);
  run<Cfg<P::Bf16x3, 128, 128, 32, 4, 2, 4, O::Computed, E::Staged>>("3xbf16 128x128x32 w4x2 s4 computed staged", d, failures);
  run<Cfg<P::Bf16x3, 256, 128, 32, 4, 2, 3, O::Table, E::Staged>>("3xbf16 256x128x32 w4x2 s3 table staged", d, failures);
  run<Cfg<P::Bf16x3, 128, 64, 64, 4, 1, 3, O::Table, E::Registers>>("3xbf16 128x64x64 w4x1 s3 table regs", d, failures);
  run<Cfg<P::Bf16x3, 64, 128, 32, 2, 2, 4, O::Computed, E::Staged>>("3xbf16 64x128x32 w2x2 s4 computed staged", d, failures);
  if constexpr (kNhwcOk) {
    run<Cfg<P::Tf32x3, 128, 128, 32, 4, 2, 3, O::Computed, E::Staged, L::Nhwc>>("NHWC 3xTF32 128x128x32 w4x2 s3 computed staged", d, failures);
    run<Cfg<P::Tf32x3, 128, 128, 32, 4, 2, 4, O::Table, E::Staged, L::Nhwc>>("NHWC 3xTF32 128x128x32 w4x2 s4 table staged", d, failures);
    run<Cfg<P::Tf32x3, 128, 64, 32, 2, 2, 4, O::Computed, E::Staged, L::Nhwc>>("NHWC 3xTF32 128x64x32 w2x2 s4 computed staged", d, failures);
    run<Cfg<P::Bf16x3, 128, 128, 32, 4, 2, 3, O::Computed, E::Staged, L::Nhwc>>("NHWC 3xbf16 128x128x32 w4x2 s3 computed staged", d, failures);
    run<Cfg<P::Bf16x3, 128, 128, 32, 4, 2, 4, O::Table, E::Staged, L::Nhwc>>("NHWC 3xbf16 128x128x32 w4x2 s4 table staged", d, failures);
    run<Cfg<P::Bf16x3, 256, 128, 32, 4, 2, 3, O::Computed, E::Staged, L::Nhwc>>("NHWC 3xbf16 256x128x32 w4x2 s3 computed staged", d, failures);
    run<Cfg<P::Bf16x3, 128, 256, 32, 2, 4, 3, O::Computed, E::Staged, L::Nhwc>>("NHWC 3xbf16 128x256x32 w2x4 s3 computed staged", d, failures);
    run<Cfg<P::Bf16x3, 128, 128, 64, 4, 2, 3, O::Computed, E::Registers, L::Nhwc>>("NHWC 3xbf16 128x128x64 w4x2 s3 computed regs", d, failures);
    run<Cfg<P::Bf16x3, 64, 128, 32, 2, 2, 4, O::Computed, E::Staged, L::Nhwc>>("NHWC 3xbf16 64x128x32 w2x2 s4 computed staged", d, failures);
  }
  std::printf("%s: %d failure(s)\n", kName, failures);
  return failures != 0;
}
