// kevo template family "gemm", row statistics after the GEMM: a softmax, log_softmax or logsumexp
// over N from partials the GEMM's epilogue writes per (row, N tile), so that the light second
// kernel combines a row's partials and reads the stored result once (softmax, log_softmax) or
// not at all (logsumexp), instead of a row kernel's two passes. Plain C++ apart from CUDA's
// qualifiers, shuffles and barriers: tests/lower/host/row_stats_host_test.cpp runs it on the CPU.
#pragma once

#include "../common.cuh"

namespace kevo {

// The running maximum of part of a row and the sum of exp(x - max) over it; empty: (-inf, 0).
struct ExpStat {
  float max, sum;
};

__device__ __forceinline__ ExpStat exp_stat_empty() {
  ExpStat s;
  s.max = -__int_as_float(0x7f800000);
  s.sum = 0.f;
  return s;
}

__device__ __forceinline__ ExpStat exp_stat_push(ExpStat s, float x) {
  if (x == s.max && x == -__int_as_float(0x7f800000)) return s;  // exp(-inf) adds nothing (and -inf - -inf is NaN)
  if (x <= s.max) return {s.max, s.sum + expf(x - s.max)};
  return {x, s.sum * expf(s.max - x) + 1.f};  // a new maximum rescales what came before
}

__device__ __forceinline__ ExpStat exp_stat_merge(ExpStat a, ExpStat b) {
  const float m = fmaxf(a.max, b.max);
  if (m == -__int_as_float(0x7f800000)) return a;  // both empty
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

// Every lane of the warp gets the merge of the 32 lanes' statistics (a fixed butterfly: the
// result does not depend on timing).
__device__ __forceinline__ ExpStat exp_stat_warp(ExpStat s) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const ExpStat o = {__shfl_xor_sync(0xffffffffu, s.max, offset), __shfl_xor_sync(0xffffffffu, s.sum, offset)};
    s = exp_stat_merge(s, o);
  }
  return s;
}

// A value the block stored a moment ago (another thread's, past a barrier): from L2 on the GPU,
// never a stale L1 line.
__device__ __forceinline__ float load_stored(const float* p) {
#ifdef __CUDA_ARCH__
  return __ldcg(p);
#else
  return *p;
#endif
}

// The epilogue's statistics hook (Epilogue's Stats parameter): none.
struct NoRowStats {
  struct Params {};
  static constexpr bool kActive = false;
  template <int kBM, int kBN, int kThreads>
  static __device__ __forceinline__ void tile(const Params&, const float*, int, int, int, int) {}
};

// The ExpStat of each row of the block's stored tile C[m0.., n0..] (fp32 [M, N]) into
// part[row * tiles_n + n0 / kBN], tiles_n = ceil(N / kBN): a warp per row, lanes along N, so a
// partial N tile (N not a multiple of kBN) counts only its columns inside the matrix.
struct RowExpStats {
  struct Params {
    ExpStat* __restrict__ part;
  };
  static constexpr bool kActive = true;
  template <int kBM, int kBN, int kThreads>
  static __device__ __forceinline__ void tile(const Params& p, const float* C, int M, int N, int m0, int n0) {
    static_assert(kThreads % 32 == 0, "a warp per row");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, tiles_n = (N + kBN - 1) / kBN;
    // The same trip count in every warp (a warp past the matrix shuffles empty statistics), so
    // that the loop's shape does not depend on which rows exist.
    for (int r0 = 0; r0 < kBM && m0 + r0 < M; r0 += kThreads / 32) {
      const int r = m0 + r0 + warp;
      const bool inside = r0 + warp < kBM && r < M;
      ExpStat s = exp_stat_empty();
      if (inside)
        for (int c = n0 + lane; c < n0 + kBN && c < N; c += 32) s = exp_stat_push(s, load_stored(C + (long long)r * N + c));
      s = exp_stat_warp(s);
      if (inside && lane == 0) p.part[(long long)r * tiles_n + n0 / kBN] = s;
    }
  }
};

enum class RowOp { Softmax = 0, LogSoftmax = 1, LogSumExp = 2 };

// The second kernel: kThreads threads per row, kRows rows per block (blockDim kThreads * kRows).
// A row's `parts` partials are merged in part order by each thread, then across the row's
// threads in a fixed order; softmax and log_softmax then read the row of x (the stored GEMM
// result) kVec elements at a time and write y; logsumexp writes one value per row.
template <RowOp kOp, int kThreads, int kRows, int kVec>
__device__ __forceinline__ void row_stats_finish(const float* __restrict__ x, const ExpStat* __restrict__ part,
                                                 float* __restrict__ y, int M, int N, int parts) {
  static_assert(kThreads % 32 == 0 && kThreads * kRows <= 1024, "whole warps per row, at most 1024 threads per block");
  static_assert(kVec == 1 || kVec == 2 || kVec == 4, "vector accesses of 1, 2 or 4 floats");
  __shared__ ExpStat warps[kRows][kThreads / 32];
  const int t = threadIdx.x % kThreads, slot = threadIdx.x / kThreads;
  const long long row = (long long)blockIdx.x * kRows + slot;
  ExpStat s = exp_stat_empty();
  if (row < M)
    for (int i = t; i < parts; i += kThreads) s = exp_stat_merge(s, part[row * parts + i]);
  s = exp_stat_warp(s);
  if constexpr (kThreads > 32) {
    if (t % 32 == 0) warps[slot][t / 32] = s;
    __syncthreads();
    s = warps[slot][0];
    for (int w = 1; w < kThreads / 32; ++w) s = exp_stat_merge(s, warps[slot][w]);
  }
  if (row >= M) return;
  const float lse = s.max + logf(s.sum);
  if constexpr (kOp == RowOp::LogSumExp) {
    if (t == 0) y[row] = lse;
  } else {
    const float inv = 1.f / s.sum;
    const float* xr = x + row * N;
    float* yr = y + row * N;
    for (int c = t * kVec; c < N; c += kThreads * kVec) {
      float v[kVec];
      if constexpr (kVec == 4) {
        const float4 q = *reinterpret_cast<const float4*>(xr + c);
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
      } else if constexpr (kVec == 2) {
        const float2 q = *reinterpret_cast<const float2*>(xr + c);
        v[0] = q.x, v[1] = q.y;
      } else {
        v[0] = xr[c];
      }
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] = kOp == RowOp::Softmax ? expf(v[j] - s.max) * inv : v[j] - lse;
      if constexpr (kVec == 4) {
        *reinterpret_cast<float4*>(yr + c) = make_float4(v[0], v[1], v[2], v[3]);
      } else if constexpr (kVec == 2) {
        *reinterpret_cast<float2*>(yr + c) = make_float2(v[0], v[1]);
      } else {
        yr[c] = v[0];
      }
    }
  }
}

}  // namespace kevo
