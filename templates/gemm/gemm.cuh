// kevo template family "gemm": C[M, N] = tail(A[M, K] @ op(B)) on the tensor cores, with A
// row-major and B either [N, K] (a linear layer's weight) or [K, N]. The knobs are the template
// parameters of GemmConfig: instruction path (mma.sync everywhere; wgmma on sm_90a), element
// types, precision mode, block tile, warps, pipeline stages, B's layout, raster order and band
// width, split-K (none, serial through a workspace, parallel with a reduction kernel) and where
// the epilogue runs. The elementwise tail is a generated functor (Tail::apply).
#pragma once

#include "epilogue.cuh"
#include "sync.cuh"
#include "wgmma.cuh"

namespace kevo {

// mma.sync (m16n8k8 TF32, m16n8k16 bf16/fp16): sm_80 and later, sm_100a/sm_103a included.
// wgmma (warpgroup MMA from shared memory, m64nNk8/k16): sm_90a only.
enum class MmaPath { Sync = 0, Wgmma = 1 };

template <MmaPath kPath, typename T_, typename TOut_, Precision kPrec, int kBM_, int kBN_, int kBK_, int kWarpsM,
          int kWarpsN, int kStages, BLayout kB, Raster kRaster_, int kGroup_, SplitK kSplit_, int kSplits_,
          EpiloguePlace kPlace_>
struct GemmConfig {
  using T = T_;
  using TOut = TOut_;
  using Mainloop = typename If<kPath == MmaPath::Sync,
                               SyncMainloop<T, kPrec, kBM_, kBN_, kBK_, kWarpsM, kWarpsN, kStages, kB>,
                               WgmmaMainloop<T, kPrec, kBM_, kBN_, kBK_, kWarpsM, kWarpsN, kStages, kB>>::type;
  static constexpr int kBM = kBM_, kBN = kBN_, kBK = kBK_, kGroup = kGroup_, kSplits = kSplits_;
  static constexpr Raster kRaster = kRaster_;
  static constexpr SplitK kSplit = kSplit_;
  static constexpr EpiloguePlace kPlace = kPlace_;
  static constexpr int kThreads = Mainloop::kThreads;
  static constexpr int kStagedBytes = kPlace == EpiloguePlace::Staged ? kBM * (kBN + 4) * 4 : 0;
  // Dynamic shared memory of the GEMM kernel: the pipeline's stages, or the staging tile that reuses them.
  static constexpr int kSharedBytes = Mainloop::kSharedBytes > kStagedBytes ? Mainloop::kSharedBytes : kStagedBytes;
  static_assert(kGroup >= 1, "a raster band is at least one tile wide");
};

// One block per output tile (blockIdx.x, in raster order) and K split (blockIdx.y).
template <typename Cfg, typename Tail>
__device__ __forceinline__ void gemm(const GemmOperands<typename Cfg::T, typename Cfg::TOut>& op,
                                     const typename Tail::Params& tp) {
  extern __shared__ __align__(1024) char smem[];
  const int tiles_m = (op.M + Cfg::kBM - 1) / Cfg::kBM, tiles_n = (op.N + Cfg::kBN - 1) / Cfg::kBN;
  int tm, tn;
  tile_of<Cfg::kRaster, Cfg::kGroup>(blockIdx.x, tiles_m, tiles_n, tm, tn);
  const int split = blockIdx.y;
  constexpr int kBK = Cfg::kBK;
  const int k_tiles = (op.K + kBK - 1) / kBK, per_split = (k_tiles + Cfg::kSplits - 1) / Cfg::kSplits;
  const int kt0 = min(split * per_split, k_tiles), kt1 = min(kt0 + per_split, k_tiles);
  typename Cfg::Mainloop main;
  main.run(op.A, op.B, op.M, op.N, op.K, tm * Cfg::kBM, tn * Cfg::kBN, kt0, kt1, smem);
  const Epilogue<typename Cfg::T, typename Cfg::TOut, Cfg::kSplit, Cfg::kSplits, Cfg::kPlace, Tail> epilogue{op, tp, split};
  epilogue.template run<Cfg::kBM, Cfg::kBN, Cfg::kThreads>(main, tm * Cfg::kBM, tn * Cfg::kBN, tm * tiles_n + tn, smem);
}

}  // namespace kevo
