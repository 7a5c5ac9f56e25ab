// kevo template family "gemm": C[M, N] = tail(A[M, K] @ op(B)) on the tensor cores, with A
// row-major and B either [N, K] (a linear layer's weight) or [K, N]. The knobs are the template
// parameters of GemmConfig: instruction path (mma.sync everywhere; wgmma on sm_90a), element
// types, precision mode, block tile, warps, pipeline stages, B's layout, raster order and band
// width, split-K (none, serial through a workspace, parallel with a reduction kernel) and where
// the epilogue runs; on the wgmma path also how tiles are loaded (cp.async by every thread, or
// TMA by a producer warpgroup: wgmma_ws.cuh). The elementwise tail is a generated functor (Tail::apply).
#pragma once

#include "epilogue.cuh"
#include "sync.cuh"
#include "wgmma.cuh"
#include "wgmma_ws.cuh"

namespace kevo {

// mma.sync (m16n8k8 TF32, m16n8k16 bf16/fp16): sm_80 and later, sm_100a/sm_103a included.
// wgmma (warpgroup MMA from shared memory, m64nNk8/k16): sm_90a only.
enum class MmaPath { Sync = 0, Wgmma = 1 };

template <MmaPath kPath, typename T_, typename TOut_, Precision kPrec, int kBM_, int kBN_, int kBK_, int kWarpsM,
          int kWarpsN, int kStages, BLayout kB, Raster kRaster_, int kGroup_, SplitK kSplit_, int kSplits_,
          EpiloguePlace kPlace_, LoadPath kLoad_ = LoadPath::CpAsync, bool kPersistent_ = false>
struct GemmConfig {
  using T = T_;
  using TOut = TOut_;
  static constexpr LoadPath kLoad = kLoad_;
  // Persistent (TMA path): num_sms blocks walk the tiles (blockIdx.x, + gridDim.x, ...), the
  // producer loading the next tile while the consumers run the epilogue of this one.
  static constexpr bool kPersistent = kPersistent_;
  static_assert(!kPersistent || (kLoad == LoadPath::Tma && kSplit_ == SplitK::None),
                "a persistent grid is the TMA path's, without split-K");
  static_assert(kLoad == LoadPath::CpAsync || (kPath == MmaPath::Wgmma && kPrec == Precision::Native && kB == BLayout::KMajor),
                "TMA loads feed the wgmma path with 16-bit operands, B stored [N, K]");
  using Mainloop = typename If<
      kPath == MmaPath::Sync, SyncMainloop<T, kPrec, kBM_, kBN_, kBK_, kWarpsM, kWarpsN, kStages, kB>,
      typename If<kLoad == LoadPath::Tma, WgmmaTmaMainloop<T, kBM_, kBN_, kBK_, kWarpsM, kWarpsN, kStages>,
                  WgmmaMainloop<T, kPrec, kBM_, kBN_, kBK_, kWarpsM, kWarpsN, kStages, kB>>::type>::type;
  static constexpr int kBM = kBM_, kBN = kBN_, kBK = kBK_, kGroup = kGroup_, kSplits = kSplits_;
  static constexpr Raster kRaster = kRaster_;
  static constexpr SplitK kSplit = kSplit_;
  static constexpr EpiloguePlace kPlace = kPlace_;
  static constexpr int kThreads = Mainloop::kThreads;
  // The threads that hold the tile and run the epilogue: all of them, but the TMA path's producer.
  static constexpr int kEpilogueThreads = kLoad == LoadPath::Tma ? kThreads - 128 : kThreads;
  static constexpr int kStagedBytes = kPlace == EpiloguePlace::Staged ? kBM * (kBN + 4) * 4 : 0;
  // Dynamic shared memory of the GEMM kernel: the pipeline's stages, or the staging tile that reuses
  // them; persistent blocks keep the ring busy with the next tile, so their staging tile follows it.
  static constexpr int kSharedBytes = kPersistent ? Mainloop::kSharedBytes + kStagedBytes
                                      : Mainloop::kSharedBytes > kStagedBytes ? Mainloop::kSharedBytes
                                                                              : kStagedBytes;
  static_assert(kGroup >= 1, "a raster band is at least one tile wide");
};

// One block per output tile (blockIdx.x, in raster order) and K split (blockIdx.y).
template <typename Cfg, typename Tail, typename Stats = NoRowStats>
__device__ __forceinline__ void gemm(const GemmOperands<typename Cfg::T, typename Cfg::TOut>& op,
                                     const typename Tail::Params& tp,
                                     const typename Stats::Params& sp = typename Stats::Params{}) {
  extern __shared__ __align__(1024) char smem[];
  const int tiles_m = (op.M + Cfg::kBM - 1) / Cfg::kBM, tiles_n = (op.N + Cfg::kBN - 1) / Cfg::kBN;
  int tm, tn;
  tile_of<Cfg::kRaster, Cfg::kGroup>(blockIdx.x, tiles_m, tiles_n, tm, tn);
  const int split = blockIdx.y;
  constexpr int kBK = Cfg::kBK;
  const int k_tiles = (op.K + kBK - 1) / kBK, per_split = (k_tiles + Cfg::kSplits - 1) / Cfg::kSplits;
  const int kt0 = min(split * per_split, k_tiles), kt1 = min(kt0 + per_split, k_tiles);
  static_assert(Cfg::kLoad == LoadPath::CpAsync, "the TMA path's kernels call gemm_tma with their tensor maps");
  typename Cfg::Mainloop main;
  main.run(op.A, op.B, op.M, op.N, op.K, tm * Cfg::kBM, tn * Cfg::kBN, kt0, kt1, smem);
  const Epilogue<typename Cfg::T, typename Cfg::TOut, Cfg::kSplit, Cfg::kSplits, Cfg::kPlace, Tail, Stats> epilogue{
      op, tp, split, sp};
  epilogue.template run<Cfg::kBM, Cfg::kBN, Cfg::kThreads>(main, tm * Cfg::kBM, tn * Cfg::kBN, tm * tiles_n + tn, smem);
}

// The TMA path: as gemm, with A and B read through tensor maps (a: [K, M], b: [K, N], boxes of
// the block tile, 128-byte swizzle); kernels take them as `const __grid_constant__ kevo::TensorMap`.
// The producer warpgroup leaves after its last copy; the consumers run the epilogue. Persistent:
// each block walks tiles blockIdx.x, blockIdx.x + gridDim.x, ... with one ring.
template <typename Cfg, typename Tail, typename Stats>
__device__ __forceinline__ void gemm_tma_persistent(const GemmOperands<typename Cfg::T, typename Cfg::TOut>& op,
                                                    const TensorMap& a, const TensorMap& b,
                                                    const typename Tail::Params& tp, const typename Stats::Params& sp,
                                                    char* smem) {
  using Main = typename Cfg::Mainloop;
  const int tiles_m = (op.M + Cfg::kBM - 1) / Cfg::kBM, tiles_n = (op.N + Cfg::kBN - 1) / Cfg::kBN;
  const int tiles = tiles_m * tiles_n, k_tiles = (op.K + Cfg::kBK - 1) / Cfg::kBK;
  const unsigned base = shared_address(smem);
  Main::start(a, b, base);
  int done = 0;  // k tiles through the ring so far
  if (threadIdx.x >= Main::kEpilogueThreads) {
    registers_release<Main::kProducerRegs>();
    if (threadIdx.x == Main::kEpilogueThreads)
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, done += k_tiles) {
        int tm, tn;
        tile_of<Cfg::kRaster, Cfg::kGroup>(tile, tiles_m, tiles_n, tm, tn);
        Main::produce(a, b, tm * Cfg::kBM, tn * Cfg::kBN, 0, k_tiles, done, base);
      }
    return;
  }
  registers_claim<Main::kConsumerRegs>();
  Main main;
  const Epilogue<typename Cfg::T, typename Cfg::TOut, Cfg::kSplit, Cfg::kSplits, Cfg::kPlace, Tail, Stats> epilogue{op, tp, 0, sp};
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, done += k_tiles) {
    int tm, tn;
    tile_of<Cfg::kRaster, Cfg::kGroup>(tile, tiles_m, tiles_n, tm, tn);
    main.consume(k_tiles, done, base);
    epilogue.template run<Cfg::kBM, Cfg::kBN, Cfg::kEpilogueThreads>(main, tm * Cfg::kBM, tn * Cfg::kBN, tile,
                                                                     smem + Main::kSharedBytes);
  }
}

