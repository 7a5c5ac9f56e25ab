// kevo template family "generic": the baseline every task has. Each kernel computes one value of
// the task's graph: an output element is a reduction of K terms (K = 1 for an elementwise or view
// value), spread over kLanes threads; a scan walks its rows a block at a time. The generated Body
// says how an element's terms are read (views and elementwise chains are index remapping and
// inline code there, not copies) and where the result is stored (an elementwise tail may be fused
// into that store). Every dtype is loaded into and stored from fp32; the math is fp32.
#pragma once

#include "../common.cuh"

namespace kevo {

// 16-bit floats as their bits: the family needs no toolkit header, and the conversions below are
// plain C++, so a rendered candidate also compiles as host code (tests/lower/host/generic_host_test).
struct half_t { unsigned short bits; };
struct bf16_t { unsigned short bits; };

__host__ __device__ __forceinline__ float bits_float(unsigned int u) {
  union { unsigned int u; float f; } c;
  c.u = u;
  return c.f;
}
__host__ __device__ __forceinline__ unsigned int float_bits(float f) {
  union { unsigned int u; float f; } c;
  c.f = f;
  return c.u;
}

__host__ __device__ __forceinline__ float ld(const float* p) { return *p; }
__host__ __device__ __forceinline__ float ld(const double* p) { return (float)*p; }
__host__ __device__ __forceinline__ float ld(const long long* p) { return (float)*p; }
__host__ __device__ __forceinline__ float ld(const int* p) { return (float)*p; }
__host__ __device__ __forceinline__ float ld(const bool* p) { return *p ? 1.f : 0.f; }
__host__ __device__ __forceinline__ float ld(const bf16_t* p) { return bits_float((unsigned int)p->bits << 16); }
__host__ __device__ __forceinline__ float ld(const half_t* p) {
  const unsigned int h = p->bits, sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));      // inf, nan
  if (exp != 0) return bits_float(sign | ((exp + 112) << 23) | (man << 13));  // normal
  const float sub = (float)man * 5.9604644775390625e-08f;                      // subnormal: man * 2^-24
  return sign ? -sub : sub;
}

