// kevo template family "gemm", the mma.sync path (legal on sm_90a, sm_100a and sm_103a): a block
// tile kBM x kBN, kWarpsM x kWarpsN warps each owning a (kBM/kWarpsM) x (kBN/kWarpsN) slice of
// m16n8 accumulators, and a kStages-deep cp.async pipeline over K. 16-bit fragments come from
// ldmatrix (transposed for B stored [k][n]); fp32 fragments are scalar loads, rounded to TF32
// (and split into high part and residual for 3xTF32) in registers; promoted 3xTF32 adds each k
// step's products into the accumulators on the CUDA cores.
#pragma once

#include "smem.cuh"

namespace kevo {

template <typename T, Precision kPrec, int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages, BLayout kB>
struct SyncMainloop {
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;  // a warp's slice
  static constexpr bool kBf16x3 = kPrec == Precision::Bf16x3;
  static constexpr int kMmaK = kBf16x3 ? 16 : Element<T>::kMmaK;
  static constexpr int kMT = kWM / 16, kNT = kWN / 8;  // m16n8 tiles per warp
  static constexpr bool kFp32 = Element<T>::kBytes == 4;
  using TileA = SmemTile<T, kBM, kBK, false>;
  using TileB = typename If<kB == BLayout::KMajor, SmemTile<T, kBN, kBK, false>, SmemTile<T, kBK, kBN, kFp32>>::type;
  static constexpr int kStageBytes = TileA::kBytes + TileB::kBytes;
  static constexpr int kSharedBytes = kStages * kStageBytes;

  static_assert(kStages >= 2, "a pipeline has at least two stages");
  static_assert(kThreads <= 1024, "threads per block");
  static_assert(kWM % 16 == 0 && kWN % (kFp32 ? 8 : 16) == 0,
                "a warp's slice is whole m16n8 tiles (n16 pairs for ldmatrix.x4 of 16-bit B)");
  static_assert(kBK % kMmaK == 0, "the K tile is whole mma steps");
  static_assert(kFp32 == (kPrec != Precision::Native), "fp32 operands take split or TF32 products, 16-bit ones native");

  float acc[kMT][kNT][4];

  // Accumulates k tiles [kt_begin, kt_end) of the output tile at (m0, n0). A is [M, K] row-major.
  __device__ __forceinline__ void run(const T* __restrict__ A, const T* __restrict__ B, int M, int N, int K, int m0,
                                      int n0, int kt_begin, int kt_end, char* smem) {
    const int tid = threadIdx.x;
    pipeline(
        [&](unsigned a, unsigned b, int kt) {
          TileA::template load<kThreads>(a, A, K, m0, kt * kBK, M, K, tid);
          if constexpr (kB == BLayout::KMajor)
            TileB::template load<kThreads>(b, B, K, n0, kt * kBK, N, K, tid);
          else
            TileB::template load<kThreads>(b, B, N, kt * kBK, n0, K, N, tid);
        },
        kt_begin, kt_end, smem);
  }

  // The pipeline over k tiles [kt_begin, kt_end) with the tiles' loads left to the caller:
  // load(a, b, kt) fills (cp.async, or plain shared-memory stores) the A and B tiles of k tile kt
  // at shared addresses a and b in TileA's and TileB's layouts. The implicit-GEMM convolution
  // (templates/conv/) gathers its A tile this way.
  template <typename Load>
  __device__ __forceinline__ void pipeline(Load&& load, int kt_begin, int kt_end, char* smem) {
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    const unsigned base = shared_address(smem);
    const int tiles = kt_end - kt_begin;
    auto load_stage = [&](int stage, int kt) {
      const unsigned a = base + stage * kStageBytes;
      load(a, a + TileA::kBytes, kt);
    };
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < tiles) load_stage(s, kt_begin + s);
      cp_async_commit();
    }
    for (int i = 0; i < tiles; ++i) {
      cp_async_wait<kStages - 2>();
      // Every thread's copies of tile i have landed, and every warp is done with tile i - 1,
      // whose stage the next copy overwrites.
      __syncthreads();
      const int next = i + kStages - 1;
      if (next < tiles) load_stage(next % kStages, kt_begin + next);
      cp_async_commit();
      compute(smem + (i % kStages) * kStageBytes);
    }
    cp_async_wait<0>();
  }

  // The warp's row and column offsets inside the block tile, and the lane's place in a fragment.
  static __device__ __forceinline__ int warp_m() { return (threadIdx.x / 32) % kWarpsM * kWM; }
  static __device__ __forceinline__ int warp_n() { return (threadIdx.x / 32) / kWarpsM * kWN; }

  // f(row, col, v0, v1) for every pair of accumulators (columns col, col + 1 of the block tile).
  template <typename F>
  __device__ __forceinline__ void for_each_pair(F&& f) const {
    const int lane = threadIdx.x % 32, wm = warp_m(), wn = warp_n();
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          f(wm + i * 16 + lane / 4 + h * 8, wn + j * 8 + lane % 4 * 2, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
  }

 private:
  __device__ __forceinline__ void compute(const char* stage) {
    const char* sa = stage;
    const char* sb = stage + TileA::kBytes;
    const int lane = threadIdx.x % 32, wm = warp_m(), wn = warp_n();
#pragma unroll
    for (int kk = 0; kk < kBK; kk += kMmaK) {
      if constexpr (kBf16x3)
        step_bf16x3(sa, sb, lane, wm, wn, kk);
      else if constexpr (kFp32)
        step_tf32(sa, sb, lane, wm, wn, kk);
      else
        step_16bit(sa, sb, lane, wm, wn, kk);
    }
  }

  static __device__ __forceinline__ float lds(const char* tile, int off) {
    return *reinterpret_cast<const float*>(tile + off);
  }

  __device__ __forceinline__ void step_tf32(const char* sa, const char* sb, int lane, int wm, int wn, int kk) {
    const int g = lane / 4, t = lane % 4;
    unsigned a_big[kMT][4], a_small[kMT][4];
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
      const int r = wm + i * 16 + g;
      const float x[4] = {lds(sa, TileA::offset(r, kk + t)), lds(sa, TileA::offset(r + 8, kk + t)),
                          lds(sa, TileA::offset(r, kk + t + 4)), lds(sa, TileA::offset(r + 8, kk + t + 4))};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if constexpr (kSplitsTf32<kPrec>)
          split_tf32(x[e], a_big[i][e], a_small[i][e]);
        else
          a_big[i][e] = to_tf32(x[e]);
      }
    }
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
      const int n = wn + j * 8 + g;
      float y[2];
      if constexpr (kB == BLayout::KMajor) {
        y[0] = lds(sb, TileB::offset(n, kk + t));
        y[1] = lds(sb, TileB::offset(n, kk + t + 4));
      } else {
        y[0] = lds(sb, TileB::offset(kk + t, n));
        y[1] = lds(sb, TileB::offset(kk + t + 4, n));
      }
      unsigned b_big[2], b_small[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if constexpr (kSplitsTf32<kPrec>)
          split_tf32(y[e], b_big[e], b_small[e]);
        else
          b_big[e] = to_tf32(y[e]);
      }
