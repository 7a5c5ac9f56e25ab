// kevo template family "gemm", the warp-specialised TMA path (sm_90a only): one producer
// warpgroup whose first thread issues TMA copies (cp.async.bulk.tensor) of A and B tiles into a
// kStages ring, consumer warpgroups running wgmma on them. Each stage has two mbarriers: `full`
// (the producer arms it with the stage's byte count; TMA completes it when the bytes land) and
// `empty` (every consumer warp arrives once its wgmmas of the stage are done). setmaxnreg moves
// registers from the producer, which needs few, to the consumers' accumulators. The tensor maps
// (plan arguments, built with cuTensorMapEncodeTiled) use the 128-byte swizzle, which writes
// exactly the layout of SmemTile's 16-byte chunks that wgmma's descriptors describe; TMA fills
// the parts of a box outside the matrix with zeros, so partial tiles need no masking. The ring's
// pieces (start, produce, consume) also serve gemm_tma_persistent, whose blocks walk several tiles
// with one ring. 16-bit operands, B stored [N, K]. On sm_100a/sm_103a the manifest does not offer
// this path.
#pragma once

#include "wgmma.cuh"

namespace kevo {

// How the mainloop's tiles reach shared memory: cp.async by every thread, or TMA by a producer warpgroup.
enum class LoadPath { CpAsync = 0, Tma = 1 };

// A CUtensorMap as a kernel parameter: `const __grid_constant__ kevo::TensorMap` (128 opaque
// bytes, 64-byte aligned), its address the generic address TMA instructions take.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarrier_inval(unsigned bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// The producer's arrival, announcing `bytes` of TMA traffic the phase waits for.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// The box of `map` at (c0 innermost, c1) into shared memory at `dst`, completing `bytes` on `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TensorMap& map, unsigned bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_descriptor(const TensorMap& map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(&map)) : "memory");
}
template <int kRegs>
__device__ __forceinline__ void registers_release() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void registers_claim() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
// A barrier of the first kThreads threads only (the consumers; the producer has left).
template <int kThreads>
__device__ __forceinline__ void sync_threads() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kThreads) : "memory");
}

template <typename T, int kBM, int kBN, int kBK, int kGroupsM, int kGroupsN, int kStages>
struct WgmmaTmaMainloop {
  static constexpr int kConsumers = kGroupsM * kGroupsN;
  static constexpr int kEpilogueThreads = 128 * kConsumers;  // threads [0, kEpilogueThreads) hold the tile
  static constexpr int kThreads = kEpilogueThreads + 128;    // and the producer warpgroup after them
  static constexpr int kWM = kBM / kGroupsM, kWN = kBN / kGroupsN;
  static constexpr int kMB = kWM / 64;
  static constexpr int kKSteps = kBK / 16;
  using TileA = SmemTile<T, kBM, kBK, false>;
  using TileB = SmemTile<T, kBN, kBK, false>;
  static constexpr int kStageBytes = TileA::kBytes + TileB::kBytes;
  // The ring, then a full and an empty barrier per stage.
  static constexpr int kSharedBytes = kStages * kStageBytes + 2 * 8 * kStages;
  // setmaxnreg: the producer keeps 40 registers; the consumers take what it frees (one block per
  // SM: 65536 registers; 2 consumer warpgroups at 168 on entry -> 232, as CUTLASS's kernels).
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerRegs = kConsumers == 1 ? 256 : 232;

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(sizeof(T) == 0, "wgmma and this TMA pipeline need sm_90a: on sm_100a/sm_103a the family takes the mma.sync path");
#endif
  static_assert(Element<T>::kBytes == 2, "the TMA path takes 16-bit operands");
  static_assert(kBK * 2 == 128, "tiles have 128-byte rows: the 128-byte swizzle of TMA and of wgmma's descriptors");
  static_assert(kBM <= 256 && kBN <= 256, "a TMA box has at most 256 rows");
  static_assert(kWM % 64 == 0 && (kWN == 64 || kWN == 128 || kWN == 256),
                "a warpgroup's slice is m64 blocks by an N of 64, 128 or 256");
  static_assert(kConsumers <= 2, "one or two consumer warpgroups (the register split above)");
  static_assert(kStages >= 3, "3 stages or more: a consumer keeps one batch of wgmmas in flight");
  static_assert(kStageBytes % 1024 == 0, "every stage starts on the 1024-byte period of the 128-byte swizzle");

  float acc[kMB][kWN / 2];
  int scale_d = 0;

