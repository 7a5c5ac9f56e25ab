// kevo template family "gemm", epilogues: where the accumulators go. The fused epilogue applies
// the op graph's elementwise tail (a generated Tail functor) to each result and stores it, either
// straight from the accumulator registers (pairs of columns) or staged through shared memory
// (rows of 4 columns: wider, coalesced stores); serial split-K adds the earlier splits' partial
// sums from a workspace, in split order, before the last split finishes the tile; a parallel
// split-K (or an epilogue placed in a second kernel) writes raw partials that gemm_reduce sums in
// split order and finishes. A Stats hook (row_stats.cuh) may read the finished tile back for
// per-row partial statistics.
#pragma once

#include "mma.cuh"
#include "row_stats.cuh"

namespace kevo {

enum class SplitK { None = 0, Serial = 1, Parallel = 2 };
enum class EpiloguePlace { Registers = 0, Staged = 1, Kernel = 2 };

// What a kernel of the family reads and writes. ws: fp32 partial sums ([splits, M, N] for a
// parallel split or a second-kernel epilogue, [M, N] for a serial split); flags: one int per tile
// (serial split: how many splits have added their part), zeroed by gemm_zero_flags before.
template <typename T, typename TOut>
struct GemmOperands {
  const T* __restrict__ A;
  const T* __restrict__ B;
  TOut* __restrict__ C;
  float* __restrict__ ws;
  int* __restrict__ flags;
  int M, N, K;
};

// A graph without elementwise tail.
struct NoTail {
  struct Params {};
  static __device__ __forceinline__ float apply(const Params&, float v, long long, long long) { return v; }
};

__device__ __forceinline__ int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release(int* p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

template <int kVec>
__device__ __forceinline__ void load_partial(float (&r)[kVec], const float* p) {
  // Written by another block of this launch: read from L2, never from a stale L1 line.
  if constexpr (kVec == 4) {
    const float4 t = __ldcg(reinterpret_cast<const float4*>(p));
    r[0] = t.x, r[1] = t.y, r[2] = t.z, r[3] = t.w;
  } else {
    const float2 t = __ldcg(reinterpret_cast<const float2*>(p));
    r[0] = t.x, r[1] = t.y;
  }
}

template <typename T, typename TOut, SplitK kSplit, int kSplits, EpiloguePlace kPlace, typename Tail,
          typename Stats = NoRowStats>
struct Epilogue {
  static_assert((kSplit == SplitK::None) == (kSplits == 1), "split-K has two splits or more, no split one");
  static_assert(kSplit != SplitK::Parallel || kPlace == EpiloguePlace::Kernel,
                "a parallel split-K finishes in its reduction kernel");
  static_assert(!Stats::kActive || (kSplit == SplitK::None && kPlace != EpiloguePlace::Kernel),
                "row statistics read the finished tile: no split-K, no second kernel");

  const GemmOperands<T, TOut>& op;
  const typename Tail::Params& tp;
  int split;
  typename Stats::Params sp;

  // kVec consecutive results of the block at (r, c), inside the matrix.
  template <int kVec>
  __device__ __forceinline__ void visit(int r, int c, float (&v)[kVec]) const {
    const long long idx = (long long)r * op.N + c;
    if constexpr (kPlace == EpiloguePlace::Kernel) {
      store_vec<kVec>(op.ws + (long long)split * op.M * op.N + idx, v);
      return;
    } else {
      if constexpr (kSplit == SplitK::Serial) {
        if (split > 0) {
          float w[kVec];
          load_partial<kVec>(w, op.ws + idx);
#pragma unroll
          for (int j = 0; j < kVec; ++j) v[j] += w[j];
        }
        if (split < kSplits - 1) {
          store_vec<kVec>(op.ws + idx, v);
          return;
        }
      }
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] = Tail::apply(tp, v[j], r, c + j);
      store_out<kVec>(op.C + idx, v);
    }
  }

  // A barrier of the kThreads threads that run the epilogue (the block's first ones): all of the
  // block's, but on the TMA path, whose producer warpgroup has left.
  template <int kThreads>
  static __device__ __forceinline__ void sync() {
    asm volatile("bar.sync 1, %0;\n" ::"n"(kThreads) : "memory");
  }

  // Serial split-K: wait until the splits before this one have added their parts to the tile.
  template <int kThreads>
  __device__ __forceinline__ void wait_turn(int tile) const {
    if constexpr (kSplit == SplitK::Serial) {
      if (split > 0) {
        if (threadIdx.x == 0)
          while (load_acquire(op.flags + tile) != split) __nanosleep(64);
        sync<kThreads>();
      }
    }
  }
  template <int kThreads>
  __device__ __forceinline__ void pass_turn(int tile) const {
    if constexpr (kSplit == SplitK::Serial) {
      if (split < kSplits - 1) {
        __threadfence();
        sync<kThreads>();
        if (threadIdx.x == 0) store_release(op.flags + tile, split + 1);
      }
    }
  }

  // The accumulators of `main` (a mainloop with for_each_pair) for the block tile at (m0, n0).
  template <int kBM, int kBN, int kThreads, typename Main>
  __device__ __forceinline__ void run(const Main& main, int m0, int n0, int tile, char* smem) const {
    wait_turn<kThreads>(tile);
    if constexpr (kPlace == EpiloguePlace::Staged) {
      // Every warp is past its last read of the pipeline's stages (the mainloop ends with its
      // copies drained), so the staging tile may reuse them.
      constexpr int kLd = kBN + 4;  // padding: the pairs of 8 rows land in different banks
      float* st = reinterpret_cast<float*>(smem);
      sync<kThreads>();
      main.for_each_pair([&](int r, int c, float v0, float v1) {
        *reinterpret_cast<float2*>(st + r * kLd + c) = make_float2(v0, v1);
      });
      sync<kThreads>();
#pragma unroll 4
      for (int q = threadIdx.x; q < kBM * kBN / 4; q += kThreads) {
        const int rl = q / (kBN / 4), cl = q % (kBN / 4) * 4;
        if (m0 + rl < op.M && n0 + cl < op.N) {
          float v[4];
          load_vec<4>(v, st + rl * kLd + cl);
          visit<4>(m0 + rl, n0 + cl, v);
        }
      }
    } else {
      main.for_each_pair([&](int r, int c, float v0, float v1) {
        if (m0 + r < op.M && n0 + c < op.N) {
          float v[2] = {v0, v1};
          visit<2>(m0 + r, n0 + c, v);
        }
      });
    }
    pass_turn<kThreads>(tile);
    if constexpr (Stats::kActive) {
      // bar.sync orders the tile's stores before every epilogue thread's reads of them.
      sync<kThreads>();
      Stats::template tile<kBM, kBN, kThreads>(sp, op.C, op.M, op.N, m0, n0);
    }
  }
};

// The second kernel of a parallel split-K (or of an epilogue placed after the GEMM): sums the
// partials in split order, applies the tail, stores. One thread per pair of columns.
template <typename TOut, typename Tail>
__device__ __forceinline__ void gemm_reduce(const float* __restrict__ ws, TOut* __restrict__ C, int M, int N,
                                            int splits, const typename Tail::Params& tp) {
  const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 2, mn = (long long)M * N;
  if (i >= mn) return;
  float v[2] = {0.f, 0.f};
  for (int s = 0; s < splits; ++s) {
    float w[2];
    load_vec<2>(w, ws + s * mn + i);
    v[0] += w[0], v[1] += w[1];
  }
  const long long r = i / N, c = i - r * N;
  v[0] = Tail::apply(tp, v[0], r, c);
  v[1] = Tail::apply(tp, v[1], r, c + 1);
  store_out<2>(C + i, v);
}

// Serial split-K's turn counters start at zero in every run (scratch holds no state).
__device__ __forceinline__ void gemm_zero_flags(int* flags, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = 0;
}

}  // namespace kevo
