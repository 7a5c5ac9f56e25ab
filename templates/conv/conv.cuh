// kevo template family "conv": y = tail(conv2d(x, w)) for NCHW x and y, as an implicit GEMM on
// the gemm family's mma.sync mainloop (templates/gemm/sync.cuh): per group, M = N * OH * OW output
// pixels, N_gemm = OC / G channels, K = C / G * KH * KW taps (templates/conv/im2col.cuh). The A
// tile is gathered from x while it is loaded (4-byte cp.async with zero fill for fp32, register
// loads for 16-bit elements, padding and taps past K as zeros), the weight [OC, C / G, KH, KW] is
// B stored K-major; groups are blockIdx.y. Or (kLayout = Nhwc) the plan's first kernels copy x
// to NHWC and the weight to [OC, KH, KW, C / G], and the A tile is gathered in 16-byte chunks of
// channels, four (fp32) or eight (16-bit) taps per copy and bounds check. The epilogue applies the
// generated tail and scatters the [M, OC] tile to NCHW, from the registers or staged through
// shared memory so that stores run along OW. A conv3d (NCDHW, a Geometry with a kernel depth) is the
// same kernel over Im2col3d's index math: M = N * OD * OH * OW, K = C / G * KD * KH * KW. A
// transposed convolution (a Geometry with kTransposed) is the same kernel again over the transposed
// index math (Im2colTransposed, Im2col3dTransposed: a tap reads x where the output coordinate minus
// its shift divides by the stride), NCHW only, with its weight rewritten by conv_w_transposed first.
#pragma once

#include "../gemm/gemm.cuh"
#include "im2col.cuh"

namespace kevo {

// How a thread finds the taps of its A elements: computed from k at every tile (divisions by
// constants), or read from a table of every tap's offset and shifts built in shared memory once
// per block.
enum class TapOffsets { Computed = 0, Table = 1 };
// Where the A gather reads: x itself (NCHW: one element per copy, taps are H * W apart), or the
// plan's NHWC copy of x (16-byte chunks of consecutive channels).
enum class ConvLayout { Nchw = 0, Nhwc = 1 };
// How the stages' B (weight) tiles are copied: 16-byte cp.async chunks (K a multiple of the
// chunk) or 4-byte ones (K a multiple of 1 fp32 or 2 16-bit elements).
enum class WeightCopy { Chunk4 = 4, Chunk16 = 16 };
// Where the tail runs: on the accumulator registers (scattered stores), or after staging the
// tile through shared memory (stores along OW, coalesced).
enum class ConvEpilogue { Registers = 0, Staged = 1 };

template <typename T, typename TOut>
struct ConvOperands {
  const T* __restrict__ x;  // [N, C, H, W] (conv3d: [N, C, D, H, W])
  const T* __restrict__ w;  // [OC, C / G, KH, KW] ([OC, C / G, KD, KH, KW])
  TOut* __restrict__ y;     // [N, OC, OH, OW] ([N, OC, OD, OH, OW])
  ConvShape shape;
};

// A graph without elementwise tail (apply gets the result, its index in y and its channel).
struct NoConvTail {
  struct Params {};
  static __device__ __forceinline__ float apply(const Params&, float v, long long, int) { return v; }
};

// 4 bytes global -> shared; zero-filled when !valid (src-size 0).
__device__ __forceinline__ void cp_async_4(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(dst), "h"(v));
}

// One element copied into a tile: fp32 asynchronously; a 16-bit one through a register (cp.async
// moves 4 bytes at least, and two taps are rarely adjacent in x).
template <typename T>
__device__ __forceinline__ void gather_element(unsigned dst, const T* src, bool valid) {
  if constexpr (Element<T>::kBytes == 4) {
    cp_async_4(dst, src, valid);
  } else {
    st_shared_u16(dst, valid ? __ldg(&src->bits) : (unsigned short)0);
  }
}