  // Accumulates k tiles [kt_begin, kt_end) of the output tile at (m0, n0); `a` maps A as [K, M]
  // with box [kBK, kBM], `b` maps B as [K, N] with box [kBK, kBN], both 128-byte swizzled.
  // Returns false in the producer warpgroup, whose work ends here; the consumers return true
  // with the tile in acc, the barriers invalidated (their memory free for the epilogue).
  __device__ __forceinline__ bool run(const TensorMap& a, const TensorMap& b, int m0, int n0, int kt_begin, int kt_end,
                                      char* smem) {
    const int tid = threadIdx.x;
    const unsigned base = shared_address(smem);
    start(a, b, base);
    if (tid >= kEpilogueThreads) {
      registers_release<kProducerRegs>();
      if (tid == kEpilogueThreads) produce(a, b, m0, n0, kt_begin, kt_end - kt_begin, 0, base);
      return false;
    }
    registers_claim<kConsumerRegs>();
    consume(kt_end - kt_begin, 0, base);
    // Every copy has landed (each was waited for) and no consumer waits any more.
    sync_threads<kEpilogueThreads>();
    if (tid == 0)
      for (int s = 0; s < 2 * kStages; ++s) mbarrier_inval(base + kStages * kStageBytes + 8 * s);
    return true;
  }

  // The pieces of run(), also for a persistent block that walks several tiles: the ring's k-tile
  // count `done` carries on from tile to tile, so that stages and phases continue.
  // The barriers, initialised by thread 0 before any thread uses them.
  static __device__ __forceinline__ void start(const TensorMap& a, const TensorMap& b, unsigned base) {
    const unsigned full = base + kStages * kStageBytes, empty = full + 8 * kStages;
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        mbarrier_init(full + 8 * s, 1);
        mbarrier_init(empty + 8 * s, 4 * kConsumers);  // one arrival per consumer warp
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    if (threadIdx.x == kEpilogueThreads) {
      tma_prefetch_descriptor(a);
      tma_prefetch_descriptor(b);
    }
    __syncthreads();
  }

  // The producer's thread: k tile kt_begin + i into stage (done + i) % kStages once the consumers
  // have released that stage's previous use.
  static __device__ __forceinline__ void produce(const TensorMap& a, const TensorMap& b, int m0, int n0, int kt_begin,
                                                 int tiles, int done, unsigned base) {
    const unsigned full = base + kStages * kStageBytes, empty = full + 8 * kStages;
    for (int i = 0; i < tiles; ++i) {
      const int j = done + i, s = j % kStages;
      if (j >= kStages) mbarrier_wait(empty + 8 * s, (j / kStages - 1) & 1);
      const unsigned stage = base + s * kStageBytes, bar = full + 8 * s;
      mbarrier_arrive_expect_tx(bar, kStageBytes);
      const int k0 = (kt_begin + i) * kBK;
      tma_load_2d(stage, a, bar, k0, m0);
      tma_load_2d(stage + TileA::kBytes, b, bar, k0, n0);
    }
  }

  // A consumer thread: `tiles` k tiles from ring position `done` into acc (zero when tiles is 0);
  // every stage it read is released by the time it returns.
  __device__ __forceinline__ void consume(int tiles, int done, unsigned base) {
    const unsigned full = base + kStages * kStageBytes, empty = full + 8 * kStages;
    const bool signals = threadIdx.x % 32 == 0;
    scale_d = 0;
    for (int i = 0; i < tiles; ++i) {
      const int j = done + i, s = j % kStages;
      mbarrier_wait(full + 8 * s, (j / kStages) & 1);
      compute(base + s * kStageBytes);
      // compute() left this tile's batch in flight and waited for the previous one: its stage is free.
      if (i > 0 && signals) mbarrier_arrive(empty + 8 * ((j - 1) % kStages));
    }
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < kMB; ++i)
#pragma unroll
      for (int j = 0; j < kWN / 2; ++j) keep(acc[i][j]);
    if (tiles > 0 && signals) mbarrier_arrive(empty + 8 * ((done + tiles - 1) % kStages));
    if (tiles == 0)  // an empty K split adds nothing
#pragma unroll
      for (int i = 0; i < kMB; ++i)
#pragma unroll
        for (int j = 0; j < kWN / 2; ++j) acc[i][j] = 0.f;
  }

  // f(row, col, v0, v1) for every pair of accumulators (columns col, col + 1 of the block tile).
  template <typename F>
  __device__ __forceinline__ void for_each_pair(F&& f) const {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4, group = threadIdx.x / 128;
    const int wm = group % kGroupsM * kWM, wn = group / kGroupsM * kWN;
#pragma unroll
    for (int i = 0; i < kMB; ++i)
#pragma unroll
      for (int j = 0; j < kWN / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          f(wm + i * 64 + warp * 16 + lane / 4 + h * 8, wn + j * 8 + lane % 4 * 2, acc[i][j * 4 + 2 * h],
            acc[i][j * 4 + 2 * h + 1]);
  }

 private:
  __device__ __forceinline__ void compute(unsigned stage) {
    const int group = threadIdx.x / 128;
    const unsigned a = stage + group % kGroupsM * kWM * 128, b = stage + TileA::kBytes + group / kGroupsM * kWN * 128;
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kKSteps; ++k)
#pragma unroll
      for (int i = 0; i < kMB; ++i)
        Wgmma<T, kWN>::ss(k == 0 ? scale_d : 1, acc[i], wgmma_desc(a + i * 64 * 128 + k * 32), wgmma_desc(b + k * 32));
    scale_d = 1;
    wgmma_commit();
    wgmma_wait<1>();  // the previous tile's batch is done; this one stays in flight
  }
};

}  // namespace kevo