#pragma unroll
      for (int i = 0; i < kMT; ++i) {
        if constexpr (kPrec == Precision::Tf32x3Promoted) {
          float step[4] = {0.f, 0.f, 0.f, 0.f};
          mma_sync<T>(step, a_small[i], b_big);
          mma_sync<T>(step, a_big[i], b_small);
          mma_sync<T>(step, a_big[i], b_big);
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j][e] += step[e];
        } else {
          if constexpr (kPrec == Precision::Tf32x3) {
            // The small terms first, so that they are not lost beside the large one.
            mma_sync<T>(acc[i][j], a_small[i], b_big);
            mma_sync<T>(acc[i][j], a_big[i], b_small);
          }
          mma_sync<T>(acc[i][j], a_big[i], b_big);
        }
      }
    }
  }

  // fp32 pairs along K, split into bf16 high and low parts in registers (the m16n8k16 fragments
  // hold pairs of consecutive k).
  __device__ __forceinline__ void step_bf16x3(const char* sa, const char* sb, int lane, int wm, int wn, int kk) {
    const int g = lane / 4, t = lane % 4;
    auto pair = [](const char* tile, int off) { return *reinterpret_cast<const float2*>(tile + off); };
    unsigned a_hi[kMT][4], a_lo[kMT][4];
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
      const int r = wm + i * 16 + g;
      const float2 x[4] = {pair(sa, TileA::offset(r, kk + 2 * t)), pair(sa, TileA::offset(r + 8, kk + 2 * t)),
                           pair(sa, TileA::offset(r, kk + 2 * t + 8)), pair(sa, TileA::offset(r + 8, kk + 2 * t + 8))};
#pragma unroll
      for (int e = 0; e < 4; ++e) split_bf16x2(x[e].x, x[e].y, a_hi[i][e], a_lo[i][e]);
    }
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
      const int n = wn + j * 8 + g;
      float2 y[2];
      if constexpr (kB == BLayout::KMajor) {
        y[0] = pair(sb, TileB::offset(n, kk + 2 * t));
        y[1] = pair(sb, TileB::offset(n, kk + 2 * t + 8));
      } else {
        y[0] = make_float2(lds(sb, TileB::offset(kk + 2 * t, n)), lds(sb, TileB::offset(kk + 2 * t + 1, n)));
        y[1] = make_float2(lds(sb, TileB::offset(kk + 2 * t + 8, n)), lds(sb, TileB::offset(kk + 2 * t + 9, n)));
      }
      unsigned b_hi[2], b_lo[2];
      split_bf16x2(y[0].x, y[0].y, b_hi[0], b_lo[0]);
      split_bf16x2(y[1].x, y[1].y, b_hi[1], b_lo[1]);
#pragma unroll
      for (int i = 0; i < kMT; ++i) {
        mma_sync<bf16>(acc[i][j], a_lo[i], b_hi);
        mma_sync<bf16>(acc[i][j], a_hi[i], b_lo);
        mma_sync<bf16>(acc[i][j], a_hi[i], b_hi);
      }
    }
  }

  __device__ __forceinline__ void step_16bit(const char* sa, const char* sb, int lane, int wm, int wn, int kk) {
    const unsigned a_base = shared_address(sa), b_base = shared_address(sb);
    unsigned a[kMT][4];
#pragma unroll
    for (int i = 0; i < kMT; ++i)
      ldmatrix_x4<false>(a[i], a_base + TileA::offset(wm + i * 16 + lane % 16, kk + lane / 16 * 8));
#pragma unroll
    for (int j = 0; j < kNT; j += 2) {
      unsigned b[4];
      if constexpr (kB == BLayout::KMajor)
        ldmatrix_x4<false>(b, b_base + TileB::offset(wn + j * 8 + lane % 8 + lane / 16 * 8, kk + (lane / 8) % 2 * 8));
      else
        ldmatrix_x4<true>(b, b_base + TileB::offset(kk + lane % 8 + (lane / 8) % 2 * 8, wn + j * 8 + lane / 16 * 8));
      const unsigned b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
#pragma unroll
      for (int i = 0; i < kMT; ++i) {
        mma_sync<T>(acc[i][j], a[i], b0);
        mma_sync<T>(acc[i][j + 1], a[i], b1);
      }
    }
  }
};

}  // namespace kevo
