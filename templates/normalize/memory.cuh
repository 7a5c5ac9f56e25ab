// kevo template family "normalize", memory: where a row lives between passes (Cache) and the L2
// hints of its accesses (L2Hint), global loads and stores with L2 eviction priorities, thread-block
// clusters (sm_90+), and the dynamic shared memory of the row and column caches.
#pragma once

#include "../common.cuh"

namespace kevo {

// ---------------------------------------------------------------------------------------------
// Knob values.

// Where a row (a column, a channel) lives between the passes over it: re-read from global memory
// (L2 may help), kept in shared memory, or kept in registers.
enum class Cache { Global = 0, Shared = 1, Registers = 2 };
// Stream: the last read of x and the write of y bypass L2 residency (evict first), so that the
// rows still to be re-read stay in L2; Keep: also mark the first read evict-last.
enum class L2Hint { None = 0, Stream = 1, Keep = 2 };

// ---------------------------------------------------------------------------------------------
// Global memory accesses with L2 eviction priorities.

enum class Evict { Normal = 0, First = 1, Last = 2 };

template <Evict kValue>
struct EvictConstant {
  static constexpr Evict value = kValue;
};

template <int kVec, Evict kEvict>
__device__ __forceinline__ void load_global(float (&r)[kVec], const float* p) {
  if constexpr (kEvict == Evict::First) {
    if constexpr (kVec == 4) {
      const float4 t = __ldcs(reinterpret_cast<const float4*>(p));
      r[0] = t.x, r[1] = t.y, r[2] = t.z, r[3] = t.w;
    } else if constexpr (kVec == 2) {
      const float2 t = __ldcs(reinterpret_cast<const float2*>(p));
      r[0] = t.x, r[1] = t.y;
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) r[k] = __ldcs(p + k);
    }
  } else if constexpr (kEvict == Evict::Last) {
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    if constexpr (kVec == 4) {
      asm("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
          : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]) : "l"(p), "l"(policy));
    } else if constexpr (kVec == 2) {
      asm("ld.global.L2::cache_hint.v2.f32 {%0, %1}, [%2], %3;" : "=f"(r[0]), "=f"(r[1]) : "l"(p), "l"(policy));
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) asm("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(r[k]) : "l"(p + k), "l"(policy));
    }
  } else {
    load_vec<kVec>(r, p);
  }
}

template <int kVec, bool kStream>
__device__ __forceinline__ void store_global(float* p, const float (&r)[kVec]) {
  if constexpr (!kStream) {
    store_vec<kVec>(p, r);
  } else if constexpr (kVec == 4) {
    __stcs(reinterpret_cast<float4*>(p), make_float4(r[0], r[1], r[2], r[3]));
  } else if constexpr (kVec == 2) {
    __stcs(reinterpret_cast<float2*>(p), make_float2(r[0], r[1]));
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) __stcs(p + k, r[k]);
  }
}

// ---------------------------------------------------------------------------------------------
// Thread-block clusters (sm_90+): rank, barrier, and loads from another CTA's shared memory.

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Every thread of every CTA of the cluster; release/acquire orders the shared memory writes.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ float4 load_cluster(const float4* local, unsigned rank) {
  unsigned remote;
  float4 v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(local))), "r"(rank));
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
  return v;
}
// The row and column kernels' cache (Cache::Shared): dynamic shared memory.
extern __shared__ float4 normalize_dynamic_smem[];

}  // namespace kevo