// Round to nearest even, as torch's casts do.
__host__ __device__ __forceinline__ unsigned short bf16_bits(float f) {
  const unsigned int u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // quiet nan
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__host__ __device__ __forceinline__ unsigned short half_bits(float f) {
  const unsigned int u = float_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // rounds to inf
  if (a < 0x38800000u) {                                           // subnormal or zero
    const float m = bits_float(a) * 16777216.f;                      // in units of 2^-24
    unsigned int r = (unsigned int)m;
    const float rest = m - (float)r;
    if (rest > 0.5f || (rest == 0.5f && (r & 1u))) ++r;
    return (unsigned short)(sign | r);
  }
  const unsigned int rounded = a + 0xfffu + ((a >> 13) & 1u);
  return (unsigned short)(sign | ((rounded - 0x38000000u) >> 13));
}

__host__ __device__ __forceinline__ void st(float* p, float v) { *p = v; }
__host__ __device__ __forceinline__ void st(double* p, float v) { *p = (double)v; }
__host__ __device__ __forceinline__ void st(long long* p, float v) { *p = (long long)v; }
__host__ __device__ __forceinline__ void st(int* p, float v) { *p = (int)v; }
__host__ __device__ __forceinline__ void st(bool* p, float v) { *p = v != 0.f; }
__host__ __device__ __forceinline__ void st(bf16_t* p, float v) { p->bits = bf16_bits(v); }
__host__ __device__ __forceinline__ void st(half_t* p, float v) { p->bits = half_bits(v); }

// A value rounded through a narrower dtype (the contract's casts).
__host__ __device__ __forceinline__ float round_bf16(float v) { bf16_t t; st(&t, v); return ld(&t); }
__host__ __device__ __forceinline__ float round_half(float v) { half_t t; st(&t, v); return ld(&t); }

// A running reduction: the value and, for argmax/argmin, the flat index of the term it came from.
template <typename Idx>
struct Acc {
  float v;
  Idx i;
};

// The combining rules, NaN-propagating as torch's; the arg forms keep the first index of a tie.
// A sum's terms are added with compensation (kCompensated: Kahan) along each thread's loop: a
// thread may add a million terms (a matrix-vector product with K = 2^20), and plain fp32 adds
// lose about that many half-ulps one way on positive terms (KernelBench's matvec came out 2e-4
// off at 1e-4 on an H100).
struct GSum {
  static constexpr bool kArg = false, kCompensated = true;
  static __host__ __device__ __forceinline__ float identity() { return 0.f; }
  template <typename Idx> static __host__ __device__ __forceinline__ Acc<Idx> combine(Acc<Idx> a, Acc<Idx> b) { return {a.v + b.v, a.i}; }
};
struct GProd {
  static constexpr bool kArg = false, kCompensated = false;
  static __host__ __device__ __forceinline__ float identity() { return 1.f; }
  template <typename Idx> static __host__ __device__ __forceinline__ Acc<Idx> combine(Acc<Idx> a, Acc<Idx> b) { return {a.v * b.v, a.i}; }
};
template <bool kMax, bool kArgForm>
struct GExtreme {
  static constexpr bool kArg = kArgForm, kCompensated = false;
  static __host__ __device__ __forceinline__ float identity() { return bits_float(kMax ? 0xff800000u : 0x7f800000u); }
  template <typename Idx>
  static __host__ __device__ __forceinline__ Acc<Idx> combine(Acc<Idx> a, Acc<Idx> b) {
    const bool an = a.v != a.v, bn = b.v != b.v;
    if (an || bn) return an && (!bn || a.i <= b.i) ? a : b;
    if (a.v == b.v) return a.i <= b.i ? a : b;
    return (kMax ? a.v > b.v : a.v < b.v) ? a : b;
  }
};
using GMax = GExtreme<true, false>;
using GMin = GExtreme<false, false>;
using GArgMax = GExtreme<true, true>;
using GArgMin = GExtreme<false, true>;

// Combines the accumulators of the kLanes consecutive threads that share an output; every lane
// gets the result. kLanes is 1, a divisor of 32 or the whole block (then `sv`, `si` hold one
// partial per warp).
template <typename Op, int kLanes, int kBlock, typename Idx>
__device__ __forceinline__ Acc<Idx> lanes_reduce(Acc<Idx> a, float* sv, Idx* si) {
  if constexpr (kLanes > 1) {
    constexpr int kWidth = kLanes < 32 ? kLanes : 32;
#pragma unroll
    for (int offset = kWidth / 2; offset > 0; offset >>= 1) {
      Acc<Idx> b{__shfl_xor_sync(0xffffffffu, a.v, offset, kWidth), a.i};
      if constexpr (Op::kArg) b.i = __shfl_xor_sync(0xffffffffu, a.i, offset, kWidth);
      a = Op::combine(a, b);
    }
  }
  if constexpr (kLanes > 32) {
    constexpr int kWarps = kBlock / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();  // the partials of the previous output may still be read
    if (lane == 0) sv[warp] = a.v, si[warp] = a.i;
    __syncthreads();
    a = Acc<Idx>{Op::identity(), Idx(0)};
    for (int w = 0; w < kWarps; ++w) a = Op::combine(a, Acc<Idx>{sv[w], si[w]});
  }
  return a;
}

// The next start of a grid-stride loop over [0, end), or end: `at + stride` itself can pass
// 2^31 with 32-bit indices (a one-pass grid's stride is about `end`), and a wrapped index walks
// back into the buffers from below.
template <typename Idx>
__device__ __forceinline__ Idx grid_stride_next(Idx at, Idx stride, Idx end) {
  return end - at > stride ? at + stride : end;
}

// Terms first, first + kLanes, ... below end of an output, compensated (first is the lane's
// first term: its lane, or past the start of a split block's chunk).
template <int kLanes, int kUnroll, typename Idx, typename Body>
__device__ __forceinline__ float compensated_sum(const typename Body::Params& p, const typename Body::Out& o, Idx first,
                                                 Idx end) {
  float sum = 0.f, carry = 0.f;
#pragma unroll kUnroll
  for (Idx k = first; k < end; k += kLanes) kahan_add(sum, carry, Body::term(p, o, k));
  return sum;
}

// One kernel of a generic candidate: n_out outputs, each the reduction of K terms
// (Body::term(p, out, k) for k in [0, K)), kLanes threads per output (kLanes == kBlock: a block
// per output, as a softmax row wants; 1: a thread per output, as a matmul's element), kItems
// outputs per thread slot and tile, the inner loop unrolled kUnroll times.
template <int kBlock, int kLanes, int kItems, int kUnroll, typename Idx, typename Body>
__device__ __forceinline__ void generic_reduce(const typename Body::Params& p, Idx n_out, Idx K) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "threads per block");
  static_assert(kLanes == 1 || kLanes == kBlock || (kLanes <= 32 && 32 % kLanes == 0), "lanes per output");
  using Op = typename Body::Op;
  constexpr int kPerBlock = kBlock / kLanes;
  __shared__ float sv[kBlock / 32];
  __shared__ Idx si[kBlock / 32];
  const int lane = threadIdx.x % kLanes;
  const Idx stride = (Idx)gridDim.x * (kPerBlock * kItems);
  for (Idx base = (Idx)blockIdx.x * (kPerBlock * kItems); base < n_out; base = grid_stride_next(base, stride, n_out)) {
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const Idx out = base + (Idx)item * kPerBlock + (Idx)(threadIdx.x / kLanes);
      const bool valid = out < n_out;
      const typename Body::Out o = Body::at(p, valid ? out : Idx(0));
      Acc<Idx> acc{Op::identity(), Idx(0)};
      if (valid) {
        if constexpr (Op::kCompensated) {
          acc.v = compensated_sum<kLanes, kUnroll, Idx, Body>(p, o, (Idx)lane, K);
        } else {
#pragma unroll kUnroll
          for (Idx k = lane; k < K; k += kLanes) acc = Op::combine(acc, Acc<Idx>{Body::term(p, o, k), k});
        }
      }
      acc = lanes_reduce<Op, kLanes, kBlock>(acc, sv, si);
      if (valid && lane == 0) Body::store(p, o, acc.v, acc.i);
    }
  }
}

