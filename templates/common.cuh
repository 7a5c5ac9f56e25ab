// kevo templates, common part: the grid shapes and load hints several families take, vector
// loads and stores, warp and block reductions, compensated sums. Every rendered candidate starts with this file;
// NVRTC compiles it without any header.
#pragma once

namespace kevo {

// A flat kernel's grid: a block per tile in one pass, or a fixed grid striding over the tiles.
enum class GridShape { OnePass = 0, GridStride = 1 };

// Cache hints of the loads of full-size inputs: the default (ld.global), read-only (__ldg), or
// streaming (__ldcs, evict first: the data is read once).
enum class LoadHint { Default = 0, ReadOnly = 1, Streaming = 2 };

// kVec consecutive floats as one 8- or 16-byte access (callers guarantee the alignment: kevo's
// buffers are 256-byte aligned and the manifests require sizes that keep every access aligned).
template <int kVec>
__device__ __forceinline__ void load_vec(float (&r)[kVec], const float* __restrict__ p) {
  if constexpr (kVec == 4) {
    const float4 t = *reinterpret_cast<const float4*>(p);
    r[0] = t.x, r[1] = t.y, r[2] = t.z, r[3] = t.w;
  } else if constexpr (kVec == 2) {
    const float2 t = *reinterpret_cast<const float2*>(p);
    r[0] = t.x, r[1] = t.y;
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) r[k] = p[k];
  }
}

template <int kVec>
__device__ __forceinline__ void store_vec(float* __restrict__ p, const float (&r)[kVec]) {
  if constexpr (kVec == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(r[0], r[1], r[2], r[3]);
  } else if constexpr (kVec == 2) {
    *reinterpret_cast<float2*>(p) = make_float2(r[0], r[1]);
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) p[k] = r[k];
  }
}

// load_vec with a cache hint. Alignment as for load_vec.
template <int kVec, LoadHint kHint>
__device__ __forceinline__ void load_hinted(float (&r)[kVec], const float* __restrict__ p) {
  if constexpr (kHint == LoadHint::Default) {
    load_vec<kVec>(r, p);
  } else if constexpr (kVec == 4) {
    const float4* q = reinterpret_cast<const float4*>(p);
    const float4 t = kHint == LoadHint::ReadOnly ? __ldg(q) : __ldcs(q);
    r[0] = t.x, r[1] = t.y, r[2] = t.z, r[3] = t.w;
  } else if constexpr (kVec == 2) {
    const float2* q = reinterpret_cast<const float2*>(p);
    const float2 t = kHint == LoadHint::ReadOnly ? __ldg(q) : __ldcs(q);
    r[0] = t.x, r[1] = t.y;
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) r[k] = kHint == LoadHint::ReadOnly ? __ldg(p + k) : __ldcs(p + k);
  }
}

// Reduction and scan operators: identity, combine. Max and min propagate NaN as torch does.
struct Sum {
  static __device__ __forceinline__ float identity() { return 0.f; }
  static __device__ __forceinline__ float combine(float a, float b) { return a + b; }
};
struct Prod {
  static __device__ __forceinline__ float identity() { return 1.f; }
  static __device__ __forceinline__ float combine(float a, float b) { return a * b; }
};
struct Max {
  static __device__ __forceinline__ float identity() { return -__int_as_float(0x7f800000); }
  static __device__ __forceinline__ float combine(float a, float b) { return (a != a || a > b) ? a : b; }
};
struct Min {
  static __device__ __forceinline__ float identity() { return __int_as_float(0x7f800000); }
  static __device__ __forceinline__ float combine(float a, float b) { return (a != a || a < b) ? a : b; }
};

// One add of Kahan's compensated sum (the true sum is about sum - carry): the rounding error of
// each add is carried into the next term, so the sum is about as accurate as one add however many
// terms there are. An infinite or NaN partial sum keeps no carry (inf - inf would make NaN of a
// sum torch leaves infinite). t - t == 0 holds exactly for finite t (no fast-math here).
__host__ __device__ __forceinline__ void kahan_add(float& sum, float& carry, float term) {
  const float y = term - carry, t = sum + y;
  carry = t - t == 0.f ? (t - sum) - y : 0.f;
  sum = t;
}

template <typename Op>
__device__ __forceinline__ float warp_reduce(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Reduces over the kThreads threads of a group (a warp part, a warp, or a whole block); every
// thread of the group gets the result. `scratch` holds one float per warp of the block.
template <typename Op, int kThreads>
__device__ __forceinline__ float group_reduce(float v, float* scratch) {
  if constexpr (kThreads <= 32) {
#pragma unroll
    for (int offset = kThreads / 2; offset > 0; offset >>= 1)
      v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, offset, kThreads));
    return v;
  } else {
    constexpr int kWarps = kThreads / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_reduce<Op>(v);
    __syncthreads();  // scratch may still be read from a previous reduction
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < kWarps ? scratch[lane] : Op::identity();
    return warp_reduce<Op>(v);
  }
}

}  // namespace kevo