// A thread's share of a kRows x kCols tile: kThreads consecutive elements of a column at a time
// (consecutive threads take consecutive rows: output pixels along OW, so that their loads from x
// and stores to y are coalesced). Thread tid owns rows tid % kRows + j * kThreads and columns
// tid / kRows + q * kColStep.
template <int kTileRows, int kTileCols, int kThreads>
struct ThreadShare {
  static constexpr int kRows = kTileRows >= kThreads ? kTileRows / kThreads : 1;
  static constexpr int kColStep = kThreads >= kTileRows ? kThreads / kTileRows : 1;
  static constexpr int kCols = kTileCols / kColStep;
  static_assert(kTileRows % kThreads == 0 || kThreads % kTileRows == 0, "threads and tile rows are powers of two");
  static_assert(kTileCols % kColStep == 0, "every thread takes the same number of columns");
  static __device__ __forceinline__ int row(int tid, int j) { return tid % kTileRows + j * kThreads; }
  static __device__ __forceinline__ int col(int tid, int q) { return tid / kTileRows + q * kColStep; }
};

// The A tile of k tile kt gathered from NCHW x into the mainloop's swizzled [kBM][kBK] layout.
template <typename T, typename Geo, int kBM, int kBK, int kThreads, TapOffsets kOffsets>
struct GatherNchw {
  using Ix = ConvIndex<Geo>;
  using Tile = SmemTile<T, kBM, kBK, false>;
  using Share = ThreadShare<kBM, kBK, kThreads>;
  typename Ix::Row rows[Share::kRows];

  __device__ __forceinline__ void init(const ConvShape& s, int m0, int g, int tid) {
#pragma unroll
    for (int j = 0; j < Share::kRows; ++j) rows[j] = Ix::row(s, m0 + Share::row(tid, j), g);
  }

  __device__ __forceinline__ void load(unsigned smem, const T* __restrict__ x, const ConvShape& s, int kt,
                                       const int2* table, int tid) const {
#pragma unroll
    for (int q = 0; q < Share::kCols; ++q) {
      const int c = Share::col(tid, q), k = kt * kBK + c;
      typename Ix::Tap t;
      if constexpr (kOffsets == TapOffsets::Table) {
        const int2 e = table[k];
        t = Ix::unpack(e.x, e.y);
      } else {
        t = Ix::tap(s, k);
      }
#pragma unroll
      for (int j = 0; j < Share::kRows; ++j) {
        const bool ok = Ix::inside(s, rows[j], t);
        gather_element<T>(smem + Tile::offset(Share::row(tid, j), c), ok ? x + Ix::offset(s, rows[j], t) : x, ok);
      }
    }
  }
};

// The A tile of k tile kt gathered from the NHWC copy of x in 16-byte chunks (the SmemTile
// loader's order: consecutive threads take consecutive chunks of a row, which are consecutive
// channels in x). A thread keeps one chunk column and kPer rows, whose window corners it computes once.
template <typename T, typename Geo, int kBM, int kBK, int kThreads, TapOffsets kOffsets>
struct GatherNhwc {
  using Ix = ConvIndex<Geo>;
  using Tile = SmemTile<T, kBM, kBK, false>;
  static constexpr int kChunkElems = 16 / Element<T>::kBytes, kChunksPerRow = kBK / kChunkElems;
  static_assert(kThreads % kChunksPerRow == 0, "a thread keeps one chunk column");
  static constexpr int kRowStep = kThreads / kChunksPerRow, kPer = kBM / kRowStep;
  static_assert(kBM % kRowStep == 0, "every thread copies the same number of chunks of an A tile");
  typename Ix::Row rows[kPer];

  __device__ __forceinline__ void init(const ConvShape& s, int m0, int g, int tid) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) rows[i] = Ix::row_nhwc(s, m0 + tid / kChunksPerRow + i * kRowStep, g);
  }

  __device__ __forceinline__ void load(unsigned smem, const T* __restrict__ x, const ConvShape& s, int kt,
                                       const int2* table, int tid) const {
    const int c = tid % kChunksPerRow * kChunkElems, k = kt * kBK + c;
    typename Ix::Tap t;
    if constexpr (kOffsets == TapOffsets::Table) {
      const int2 e = table[k];
      t = Ix::unpack(e.x, e.y);
    } else {
      t = Ix::tap_nhwc(s, k);
    }
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const bool ok = Ix::inside(s, rows[i], t);
      cp_async_16(smem + Tile::offset(tid / kChunksPerRow + i * kRowStep, c), ok ? x + Ix::offset(s, rows[i], t) : x, ok);
    }
  }
};

