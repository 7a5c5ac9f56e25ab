// kevo template family "gemm", the wgmma path (sm_90a only): warpgroups of 4 warps, each owning
// a (kBM/kWarpsM) x (kBN/kWarpsN) slice as m64nN accumulators, fed by a cp.async pipeline into
// shared memory tiles with 128-byte rows, whose XOR swizzle (smem.cuh) is the 128-byte swizzle
// wgmma's matrix descriptors describe. 16-bit operands: A and B from shared memory (B stored
// [N, K]). fp32 operands: A from registers (rounded to TF32, or split into high part and residual
// for 3xTF32), B rounded/split once per tile by the whole block into K-major tiles (which also
// transposes a B stored [K, N]: tf32 wgmma reads only K-major operands from shared memory).
// On sm_100a/sm_103a the manifest offers only the mma.sync path; compiled there, this mainloop
// stops at a static_assert.
#pragma once

#include "smem.cuh"

namespace kevo {

template <typename T, int kN>
struct Wgmma;

// Instruction wrappers, one per operand type and N (64, 128, 256): an m64nN accumulator holds N/2
// floats per thread; every register is an asm operand, as in CUTLASS's mma_sm90_gmma.hpp.
// scale_d = 0 ignores d's old value: the first product of a tile needs no zeroed accumulators
// (zeroing them with ordinary instructions would make ptxas serialise the wgmmas).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
template <>
struct Wgmma<bf16, 64> {
  // d[64 x 64] += A (descriptor, K-major) * B (descriptor, K-major), k16.
  static __device__ __forceinline__ void ss(int scale_d, float (&d)[32], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<fp16, 64> {
  // d[64 x 64] += A (descriptor, K-major) * B (descriptor, K-major), k16.
  static __device__ __forceinline__ void ss(int scale_d, float (&d)[32], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<float, 64> {
  // d[64 x 64] += A (registers, TF32 bits) * B (descriptor, K-major, fp32 read as TF32), k8.
  static __device__ __forceinline__ void rs(int scale_d, float (&d)[32], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<bf16, 128> {
  // d[64 x 128] += A (descriptor, K-major) * B (descriptor, K-major), k16.
  static __device__ __forceinline__ void ss(int scale_d, float (&d)[64], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<fp16, 128> {
  // d[64 x 128] += A (descriptor, K-major) * B (descriptor, K-major), k16.
  static __device__ __forceinline__ void ss(int scale_d, float (&d)[64], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<float, 128> {
  // d[64 x 128] += A (registers, TF32 bits) * B (descriptor, K-major, fp32 read as TF32), k8.
  static __device__ __forceinline__ void rs(int scale_d, float (&d)[64], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<bf16, 256> {
  // d[64 x 256] += A (descriptor, K-major) * B (descriptor, K-major), k16.
  static __device__ __forceinline__ void ss(int scale_d, float (&d)[128], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<fp16, 256> {
  // d[64 x 256] += A (descriptor, K-major) * B (descriptor, K-major), k16.
  static __device__ __forceinline__ void ss(int scale_d, float (&d)[128], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <>
struct Wgmma<float, 256> {
  // d[64 x 256] += A (registers, TF32 bits) * B (descriptor, K-major, fp32 read as TF32), k8.
  static __device__ __forceinline__ void rs(int scale_d, float (&d)[128], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
  }
};
#endif

// A shared memory matrix descriptor of a K-major tile with rows of kRowBytes (128 or 64): the
// 128- or 64-byte swizzle (layout type 1 or 2), 8-row groups 8 * kRowBytes apart (stride byte
// offset), leading byte offset unused for K-major swizzled layouts (1 by convention).
template <int kRowBytes = 128>
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr) {
  static_assert(kRowBytes == 128 || kRowBytes == 64, "rows of 128 or 64 bytes");
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((unsigned long long)(8 * kRowBytes >> 4) << 32) |
         ((unsigned long long)(kRowBytes == 128 ? 1 : 2) << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Generic-proxy writes to shared memory (cp.async, st.shared) made visible to wgmma's async proxy.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Keeps a register's value where it is until here (wgmma reads its register operands late).
__device__ __forceinline__ void keep(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void keep(unsigned& r) { asm volatile("" : "+r"(r)::"memory"); }

template <typename T, Precision kPrec, int kBM, int kBN, int kBK, int kGroupsM, int kGroupsN, int kStages, BLayout kB>
struct WgmmaMainloop {
  static constexpr int kThreads = 128 * kGroupsM * kGroupsN;
  static constexpr int kWM = kBM / kGroupsM, kWN = kBN / kGroupsN;  // a warpgroup's slice
  static constexpr int kMB = kWM / 64;                                // m64 blocks per warpgroup
  static constexpr bool kFp32 = Element<T>::kBytes == 4;
  static constexpr bool kBf16x3 = kPrec == Precision::Bf16x3;
  static constexpr int kRowBytes = kBf16x3 ? kBK * 2 : kBK * Element<T>::kBytes;  // of the tiles wgmma reads
  static constexpr int kKSteps = kBK / (kFp32 && !kBf16x3 ? 8 : 16);
  // 16-bit: one stage of slack, since a warpgroup leaves one batch of wgmmas in flight.
  static constexpr int kAhead = kFp32 ? kStages - 1 : kStages - 2;
  // fp32 B rounded or split into K-major tiles; a K-major B rounded by the hardware is read as it lies.
  static constexpr bool kConvertB = kFp32 && !kBf16x3 && !(kPrec == Precision::Tf32 && kB == BLayout::KMajor);
  using TileA = SmemTile<T, kBM, kBK, false>;
  using TileB = typename If<kB == BLayout::KMajor, SmemTile<T, kBN, kBK, false>, SmemTile<T, kBK, kBN, kFp32>>::type;
  using TileK = SmemTile<float, kBN, kBK, false>;  // B's TF32 parts, K-major
  static constexpr int kStageBytes = TileA::kBytes + TileB::kBytes;
  // Bf16x3: both operands' bf16 parts, K-major ([A hi | A lo | B hi | B lo]), in two sets so that
  // one tile's conversion overlaps the previous tile's wgmmas.
  using TileHA = SmemTile<bf16, kBM, kBK, false>;
  using TileHB = SmemTile<bf16, kBN, kBK, false>;
  static constexpr int kPartsBytes = 2 * (TileHA::kBytes + TileHB::kBytes);
  static constexpr int kSharedBytes =
      kStages * kStageBytes + (kConvertB ? 2 * TileK::kBytes : 0) + (kBf16x3 ? 2 * kPartsBytes : 0);

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(sizeof(T) == 0, "wgmma needs sm_90a: on sm_100a/sm_103a the family takes the mma.sync path");
#endif
  static_assert(kRowBytes == 128 || (kBf16x3 && kRowBytes == 64),
                "wgmma tiles have 128-byte rows (64 for Bf16x3's parts): the 128- or 64-byte swizzle");
  static_assert(kWM % 64 == 0 && (kWN == 64 || kWN == 128 || kWN == 256),
                "a warpgroup's slice is m64 blocks by an N of 64, 128 or 256");
  static_assert(kFp32 || kB == BLayout::KMajor, "16-bit B stored [K, N] is not laid out for wgmma's descriptors");
  static_assert(kStages >= (kFp32 ? 2 : 3), "stages: 2 or more (3 or more with 16-bit operands)");
  static_assert(kFp32 == (kPrec != Precision::Native), "fp32 operands take split or TF32 products, 16-bit ones native");
  static_assert(kPrec != Precision::Tf32x3Promoted,
                "promoted 3xTF32 is the mma.sync path's (wgmma would need a second accumulator set)");

  float acc[kMB][kWN / 2];
  int scale_d = 0;  // 0 until the first wgmma of the tile has written the accumulators

  __device__ __forceinline__ void run(const T* __restrict__ A, const T* __restrict__ B, int M, int N, int K, int m0,
                                      int n0, int kt_begin, int kt_end, char* smem) {
    const int tid = threadIdx.x;
    const unsigned base = shared_address(smem);
    const int tiles = kt_end - kt_begin;
    auto load = [&](int stage, int kt) {
      const unsigned a = base + stage * kStageBytes, b = a + TileA::kBytes;
      TileA::template load<kThreads>(a, A, K, m0, kt * kBK, M, K, tid);
      if constexpr (kB == BLayout::KMajor)
        TileB::template load<kThreads>(b, B, K, n0, kt * kBK, N, K, tid);
      else
        TileB::template load<kThreads>(b, B, N, kt * kBK, n0, K, N, tid);
    };
#pragma unroll
    for (int s = 0; s < kAhead; ++s) {
      if (s < tiles) load(s, kt_begin + s);
      cp_async_commit();
    }
    for (int i = 0; i < tiles; ++i) {
      cp_async_wait<kAhead - 1>();
      fence_proxy_async();
      // Tile i has landed for every thread; every warpgroup is done with the stage the next copy
      // overwrites (its wgmmas of that tile completed before it reached this barrier).
      __syncthreads();
      const int next = i + kAhead;
      if (next < tiles) load(next % kStages, kt_begin + next);
      cp_async_commit();
      char* stage = smem + (i % kStages) * kStageBytes;
      if constexpr (kBf16x3) {
        char* parts = smem + kStages * kStageBytes + (i % 2) * kPartsBytes;
        convert_bf16x3(stage, parts);
        fence_proxy_async();
        __syncthreads();
        compute_bf16x3(parts);
      } else if constexpr (kFp32) {
        char* bk = stage + TileA::kBytes;
        if constexpr (kConvertB) {
          bk = smem + kStages * kStageBytes;
          convert_b(stage + TileA::kBytes, bk);
          fence_proxy_async();
          __syncthreads();
        }
        compute_tf32(stage, bk);
      } else {
        compute_16bit(stage);
      }
    }
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < kMB; ++i)
#pragma unroll
      for (int j = 0; j < kWN / 2; ++j) keep(acc[i][j]);
    cp_async_wait<0>();
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
  static __device__ __forceinline__ int group_m() { return threadIdx.x / 128 % kGroupsM * kWM; }
  static __device__ __forceinline__ int group_n() { return threadIdx.x / 128 / kGroupsM * kWN; }

  // The stage's fp32 tiles -> bf16 high and low parts, K-major, 8 consecutive k per thread and step.
  __device__ __forceinline__ void convert_bf16x3(const char* raw, char* parts) {
    const char* rb = raw + TileA::kBytes;
    char* pb = parts + 2 * TileHA::kBytes;
    auto split8 = [](const float (&x)[8], char* hi, char* lo) {
      unsigned h[4], l[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) split_bf16x2(x[2 * e], x[2 * e + 1], h[e], l[e]);
      *reinterpret_cast<uint4*>(hi) = make_uint4(h[0], h[1], h[2], h[3]);
      *reinterpret_cast<uint4*>(lo) = make_uint4(l[0], l[1], l[2], l[3]);
    };
#pragma unroll 2
    for (int q = threadIdx.x; q < kBM * kBK / 8; q += kThreads) {
      const int r = q / (kBK / 8), k = q % (kBK / 8) * 8;
      float x[8];
      load_vec<4>(*reinterpret_cast<float(*)[4]>(x), reinterpret_cast<const float*>(raw + TileA::offset(r, k)));
      load_vec<4>(*reinterpret_cast<float(*)[4]>(x + 4), reinterpret_cast<const float*>(raw + TileA::offset(r, k + 4)));
      split8(x, parts + TileHA::offset(r, k), parts + TileHA::kBytes + TileHA::offset(r, k));
    }
#pragma unroll 2
    for (int q = threadIdx.x; q < kBN * kBK / 8; q += kThreads) {
      const int n = q / (kBK / 8), k = q % (kBK / 8) * 8;
      float x[8];
      if constexpr (kB == BLayout::KMajor) {
        load_vec<4>(*reinterpret_cast<float(*)[4]>(x), reinterpret_cast<const float*>(rb + TileB::offset(n, k)));
        load_vec<4>(*reinterpret_cast<float(*)[4]>(x + 4), reinterpret_cast<const float*>(rb + TileB::offset(n, k + 4)));
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) x[e] = *reinterpret_cast<const float*>(rb + TileB::offset(k + e, n));
      }
      split8(x, pb + TileHB::offset(n, k), pb + TileHB::kBytes + TileHB::offset(n, k));
    }
  }

  __device__ __forceinline__ void compute_bf16x3(const char* parts) {
    const unsigned a_hi = shared_address(parts) + group_m() * kRowBytes, a_lo = a_hi + TileHA::kBytes;
    const unsigned b_hi = shared_address(parts + 2 * TileHA::kBytes) + group_n() * kRowBytes, b_lo = b_hi + TileHB::kBytes;
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kKSteps; ++k)
#pragma unroll
      for (int i = 0; i < kMB; ++i) {
        const unsigned am = i * 64 * kRowBytes + k * 32;
        Wgmma<bf16, kWN>::ss(k == 0 ? scale_d : 1, acc[i], wgmma_desc<kRowBytes>(a_lo + am), wgmma_desc<kRowBytes>(b_hi + k * 32));
        Wgmma<bf16, kWN>::ss(1, acc[i], wgmma_desc<kRowBytes>(a_hi + am), wgmma_desc<kRowBytes>(b_lo + k * 32));
        Wgmma<bf16, kWN>::ss(1, acc[i], wgmma_desc<kRowBytes>(a_hi + am), wgmma_desc<kRowBytes>(b_hi + k * 32));
      }
    scale_d = 1;
    wgmma_commit();
    wgmma_wait<1>();  // the previous tile's batch is done (its parts' set is free); this one stays in flight
  }

  __device__ __forceinline__ void compute_16bit(const char* stage) {
    const unsigned a = shared_address(stage) + group_m() * kRowBytes, b = shared_address(stage + TileA::kBytes) + group_n() * kRowBytes;
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

  // B's tile (as it landed) -> K-major TF32 parts: high parts in `bk`, residuals after them.
  __device__ __forceinline__ void convert_b(const char* raw, char* bk) {
    constexpr int kChunks = kBN * kBK / 4;
#pragma unroll 4
    for (int q = threadIdx.x; q < kChunks; q += kThreads) {
      const int n = q / (kBK / 4), k = q % (kBK / 4) * 4;
      float x[4];
#pragma unroll
      for (int e = 0; e < 4; ++e)
        x[e] = *reinterpret_cast<const float*>(raw + (kB == BLayout::KMajor ? TileB::offset(n, k + e) : TileB::offset(k + e, n)));
      unsigned big[4], small[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if constexpr (kPrec == Precision::Tf32x3)
          split_tf32(x[e], big[e], small[e]);
        else
          big[e] = to_tf32(x[e]);
      }
      *reinterpret_cast<uint4*>(bk + TileK::offset(n, k)) = make_uint4(big[0], big[1], big[2], big[3]);
      if constexpr (kPrec == Precision::Tf32x3)
        *reinterpret_cast<uint4*>(bk + TileK::kBytes + TileK::offset(n, k)) = make_uint4(small[0], small[1], small[2], small[3]);
    }
  }

  __device__ __forceinline__ void compute_tf32(const char* stage, const char* bk) {
    constexpr bool kSplit = kPrec == Precision::Tf32x3;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4, g = lane / 4, t = lane % 4;
    // Every A fragment of the tile in its own registers: wgmma reads them after it is issued.
    unsigned ab[kKSteps][kMB][4], as[kKSteps][kMB][4];
#pragma unroll
    for (int k = 0; k < kKSteps; ++k)
#pragma unroll
      for (int i = 0; i < kMB; ++i) {
        const int r = group_m() + i * 64 + warp * 16 + g, c = k * 8 + t;
        const float x[4] = {*reinterpret_cast<const float*>(stage + TileA::offset(r, c)),
                            *reinterpret_cast<const float*>(stage + TileA::offset(r + 8, c)),
                            *reinterpret_cast<const float*>(stage + TileA::offset(r, c + 4)),
                            *reinterpret_cast<const float*>(stage + TileA::offset(r + 8, c + 4))};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if constexpr (kSplit)
            split_tf32(x[e], ab[k][i][e], as[k][i][e]);
          else
            ab[k][i][e] = to_tf32(x[e]);
        }
      }
    const unsigned big = shared_address(bk) + group_n() * 128, small = big + TileK::kBytes;
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kKSteps; ++k)
#pragma unroll
      for (int i = 0; i < kMB; ++i) {
        if constexpr (kSplit) {
          Wgmma<float, kWN>::rs(k == 0 ? scale_d : 1, acc[i], as[k][i], wgmma_desc(big + k * 32));
          Wgmma<float, kWN>::rs(1, acc[i], ab[k][i], wgmma_desc(small + k * 32));
          Wgmma<float, kWN>::rs(1, acc[i], ab[k][i], wgmma_desc(big + k * 32));
        } else {
          Wgmma<float, kWN>::rs(k == 0 ? scale_d : 1, acc[i], ab[k][i], wgmma_desc(big + k * 32));
        }
      }
    scale_d = 1;
    wgmma_commit();
    // Registers feed these wgmmas: wait for them before the next tile's fragments take their place.
    wgmma_wait<0>();
#pragma unroll
    for (int k = 0; k < kKSteps; ++k)
#pragma unroll
      for (int i = 0; i < kMB; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          keep(ab[k][i][e]);
          if constexpr (kSplit) keep(as[k][i][e]);
        }
  }
};

}  // namespace kevo