template <typename Cfg, typename Tail, typename Stats = NoRowStats>
__device__ __forceinline__ void gemm_tma(const GemmOperands<typename Cfg::T, typename Cfg::TOut>& op, const TensorMap& a,
                                         const TensorMap& b, const typename Tail::Params& tp,
                                         const typename Stats::Params& sp = typename Stats::Params{}) {
  static_assert(Cfg::kLoad == LoadPath::Tma, "cp.async configurations call gemm");
  extern __shared__ __align__(1024) char smem[];
  if constexpr (Cfg::kPersistent) {
    gemm_tma_persistent<Cfg, Tail, Stats>(op, a, b, tp, sp, smem);
    return;
  }
  const int tiles_m = (op.M + Cfg::kBM - 1) / Cfg::kBM, tiles_n = (op.N + Cfg::kBN - 1) / Cfg::kBN;
  int tm, tn;
  tile_of<Cfg::kRaster, Cfg::kGroup>(blockIdx.x, tiles_m, tiles_n, tm, tn);
  const int split = blockIdx.y;
  constexpr int kBK = Cfg::kBK;
  const int k_tiles = (op.K + kBK - 1) / kBK, per_split = (k_tiles + Cfg::kSplits - 1) / Cfg::kSplits;
  const int kt0 = min(split * per_split, k_tiles), kt1 = min(kt0 + per_split, k_tiles);
  typename Cfg::Mainloop main;
  if (!main.run(a, b, tm * Cfg::kBM, tn * Cfg::kBN, kt0, kt1, smem)) return;
  const Epilogue<typename Cfg::T, typename Cfg::TOut, Cfg::kSplit, Cfg::kSplits, Cfg::kPlace, Tail, Stats> epilogue{
      op, tp, split, sp};
  epilogue.template run<Cfg::kBM, Cfg::kBN, Cfg::kEpilogueThreads>(main, tm * Cfg::kBM, tn * Cfg::kBN, tm * tiles_n + tn, smem);
}

}  // namespace kevo