// The plan's first kernels for kLayout = Nhwc. x [N, C, H * W] -> [N, H * W, C] through 32 x 32
// tiles in shared memory, so that both the reads and the writes are coalesced; grid
// (ceil(H * W / 32), ceil(C / 32), N), block (32, 8). A conv3d's x is the same with HW = D * H * W.
template <typename T>
__device__ __forceinline__ void conv_x_to_nhwc(const T* __restrict__ x, T* __restrict__ xt, int C, int HW) {
  __shared__ T tile[32][33];
  const int p0 = blockIdx.x * 32, c0 = blockIdx.y * 32;
  const long long n = blockIdx.z;
  for (int j = threadIdx.y; j < 32; j += 8)
    if (c0 + j < C && p0 + threadIdx.x < HW) tile[j][threadIdx.x] = x[(n * C + c0 + j) * HW + p0 + threadIdx.x];
  __syncthreads();
  for (int j = threadIdx.y; j < 32; j += 8)
    if (p0 + j < HW && c0 + threadIdx.x < C) xt[(n * HW + p0 + j) * C + c0 + threadIdx.x] = tile[threadIdx.x][j];
}
// w [OC, C / G, KH * KW] -> [OC, KH * KW, C / G] (conv3d: KD * KH * KW taps): one thread per
// element (the weight is small).
template <typename T, typename Geo>
__device__ __forceinline__ void conv_w_to_nhwc(const T* __restrict__ w, T* __restrict__ wt, int OC, int Cg) {
  constexpr int kTaps = ConvIndex<Geo>::kTaps;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, K = (long long)Cg * kTaps;
  if (i >= OC * K) return;
  const long long oc = i / K;
  const int k = int(i - oc * K), rs = k / Cg, c = k - rs * Cg;
  wt[i] = w[(oc * Cg + c) * kTaps + rs];
}

// The plan's first kernel for a transposed convolution: torch's weight [C, OC / G, taps] rewritten
// into [OC, C / G, taps] (w'[g * OCg + o, c, rs] = w[g * Cg + c, o, rs]), B stored K-major as a
// convolution's weight is; one thread per element of w' (grid ceil(OC * K / 256), block 256).
template <typename T, typename Geo>
__device__ __forceinline__ void conv_w_transposed(const T* __restrict__ w, T* __restrict__ wt, const ConvShape& s) {
  using Ix = ConvIndex<Geo>;
  static_assert(GeoTransposed<Geo>::value, "only a transposed convolution's weight is rewritten");
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)s.OC * Ix::gemm_k(s)) return;
  wt[i] = w[Ix::weight_source(s, i)];
}

// The B tile (rows n0.. of one group's [OCg, K] weight) in 4-byte copies, for K that 16-byte
// chunks do not divide.
template <typename T, int kBN, int kBK, int kThreads>
__device__ __forceinline__ void load_weight_4(unsigned smem, const T* __restrict__ w, int K, int OCg, int n0, int k0,
                                              int tid) {
  using Tile = SmemTile<T, kBN, kBK, false>;
  constexpr int kPer = 4 / Element<T>::kBytes, kUnits = kBN * kBK / kPer;
  static_assert(kUnits % kThreads == 0, "every thread copies the same number of 4-byte units of a B tile");
#pragma unroll
  for (int i = 0; i < kUnits / kThreads; ++i) {
    const int u = tid + i * kThreads, r = u / (kBK / kPer), c = u % (kBK / kPer) * kPer;
    const bool ok = n0 + r < OCg && k0 + c < K;
    cp_async_4(smem + Tile::offset(r, c), ok ? w + (long long)(n0 + r) * K + k0 + c : w, ok);
  }
}

// One result stored (the NCHW scatter has no pairs of neighbours to pack).
__device__ __forceinline__ void store_one(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_one(bf16* p, float v) {
  unsigned short b;
  asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(b) : "f"(v));
  p->bits = b;
}
__device__ __forceinline__ void store_one(fp16* p, float v) {
  unsigned short b;
  asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(b) : "f"(v));
  p->bits = b;
}