// kSplit > 1: an output's K terms split over kSplit blocks, for reductions with few outputs and
// a long K (a whole tensor's sum or norm): one block per output would sum millions of terms per
// thread at a few tens of GB/s. generic_reduce_partial's block (tile, s) reduces the chunk
// [s * chunk, (s + 1) * chunk) of chunk = ceil(K / kSplit) terms of each output of its tile
// (lanes striding inside it) and stores the partial at pv[s * n_out + out] (split-major, so that
// the combine's thread per output reads coalesced), and for an arg reduction the flat index of
// its pick at pi[...]. Every partial is written, an empty chunk's as the identity (K < kSplit):
// scratch is poisoned before each launch. generic_combine then folds each output's partials in
// split order and stores through Body::store (a fused elementwise tail included).
template <int kBlock, int kLanes, int kItems, int kUnroll, int kSplit, typename Idx, typename Body>
__device__ __forceinline__ void generic_reduce_partial(const typename Body::Params& p, Idx n_out, Idx K, float* pv,
                                                       long long* pi) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "threads per block");
  static_assert(kLanes == 1 || kLanes == kBlock || (kLanes <= 32 && 32 % kLanes == 0), "lanes per output");
  static_assert(kSplit > 1, "kSplit == 1 is generic_reduce");
  using Op = typename Body::Op;
  constexpr int kTile = kBlock / kLanes * kItems;
  __shared__ float sv[kBlock / 32];
  __shared__ Idx si[kBlock / 32];
  const int lane = threadIdx.x % kLanes;
  // chunk * kSplit < K + kSplit: no 32-bit overflow below the manifest's 2^31 - 2^16.
  const Idx chunk = K / kSplit + (K % kSplit != 0), units = (n_out / kTile + (n_out % kTile != 0)) * kSplit;
  for (Idx u = blockIdx.x; u < units; u = grid_stride_next(u, (Idx)gridDim.x, units)) {
    const Idx s = u % kSplit, base = u / kSplit * kTile;
    const Idx first = s * chunk < K ? s * chunk : K, end = K - first > chunk ? first + chunk : K;
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const Idx out = base + (Idx)item * (kBlock / kLanes) + (Idx)(threadIdx.x / kLanes);
      const bool valid = out < n_out;
      const typename Body::Out o = Body::at(p, valid ? out : Idx(0));
      Acc<Idx> acc{Op::identity(), Idx(0)};
      if (valid) {
        if constexpr (Op::kCompensated) {
          acc.v = compensated_sum<kLanes, kUnroll, Idx, Body>(p, o, first + (Idx)lane, end);
        } else {
#pragma unroll kUnroll
          for (Idx k = first + (Idx)lane; k < end; k += kLanes) acc = Op::combine(acc, Acc<Idx>{Body::term(p, o, k), k});
        }
      }
      acc = lanes_reduce<Op, kLanes, kBlock>(acc, sv, si);
      if (valid && lane == 0) {
        pv[s * n_out + out] = acc.v;
        if constexpr (Op::kArg) pi[s * n_out + out] = (long long)acc.i;
      }
    }
  }
}

