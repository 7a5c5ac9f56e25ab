// kevo template family "gemm", instructions: the element types (fp32, bf16, fp16 as raw 16-bit
// storage, so that no toolkit header is needed), cp.async, ldmatrix, mma.sync and the TF32
// conversions of the 3xTF32 split, as inline PTX legal on sm_80 and later (sm_90a, sm_100a, sm_103a).
#pragma once

#include "../common.cuh"

namespace kevo {

// 16-bit floats as their bits: the GEMM only moves them and hands them to the tensor cores.
struct bf16 {
  unsigned short bits;
};
struct fp16 {
  unsigned short bits;
};

template <typename T>
struct Element;
template <>
struct Element<float> {
  static constexpr int kBytes = 4;
  static constexpr int kMmaK = 8;  // mma.sync m16n8k8 (tf32)
};
template <>
struct Element<bf16> {
  static constexpr int kBytes = 2;
  static constexpr int kMmaK = 16;  // mma.sync m16n8k16
  static constexpr bool kBf16 = true;
};
template <>
struct Element<fp16> {
  static constexpr int kBytes = 2;
  static constexpr int kMmaK = 16;
  static constexpr bool kBf16 = false;
};

template <bool kCond, typename A, typename B>
struct If {
  using type = A;
};
template <typename A, typename B>
struct If<false, A, B> {
  using type = B;
};

// How the products are formed. fp32 operands: Tf32x3 splits each operand into a TF32 high part
// and a TF32 residual and sums small*big + big*small + big*big (fp32-level error, CUTLASS's
// "fast accurate" path); Tf32 rounds each operand once (about 1e-3 relative error: only where the
// task's tolerance admits it); Bf16x3 splits each operand into bf16 high and low parts and sums
// lo*hi + hi*lo + hi*hi on the bf16 tensor cores (twice TF32's rate; about 2^-16 relative error
// per product). 16-bit operands: Native products with fp32 accumulation.
// The tensor cores add each product into the fp32 accumulator rounding toward zero, so a long
// chain of mma steps drifts by about 2^-24 of the running sum per step, always the same way;
// Tf32x3Promoted sums each k step's three products in a fresh accumulator and adds that on the
// CUDA cores (round to nearest), which keeps fp32's error at any K (the mma.sync path only).
enum class Precision { Tf32x3 = 0, Tf32 = 1, Native = 2, Bf16x3 = 3, Tf32x3Promoted = 4 };

template <Precision kPrec>
constexpr bool kSplitsTf32 = kPrec == Precision::Tf32x3 || kPrec == Precision::Tf32x3Promoted;

__device__ __forceinline__ unsigned shared_address(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// 16 bytes global -> shared without passing through registers; a chunk outside the matrix is
// zero-filled (src-size 0), so edge tiles need no other predication.
__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

template <bool kTrans>
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// x = big + small to about 2^-22 relative: both parts exact in TF32.
__device__ __forceinline__ void split_tf32(float x, unsigned& big, unsigned& small) {
  big = to_tf32(x);
  small = to_tf32(x - __uint_as_float(big));
}

// Two floats as bf16 pairs (x = hi + lo to about 2^-17 relative), lo in the low halves as
// mma.sync's fragments and shared memory tiles order them.
__device__ __forceinline__ void split_bf16x2(float x0, float x1, unsigned& hi, unsigned& lo) {
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(hi) : "f"(x1), "f"(x0));
  const float h0 = __uint_as_float(hi << 16), h1 = __uint_as_float(hi & 0xffff0000u);
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(lo) : "f"(x1 - h1), "f"(x0 - h0));
}

// d += a * b on one m16n8kK tile: A row-major 16xK (4 registers), B column-major Kx8 (2), C 16x8 (4).
template <typename T>
__device__ __forceinline__ void mma_sync(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (Element<T>::kBytes == 4)
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else if constexpr (Element<T>::kBf16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// An output or epilogue input element as float, and float back to an element (round to nearest).
__device__ __forceinline__ float load_float(const float* p) { return *p; }
__device__ __forceinline__ float load_float(const bf16* p) { return __uint_as_float(unsigned(p->bits) << 16); }
__device__ __forceinline__ float load_float(const fp16* p) {
  float f;
  asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(p->bits));
  return f;
}

// kVec (1, 2 or 4) consecutive results stored as one access (alignment: the manifest's n % 4).
template <int kVec>
__device__ __forceinline__ void store_out(float* p, const float (&v)[kVec]) {
  store_vec<kVec>(p, v);
}
__device__ __forceinline__ unsigned pack_pair(const bf16*, float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ unsigned pack_pair(const fp16*, float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <int kVec, typename T>
__device__ __forceinline__ void store_out(T* p, const float (&v)[kVec]) {
  static_assert(kVec == 2 || kVec == 4, "16-bit results are stored in pairs");
  if constexpr (kVec == 4) {
    *reinterpret_cast<uint2*>(p) = make_uint2(pack_pair(p, v[0], v[1]), pack_pair(p, v[2], v[3]));
  } else {
    *reinterpret_cast<unsigned*>(p) = pack_pair(p, v[0], v[1]);
  }
}

}  // namespace kevo