template <typename T_, typename TOut_, Precision kPrec, int kBM_, int kBN_, int kBK_, int kWarpsM, int kWarpsN,
          int kStages, Raster kRaster_, int kGroup_, TapOffsets kOffsets_, ConvLayout kLayout_, WeightCopy kWeight_,
          ConvEpilogue kEpi_, int kTableEntries_>
struct ConvConfig {
  using T = T_;
  using TOut = TOut_;
  using Mainloop = SyncMainloop<T, kPrec, kBM_, kBN_, kBK_, kWarpsM, kWarpsN, kStages, BLayout::KMajor>;
  static constexpr int kBM = kBM_, kBN = kBN_, kBK = kBK_, kGroup = kGroup_, kThreads = Mainloop::kThreads;
  static constexpr Raster kRaster = kRaster_;
  static constexpr TapOffsets kOffsets = kOffsets_;
  static constexpr ConvLayout kLayout = kLayout_;
  static constexpr WeightCopy kWeight = kWeight_;
  static constexpr ConvEpilogue kEpi = kEpi_;
  // The tap table covers K rounded up to whole k tiles at the task's largest K (the lowering's
  // number); none without the table.
  static constexpr int kTableEntries = kOffsets == TapOffsets::Table ? kTableEntries_ : 0;
  static constexpr int kStagedLd = kBM + 4;  // the staged tile is [kBN][kBM + 4]: a quad's 4 columns in 4 bank groups
  static constexpr int kStagedBytes = kEpi == ConvEpilogue::Staged ? kBN * kStagedLd * 4 : 0;
  static constexpr int kTableOffset = Mainloop::kSharedBytes > kStagedBytes ? Mainloop::kSharedBytes : kStagedBytes;
  static constexpr int kSharedBytes = kTableOffset + kTableEntries * 8;
  static_assert(kOffsets == TapOffsets::Computed || kTableEntries % kBK == 0, "the table covers whole k tiles");
  static_assert(kGroup >= 1, "a raster band is at least one tile wide");
};

// The tail of the graph on a result, then its store: v is output (pixel m, channel oc of all groups).
template <typename Tail, typename TOut>
__device__ __forceinline__ void conv_store(TOut* __restrict__ y, const typename Tail::Params& tp, float v, long long idx,
                                           int oc) {
  store_one(y + idx, Tail::apply(tp, v, idx, oc));
}