// A thread per output folds its kSplit partials in split order: Op::combine (an arg reduction's
// ties and NaNs resolve by the carried index, as unsplit), a sum compensated as each partial was.
// At most 512 partials per output: the combine is a small fraction of the partial pass's reads.
template <int kBlock, int kSplit, typename Idx, typename Body>
__device__ __forceinline__ void generic_combine(const typename Body::Params& p, Idx n_out, const float* pv,
                                                const long long* pi) {
  using Op = typename Body::Op;
  const Idx stride = (Idx)gridDim.x * kBlock;
  for (Idx out = (Idx)blockIdx.x * kBlock + (Idx)threadIdx.x; out < n_out; out = grid_stride_next(out, stride, n_out)) {
    const typename Body::Out o = Body::at(p, out);
    Acc<Idx> acc{Op::identity(), Idx(0)};
    if constexpr (Op::kCompensated) {
      float carry = 0.f;
#pragma unroll 8
      for (int s = 0; s < kSplit; ++s) kahan_add(acc.v, carry, pv[(Idx)s * n_out + out]);
    } else {
#pragma unroll 8
      for (int s = 0; s < kSplit; ++s) {
        Acc<Idx> b{pv[(Idx)s * n_out + out], Idx(0)};
        if constexpr (Op::kArg) b.i = (Idx)pi[(Idx)s * n_out + out];
        acc = Op::combine(acc, b);
      }
    }
    Body::store(p, o, acc.v, acc.i);
  }
}

// An inclusive scan along one dim: a block per row (rows x len, row-major over the other dims),
// kBlock elements at a time, a Hillis-Steele scan in shared memory plus the carry of the tiles
// before.
template <int kBlock, typename Idx, typename Body>
__device__ __forceinline__ void generic_scan(const typename Body::Params& p, Idx rows, Idx len) {
  using Op = typename Body::Op;
  __shared__ float buf[kBlock];
  for (Idx row = blockIdx.x; row < rows; row = grid_stride_next(row, (Idx)gridDim.x, rows)) {
    float carry = Op::identity();
    for (Idx start = 0; start < len; start += kBlock) {
      const Idx at = start + (Idx)threadIdx.x;
      float v = at < len ? Body::load(p, row, at) : Op::identity();
      buf[threadIdx.x] = v;
      __syncthreads();
      for (int offset = 1; offset < kBlock; offset <<= 1) {
        const float other = (int)threadIdx.x >= offset ? buf[threadIdx.x - offset] : Op::identity();
        __syncthreads();
        v = Op::combine(Acc<Idx>{other, 0}, Acc<Idx>{v, 0}).v;
        buf[threadIdx.x] = v;
        __syncthreads();
      }
      const float total = buf[kBlock - 1];
      if (at < len) Body::store(p, row, at, Op::combine(Acc<Idx>{carry, 0}, Acc<Idx>{v, 0}).v);
      carry = Op::combine(Acc<Idx>{carry, 0}, Acc<Idx>{total, 0}).v;
      __syncthreads();  // buf is rewritten by the next tile
    }
  }
}

}  // namespace kevo