// One block per output tile of one group (blockIdx.x in raster order, the group in blockIdx.y).
// With kLayout = Nhwc, op.x and op.w are the plan's NHWC copies (conv_x_to_nhwc, conv_w_to_nhwc).
template <typename Cfg, typename Geo, typename Tail>
__device__ __forceinline__ void conv2d(const ConvOperands<typename Cfg::T, typename Cfg::TOut>& op,
                                       const typename Tail::Params& tp) {
  using T = typename Cfg::T;
  using Ix = ConvIndex<Geo>;
  static_assert(!GeoTransposed<Geo>::value || Cfg::kLayout == ConvLayout::Nchw,
                "transposed convolutions gather from NCHW x only (no NHWC index math for them)");
  extern __shared__ __align__(1024) char smem[];
  const ConvShape& s = op.shape;
  const int M = Ix::gemm_m(s), OCg = Ix::gemm_n(s), K = Ix::gemm_k(s), g = blockIdx.y, tid = threadIdx.x;
  const int tiles_m = (M + Cfg::kBM - 1) / Cfg::kBM, tiles_n = (OCg + Cfg::kBN - 1) / Cfg::kBN;
  int tm, tn;
  tile_of<Cfg::kRaster, Cfg::kGroup>(blockIdx.x, tiles_m, tiles_n, tm, tn);
  const int m0 = tm * Cfg::kBM, n0 = tn * Cfg::kBN, k_tiles = (K + Cfg::kBK - 1) / Cfg::kBK;

  int2* table = reinterpret_cast<int2*>(smem + Cfg::kTableOffset);
  if constexpr (Cfg::kOffsets == TapOffsets::Table) {
    if (k_tiles * Cfg::kBK > Cfg::kTableEntries) __trap();  // the lowering sized it for the largest K
    for (int k = tid; k < k_tiles * Cfg::kBK; k += Cfg::kThreads) {
      if constexpr (Cfg::kLayout == ConvLayout::Nhwc) Ix::pack(Ix::tap_nhwc(s, k), table[k].x, table[k].y);
      else Ix::pack(Ix::tap(s, k), table[k].x, table[k].y);
    }
    __syncthreads();
  }
  typename If<Cfg::kLayout == ConvLayout::Nhwc, GatherNhwc<T, Geo, Cfg::kBM, Cfg::kBK, Cfg::kThreads, Cfg::kOffsets>,
              GatherNchw<T, Geo, Cfg::kBM, Cfg::kBK, Cfg::kThreads, Cfg::kOffsets>>::type gather;
  gather.init(s, m0, g, tid);
  const T* wg = op.w + (long long)g * OCg * K;
  typename Cfg::Mainloop main;
  main.pipeline(
      [&](unsigned a, unsigned b, int kt) {
        gather.load(a, op.x, s, kt, table, tid);
        if constexpr (Cfg::kWeight == WeightCopy::Chunk16)
          Cfg::Mainloop::TileB::template load<Cfg::kThreads>(b, wg, K, n0, kt * Cfg::kBK, OCg, K, tid);
        else
          load_weight_4<T, Cfg::kBN, Cfg::kBK, Cfg::kThreads>(b, wg, K, OCg, n0, kt * Cfg::kBK, tid);
      },
      0, k_tiles, smem);

  const int oc0 = g * OCg + n0;  // the tile's first channel among all groups
  if constexpr (Cfg::kEpi == ConvEpilogue::Staged) {
    // Every warp is past its last read of the stages (the pipeline ends with its copies drained),
    // so the staging tile may reuse them; the table behind them is not needed any more either.
    float* st = reinterpret_cast<float*>(smem);
    __syncthreads();
    main.for_each_pair([&](int r, int c, float v0, float v1) {
      st[c * Cfg::kStagedLd + r] = v0;
      st[(c + 1) * Cfg::kStagedLd + r] = v1;
    });
    __syncthreads();
    using Share = ThreadShare<Cfg::kBM, Cfg::kBN, Cfg::kThreads>;
#pragma unroll
    for (int j = 0; j < Share::kRows; ++j) {
      const int r = Share::row(tid, j), m = m0 + r;
      if (m >= M) continue;
      const long long pixel = Ix::out_pixel(s, m);
#pragma unroll 4
      for (int q = 0; q < Share::kCols; ++q) {
        const int c = Share::col(tid, q);
        if (n0 + c < OCg)
          conv_store<Tail>(op.y, tp, st[c * Cfg::kStagedLd + r], Ix::out_index(s, pixel, oc0 + c), oc0 + c);
      }
    }
  } else {
    main.for_each_pair([&](int r, int c, float v0, float v1) {
      const int m = m0 + r;
      if (m >= M) return;
      const long long pixel = Ix::out_pixel(s, m);
      if (n0 + c < OCg) conv_store<Tail>(op.y, tp, v0, Ix::out_index(s, pixel, oc0 + c), oc0 + c);
      if (n0 + c + 1 < OCg) conv_store<Tail>(op.y, tp, v1, Ix::out_index(s, pixel, oc0 + c + 1), oc0 + c + 1);
    });
  }
}

// conv3d: conv2d's kernel, whose Geometry's kernel depth selects Im2col3d (ConvIndex); the name says
// which index math a generated kernel asks for.
template <typename Cfg, typename Geo, typename Tail>
__device__ __forceinline__ void conv3d(const ConvOperands<typename Cfg::T, typename Cfg::TOut>& op,
                                       const typename Tail::Params& tp) {
  static_assert(Geo::KD >= 1, "a conv3d Geometry has a kernel depth");
  conv2d<Cfg, Geo, Tail>(op, tp);
}

}  // namespace kevo
