// The gemm family on one GPU, without kevo: instances of templates/gemm checked against cuBLAS
// (full fp32, or bf16 with fp32 accumulation) at the tasks' tolerance and timed against cuBLAS
// fp32, cuBLAS TF32 and bf16 (the tensor cores' practical peak in the same run), and against
// cuBLAS plus separate epilogue kernels (the eager plan of task 13). GROUP picks a set of
// instances, so that bench/gemm_bench.sh compiles the groups in parallel; groups 6 and 7 are the
// warp-specialised TMA path, whose tensor maps the host encodes here with the export runtime's
// encode_tensor_map (as kevo's evaluation does from the plan's tensor-map arguments).
// nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DGROUP=1 bench/gemm_bench.cu -lcublas
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <type_traits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../src/runtime/kevo_export/tensor_map.h"
#include "../templates/gemm/gemm.cuh"

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// Task 13's tail: leaky_relu(2 * (acc + b[col]), 0.1).
struct Linear13 {
  struct Params {
    const float* b;
  };
  static __device__ __forceinline__ float apply(const Params& p, float v, long long, long long c) {
    v = (v + p.b[c]) * 2.f;
    return v > 0.f ? v : v * 0.1f;
  }
};
// A GELU-like tail for the bf16 GEMM: relu(acc + b[col]) * 0.5.
struct BiasRelu {
  struct Params {
    const float* b;
  };
  static __device__ __forceinline__ float apply(const Params& p, float v, long long, long long c) {
    return fmaxf(v + p.b[c], 0.f) * 0.5f;
  }
};

template <typename Cfg, typename Tail>
__global__ void __launch_bounds__(Cfg::kThreads) gemm_kernel(kevo::GemmOperands<typename Cfg::T, typename Cfg::TOut> op,
                                                             typename Tail::Params tp) {
  kevo::gemm<Cfg, Tail>(op, tp);
}
template <typename Cfg, typename Tail>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    gemm_tma_kernel(const __grid_constant__ kevo::TensorMap ta, const __grid_constant__ kevo::TensorMap tb,
                    kevo::GemmOperands<typename Cfg::T, typename Cfg::TOut> op, typename Tail::Params tp) {
  kevo::gemm_tma<Cfg, Tail>(op, ta, tb, tp);
}
template <typename TOut, typename Tail>
__global__ void reduce_kernel(const float* ws, TOut* c, int m, int n, int splits, typename Tail::Params tp) {
  kevo::gemm_reduce<TOut, Tail>(ws, c, m, n, splits, tp);
}
__global__ void zero_kernel(int* f, int n) { kevo::gemm_zero_flags(f, n); }

// Reference tails and the eager plan's separate kernels.
template <typename Tail, typename TOut>
__global__ void tail_kernel(const float* in, TOut* out, long long mn, int n, typename Tail::Params tp) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= mn) return;
  float v = Tail::apply(tp, in[i], i / n, i % n);
  if constexpr (sizeof(TOut) == 4) out[i] = v;
  else out[i] = __float2bfloat16(v);
}
__global__ void scale_kernel(float* y, long long mn) {  // eager: (x W^T + b) * 2, then leaky_relu
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < mn) y[i] = y[i] * 2.f;
}
__global__ void leaky_kernel(float* y, long long mn) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < mn) y[i] = y[i] > 0.f ? y[i] : y[i] * 0.1f;
}
__global__ void bias_rows_kernel(float* y, const float* b, long long mn, int n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < mn) y[i] = b[i % n];
}

struct Problem {
  std::string name;
  int m, n, k;
  bool bf16, b_kmajor;
  int tail;  // 0 none, 1 Linear13, 2 BiasRelu
  double atol, rtol;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  float *bias = nullptr, *ref = nullptr, *ws = nullptr;
  int* flags = nullptr;
};

cublasHandle_t g_cublas;
int g_sms = 132;  // persistent TMA instances launch one block per SM

float time_ms(const std::function<void()>& f, int reps = 20) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t s, e;
  cudaEventCreate(&s), cudaEventCreate(&e);
  std::vector<float> t;
  for (int r = 0; r < 3; ++r) {
    cudaEventRecord(s);
    for (int i = 0; i < reps; ++i) f();
    cudaEventRecord(e);
    CHECK(cudaEventSynchronize(e));
    float ms;
    cudaEventElapsedTime(&ms, s, e);
    t.push_back(ms / reps);
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

// cuBLAS: C[m,n] = A[m,k] @ op(B) in fp32 (math mode: 0 pedantic fp32, 1 TF32), or bf16 with
// fp32 accumulation (output fp32 or bf16).
void cublas_gemm(const Problem& p, void* out, bool out_bf16, int tf32) {
  const float one = 1.f, zero = 0.f;
  cublasOperation_t opb = p.b_kmajor ? CUBLAS_OP_T : CUBLAS_OP_N;
  int ldb = p.b_kmajor ? p.k : p.n;
  cudaDataType_t in = p.bf16 ? CUDA_R_16BF : CUDA_R_32F, o = out_bf16 ? CUDA_R_16BF : CUDA_R_32F;
  cublasComputeType_t ct = p.bf16 ? CUBLAS_COMPUTE_32F : tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_PEDANTIC;
  cublasStatus_t st = cublasGemmEx(g_cublas, opb, CUBLAS_OP_N, p.n, p.m, p.k, &one, p.b, in, ldb, p.a, in, p.k, &zero,
                                   out, o, p.n, ct, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) std::printf("cublasGemmEx failed: %d\n", int(st));
}

void apply_tail_ref(const Problem& p, float* in, void* out, bool out_bf16) {
  long long mn = (long long)p.m * p.n;
  int blocks = int((mn + 255) / 256);
  if (p.tail == 1)
    out_bf16 ? tail_kernel<Linear13, __nv_bfloat16><<<blocks, 256>>>(in, (__nv_bfloat16*)out, mn, p.n, {p.bias})
             : tail_kernel<Linear13, float><<<blocks, 256>>>(in, (float*)out, mn, p.n, {p.bias});
  else if (p.tail == 2)
    out_bf16 ? tail_kernel<BiasRelu, __nv_bfloat16><<<blocks, 256>>>(in, (__nv_bfloat16*)out, mn, p.n, {p.bias})
             : tail_kernel<BiasRelu, float><<<blocks, 256>>>(in, (float*)out, mn, p.n, {p.bias});
  else
    out_bf16 ? tail_kernel<kevo::NoTail, __nv_bfloat16><<<blocks, 256>>>(in, (__nv_bfloat16*)out, mn, p.n, {})
             : tail_kernel<kevo::NoTail, float><<<blocks, 256>>>(in, (float*)out, mn, p.n, {});
}

Problem make(const std::string& name, int m, int n, int k, bool bf16, bool b_kmajor, int tail) {
  Problem p{name, m, n, k, bf16, b_kmajor, tail, bf16 ? 1e-2 : 1e-4, bf16 ? 1e-2 : 1e-4};
  std::mt19937 rng(m * 31 + n * 7 + k);
  std::uniform_real_distribution<float> u01(0.f, 1.f), uw(-1.f / std::sqrt(float(k)), 1.f / std::sqrt(float(k)));
  std::vector<float> a((size_t)m * k), b((size_t)n * k), bias(n);
  for (auto& x : a) x = u01(rng);
  for (auto& x : b) x = uw(rng);
  for (auto& x : bias) x = uw(rng);
  size_t es = bf16 ? 2 : 4;
  CHECK(cudaMalloc(&p.a, a.size() * es));
  CHECK(cudaMalloc(&p.b, b.size() * es));
  CHECK(cudaMalloc(&p.c, (size_t)m * n * es));
  CHECK(cudaMalloc(&p.bias, n * 4));
  CHECK(cudaMalloc(&p.ref, (size_t)m * n * 4));
  CHECK(cudaMalloc(&p.ws, (size_t)8 * m * n * 4));
  CHECK(cudaMalloc(&p.flags, 1 << 22));
  if (bf16) {
    std::vector<__nv_bfloat16> ah(a.size()), bh(b.size());
    for (size_t i = 0; i < a.size(); ++i) ah[i] = __float2bfloat16(a[i]);
    for (size_t i = 0; i < b.size(); ++i) bh[i] = __float2bfloat16(b[i]);
    CHECK(cudaMemcpy(p.a, ah.data(), ah.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(p.b, bh.data(), bh.size() * 2, cudaMemcpyHostToDevice));
  } else {
    CHECK(cudaMemcpy(p.a, a.data(), a.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(p.b, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  }
  CHECK(cudaMemcpy(p.bias, bias.data(), n * 4, cudaMemcpyHostToDevice));
  // The reference: cuBLAS in full fp32 (bf16 products with fp32 accumulation), then the tail in fp32.
  cublas_gemm(p, p.ws, false, 0);
  apply_tail_ref(p, p.ws, p.ref, false);
  CHECK(cudaDeviceSynchronize());
  return p;
}

// Violations of |out - ref| <= atol + rtol |ref| (torch.allclose), and the largest error.
bool check(const Problem& p, const char* label) {
  size_t mn = (size_t)p.m * p.n;
  std::vector<float> ref(mn), out(mn);
  CHECK(cudaMemcpy(ref.data(), p.ref, mn * 4, cudaMemcpyDeviceToHost));
  if (p.bf16) {
    std::vector<__nv_bfloat16> o(mn);
    CHECK(cudaMemcpy(o.data(), p.c, mn * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < mn; ++i) out[i] = __bfloat162float(o[i]);
  } else {
    CHECK(cudaMemcpy(out.data(), p.c, mn * 4, cudaMemcpyDeviceToHost));
  }
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < mn; ++i) {
    double d = std::fabs(double(out[i]) - ref[i]);
    if (!(d <= p.atol + p.rtol * std::fabs(ref[i]))) ++bad;
    if (!(d <= worst)) worst = d;
  }
  if (bad) std::printf("FAIL %s %s: %zu of %zu outside atol %g rtol %g, max abs err %g\n", label, p.name.c_str(), bad, mn, p.atol, p.rtol, worst);
  return bad == 0;
}

// The tensor map of a row-major 16-bit [rows, k] operand: dims [k, rows], box [kBK, box_rows],
// 128-byte swizzle (what the gemm family's plans ask for).
kevo::TensorMap tensor_map(const void* base, int rows, int k, int box_k, int box_rows) {
  const uint64_t dims[2] = {uint64_t(k), uint64_t(rows)}, strides[1] = {uint64_t(k) * 2};
  const uint32_t box[2] = {uint32_t(box_k), uint32_t(box_rows)};
  kevo_export::TensorMap m;
  CHECK(kevo_export::encode_tensor_map(&m, 9 /* CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 */, 2, base, dims, strides, box, 128));
  kevo::TensorMap out;
  static_assert(sizeof(out) == sizeof(m), "a tensor map is 128 bytes");
  std::memcpy(&out, &m, sizeof m);
  return out;
}

template <typename Cfg, typename Tail>
const void* kernel_of() {
  if constexpr (Cfg::kLoad == kevo::LoadPath::Tma)
    return reinterpret_cast<const void*>(&gemm_tma_kernel<Cfg, Tail>);
  else
    return reinterpret_cast<const void*>(&gemm_kernel<Cfg, Tail>);
}

template <typename Cfg, typename Tail>
void launch(const Problem& p) {
  using T = typename Cfg::T;
  using TOut = typename Cfg::TOut;
  kevo::GemmOperands<T, TOut> op{(const T*)p.a, (const T*)p.b, (TOut*)p.c, p.ws, p.flags, p.m, p.n, p.k};
  typename Tail::Params tp{};
  if constexpr (!std::is_same<Tail, kevo::NoTail>::value) tp.b = p.bias;
  const int tiles = ((p.m + Cfg::kBM - 1) / Cfg::kBM) * ((p.n + Cfg::kBN - 1) / Cfg::kBN);
  if (Cfg::kSplit == kevo::SplitK::Serial) zero_kernel<<<(tiles + 255) / 256, 256>>>(p.flags, tiles);
  if constexpr (Cfg::kLoad == kevo::LoadPath::Tma) {
    const kevo::TensorMap ta = tensor_map(p.a, p.m, p.k, Cfg::kBK, Cfg::kBM), tb = tensor_map(p.b, p.n, p.k, Cfg::kBK, Cfg::kBN);
    const int blocks = Cfg::kPersistent ? g_sms : tiles;
    gemm_tma_kernel<Cfg, Tail><<<dim3(blocks, Cfg::kSplits), Cfg::kThreads, Cfg::kSharedBytes>>>(ta, tb, op, tp);
  } else {
    gemm_kernel<Cfg, Tail><<<dim3(tiles, Cfg::kSplits), Cfg::kThreads, Cfg::kSharedBytes>>>(op, tp);
  }
  if (Cfg::kPlace == kevo::EpiloguePlace::Kernel)
    reduce_kernel<TOut, Tail><<<int(((long long)p.m * p.n / 2 + 255) / 256), 256>>>(p.ws, (TOut*)p.c, p.m, p.n, Cfg::kSplits, tp);
}

template <typename Cfg, typename Tail>
void run(const char* label, const std::vector<Problem*>& problems) {
  if (Cfg::kSharedBytes > 232448) {  // the manifest rejects these; a hand-written list may not
    std::printf("skip %s: %d bytes of shared memory\n", label, Cfg::kSharedBytes);
    return;
  }
  CHECK(cudaFuncSetAttribute(kernel_of<Cfg, Tail>(), cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSharedBytes));
  for (Problem* p : problems) {
    CHECK(cudaMemset(p->c, 0xff, (size_t)p->m * p->n * (p->bf16 ? 2 : 4)));  // poison
    launch<Cfg, Tail>(*p);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::printf("FAIL %s %s: %s\n", label, p->name.c_str(), cudaGetErrorString(e));
      std::exit(1);
    }
    bool ok = check(*p, label);
    double flop = 2.0 * p->m * p->n * p->k;
    if (flop < 1e10) {
      std::printf("%-4s %-58s %-18s correct\n", ok ? "ok" : "BAD", label, p->name.c_str());
      continue;
    }
    float ms = time_ms([&] { launch<Cfg, Tail>(*p); });
    std::printf("%-4s %-58s %-18s %8.3f ms %7.1f TFLOP/s\n", ok ? "ok" : "BAD", label, p->name.c_str(), ms, flop / ms / 1e9);
  }
}

#define CFG(path, T, prec, BM, BN, BK, WM, WN, S, BL, R, G, SK, NS, EP)                                               \
  kevo::GemmConfig<kevo::MmaPath::path, T, T, kevo::Precision::prec, BM, BN, BK, WM, WN, S, kevo::BLayout::BL, \
                   kevo::Raster::R, G, kevo::SplitK::SK, NS, kevo::EpiloguePlace::EP>
#define CFGT(BM, BN, WM, WN, S, R, G, SK, NS, EP, P)                                                            \
  kevo::GemmConfig<kevo::MmaPath::Wgmma, kevo::bf16, kevo::bf16, kevo::Precision::Native, BM, BN, 64, WM, WN, S,       \
                   kevo::BLayout::KMajor, kevo::Raster::R, G, kevo::SplitK::SK, NS, kevo::EpiloguePlace::EP,         \
                   kevo::LoadPath::Tma, P>
#define RUN_TMA(tail, probs, BM, BN, WM, WN, S, R, G, SK, NS, EP) \
  run<CFGT(BM, BN, WM, WN, S, R, G, SK, NS, EP, false), tail>(     \
      "TMA ws " #BM "x" #BN "x64 w" #WM "x" #WN " s" #S " " #R #G " " #SK #NS " " #EP, probs)
#define RUN_TMAP(tail, probs, BM, BN, WM, WN, S, R, G, EP)         \
  run<CFGT(BM, BN, WM, WN, S, R, G, None, 1, EP, true), tail>(     \
      "TMA ws persistent " #BM "x" #BN "x64 w" #WM "x" #WN " s" #S " " #R #G " " #EP, probs)
#define RUN(tail, probs, path, T, prec, BM, BN, BK, WM, WN, S, BL, R, G, SK, NS, EP)      \
  run<CFG(path, T, prec, BM, BN, BK, WM, WN, S, BL, R, G, SK, NS, EP), tail>(            \
      #path " " #prec " " #BM "x" #BN "x" #BK " w" #WM "x" #WN " s" #S " " #R #G " " #SK #NS " " #EP, probs)

void baselines_fp32(Problem& t13, Problem& sq) {
  // Eager task 13: cuBLAS fp32 with the bias as C (as torch's addmm), then * 2, then leaky_relu.
  long long mn = (long long)t13.m * t13.n;
  int blocks = int((mn + 255) / 256);
  float ms = time_ms([&] {
    bias_rows_kernel<<<blocks, 256>>>((float*)t13.c, t13.bias, mn, t13.n);
    const float one = 1.f;
    cublasGemmEx(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, t13.n, t13.m, t13.k, &one, t13.b, CUDA_R_32F, t13.k, t13.a,
                 CUDA_R_32F, t13.k, &one, t13.c, CUDA_R_32F, t13.n, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT);
    scale_kernel<<<blocks, 256>>>((float*)t13.c, mn);
    leaky_kernel<<<blocks, 256>>>((float*)t13.c, mn);
  });
  double f13 = 2.0 * t13.m * t13.n * t13.k;
  std::printf("base %-58s %-18s %8.3f ms %7.1f TFLOP/s\n", "eager-like: bias fill + cuBLAS fp32 + scale + leaky", t13.name.c_str(), ms, f13 / ms / 1e9);
  for (Problem* p : {&t13, &sq}) {
    double f = 2.0 * p->m * p->n * p->k;
    float m32 = time_ms([&] { cublas_gemm(*p, p->ws, false, 0); });
    float mtf = time_ms([&] { cublas_gemm(*p, p->ws, false, 1); });
    std::printf("base %-58s %-18s %8.3f ms %7.1f TFLOP/s\n", "cuBLAS fp32 (pedantic)", p->name.c_str(), m32, f / m32 / 1e9);
    std::printf("base %-58s %-18s %8.3f ms %7.1f TFLOP/s\n", "cuBLAS TF32", p->name.c_str(), mtf, f / mtf / 1e9);
  }
}

void baselines_bf16(Problem* bf) {
  {
    double f = 2.0 * bf->m * bf->n * bf->k;
    long long mn2 = (long long)bf->m * bf->n;
    float mb = time_ms([&] { cublas_gemm(*bf, bf->c, true, 0); });
    float mbe = time_ms([&] {
      cublas_gemm(*bf, bf->ws, false, 0);
      tail_kernel<BiasRelu, __nv_bfloat16><<<int((mn2 + 255) / 256), 256>>>(bf->ws, (__nv_bfloat16*)bf->c, mn2, bf->n, {bf->bias});
    });
    std::printf("base %-58s %-18s %8.3f ms %7.1f TFLOP/s\n", "cuBLAS bf16 (fp32 accumulation, bf16 out)", bf->name.c_str(), mb, f / mb / 1e9);
    std::printf("base %-58s %-18s %8.3f ms %7.1f TFLOP/s\n", "cuBLAS bf16 -> fp32, then tail kernel -> bf16", bf->name.c_str(), mbe, f / mbe / 1e9);
  }
}

int main() {
  cublasCreate(&g_cublas);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device %s, %d SMs, group %d\n", prop.name, prop.multiProcessorCount, GROUP);
  g_sms = prop.multiProcessorCount;
#if GROUP <= 3
  // fp32: task 13 (linear, B [N, K]) and its small workload, a square matmul (B [K, N]), an odd shape.
  Problem t13 = make("task13", 1024, 8192, 8192, false, true, 1), t13s = make("task13_small", 16, 128, 256, false, true, 1);
  Problem sq = make("matmul4096", 4096, 4096, 4096, false, false, 0), odd = make("odd_300x200x264", 300, 200, 264, false, false, 0);
  Problem oddk = make("oddk_130x72x36", 130, 72, 36, false, true, 1);
  std::vector<Problem*> lin = {&t13s, &oddk, &t13}, mm = {&odd, &sq};
#endif
#if GROUP == 1
  baselines_fp32(t13, sq);
  RUN(Linear13, lin, Sync, float, Tf32x3, 128, 128, 32, 2, 2, 3, KMajor, RowMajor, 8, None, 1, Registers);
  RUN(Linear13, lin, Wgmma, float, Tf32x3, 256, 128, 32, 2, 1, 3, KMajor, ColMajor, 8, None, 1, Staged);
  RUN(Linear13, lin, Wgmma, float, Tf32x3, 128, 128, 32, 2, 1, 3, KMajor, RowMajor, 8, Serial, 2, Registers);
  RUN(Linear13, lin, Sync, float, Tf32x3, 128, 128, 32, 2, 4, 3, KMajor, RowMajor, 8, Parallel, 2, Kernel);
  RUN(kevo::NoTail, mm, Wgmma, float, Tf32x3, 128, 128, 32, 2, 1, 3, NMajor, RowMajor, 8, None, 1, Registers);
  RUN(kevo::NoTail, mm, Sync, float, Tf32x3, 128, 128, 32, 4, 2, 3, NMajor, RowMajor, 8, Serial, 2, Staged);
#elif GROUP == 2
  // 3xbf16 on the wgmma path: task 13 (B [N, K]).
  RUN(Linear13, lin, Wgmma, float, Bf16x3, 128, 256, 32, 2, 1, 2, KMajor, RowMajor, 8, None, 1, Registers);
  RUN(Linear13, lin, Wgmma, float, Bf16x3, 256, 128, 32, 2, 1, 2, KMajor, RowMajor, 8, None, 1, Registers);
  RUN(Linear13, lin, Wgmma, float, Bf16x3, 128, 128, 32, 2, 1, 4, KMajor, RowMajor, 8, None, 1, Registers);
  RUN(Linear13, lin, Wgmma, float, Bf16x3, 128, 128, 32, 2, 1, 3, KMajor, RowMajor, 8, None, 1, Registers);
  RUN(Linear13, lin, Wgmma, float, Bf16x3, 128, 256, 32, 2, 1, 2, KMajor, ColMajor, 16, None, 1, Staged);
  RUN(Linear13, lin, Wgmma, float, Bf16x3, 128, 128, 32, 1, 1, 3, KMajor, RowMajor, 8, None, 1, Registers);
  RUN(Linear13, lin, Wgmma, float, Bf16x3, 128, 256, 32, 2, 1, 2, KMajor, RowMajor, 8, Serial, 2, Registers);
#elif GROUP == 3
  // 3xbf16: B [K, N] on wgmma, and the mma.sync path (sm_100a's).
  RUN(kevo::NoTail, mm, Wgmma, float, Bf16x3, 128, 256, 32, 2, 1, 2, NMajor, RowMajor, 8, None, 1, Registers);
  RUN(kevo::NoTail, mm, Wgmma, float, Bf16x3, 128, 128, 32, 2, 1, 4, NMajor, RowMajor, 8, None, 1, Registers);
  RUN(kevo::NoTail, mm, Wgmma, float, Bf16x3, 256, 128, 32, 2, 1, 2, NMajor, ColMajor, 8, None, 1, Staged);
  RUN(Linear13, lin, Sync, float, Bf16x3, 128, 128, 32, 2, 2, 3, KMajor, RowMajor, 8, None, 1, Registers);
  RUN(Linear13, lin, Sync, float, Bf16x3, 128, 64, 32, 2, 2, 4, KMajor, RowMajor, 8, None, 1, Registers);
  RUN(kevo::NoTail, mm, Sync, float, Bf16x3, 128, 128, 32, 2, 2, 3, NMajor, RowMajor, 8, None, 1, Registers);
  RUN(Linear13, lin, Wgmma, float, Tf32, 128, 256, 32, 2, 1, 4, KMajor, RowMajor, 8, None, 1, Registers);
#elif GROUP <= 5
  // bf16: a square 8192^3 linear GEMM (B [N, K]) with a fused tail, a small and an odd shape.
  Problem big = make("bf16_8192", 8192, 8192, 8192, true, true, 2), small = make("bf16_small", 16, 128, 256, true, true, 2);
  Problem odd = make("bf16_odd_300x200x264", 300, 200, 264, true, true, 2), oddn = make("bf16_nmajor_odd", 300, 200, 264, true, false, 2);
  Problem sqn = make("bf16_nmajor_4096", 4096, 4096, 4096, true, false, 2);
  std::vector<Problem*> lin = {&small, &odd, &big}, nmaj = {&oddn, &sqn};
#endif
#if GROUP == 4
  baselines_bf16(&big);
  RUN(BiasRelu, lin, Wgmma, kevo::bf16, Native, 256, 128, 64, 2, 1, 4, KMajor, ColMajor, 8, None, 1, Registers);
  RUN(BiasRelu, lin, Wgmma, kevo::bf16, Native, 256, 128, 64, 2, 1, 4, KMajor, RowMajor, 16, None, 1, Registers);
  RUN(BiasRelu, lin, Wgmma, kevo::bf16, Native, 128, 256, 64, 2, 1, 4, KMajor, ColMajor, 8, None, 1, Registers);
  RUN(BiasRelu, lin, Wgmma, kevo::bf16, Native, 256, 128, 64, 2, 1, 3, KMajor, ColMajor, 8, None, 1, Registers);
  RUN(BiasRelu, lin, Wgmma, kevo::bf16, Native, 256, 128, 64, 2, 1, 4, KMajor, ColMajor, 8, None, 1, Staged);
#elif GROUP == 5
  RUN(BiasRelu, lin, Wgmma, kevo::bf16, Native, 128, 128, 64, 1, 1, 3, KMajor, RowMajor, 8, None, 1, Registers);
  RUN(BiasRelu, lin, Wgmma, kevo::bf16, Native, 128, 256, 64, 2, 2, 3, KMajor, RowMajor, 8, Serial, 2, Registers);
  RUN(BiasRelu, lin, Sync, kevo::bf16, Native, 128, 128, 32, 2, 2, 4, KMajor, RowMajor, 8, None, 1, Registers);
  RUN(BiasRelu, nmaj, Sync, kevo::bf16, Native, 128, 128, 32, 2, 2, 4, NMajor, RowMajor, 8, None, 1, Registers);
  RUN(BiasRelu, nmaj, Sync, kevo::bf16, Native, 128, 128, 64, 2, 2, 3, NMajor, ColMajor, 4, Parallel, 2, Kernel);
#else
  // The TMA path, bf16 linear (B [N, K]): 8192^3 with the fused tail and without, and small and
  // odd shapes (partial tiles in M, N and K: TMA's zero fill) checked for correctness.
  Problem big = make("bf16_8192", 8192, 8192, 8192, true, true, 2), plain = make("bf16_8192_notail", 8192, 8192, 8192, true, true, 0);
  Problem small = make("bf16_small", 16, 128, 256, true, true, 2), odd = make("bf16_odd_300x200x264", 300, 200, 264, true, true, 2);
  Problem odd2 = make("bf16_odd_1000x776x1032", 1000, 776, 1032, true, true, 2), odd3 = make("bf16_odd_129x66x72", 129, 66, 72, true, true, 0);
  std::vector<Problem*> lin = {&small, &odd, &odd2, &big}, noTail = {&odd3, &plain};
#endif
#if GROUP == 6
  baselines_bf16(&big);
  {
    const double f = 2.0 * plain.m * plain.n * plain.k;
    const float mb = time_ms([&] { cublas_gemm(plain, plain.c, true, 0); });
    std::printf("base %-58s %-18s %8.3f ms %7.1f TFLOP/s\n", "cuBLAS bf16 (fp32 accumulation, bf16 out)", plain.name.c_str(), mb, f / mb / 1e9);
  }
  RUN_TMA(BiasRelu, lin, 128, 256, 2, 1, 4, ColMajor, 8, None, 1, Registers);
  RUN_TMA(kevo::NoTail, noTail, 128, 256, 2, 1, 4, ColMajor, 8, None, 1, Registers);
  RUN_TMAP(BiasRelu, lin, 128, 256, 2, 1, 4, ColMajor, 8, Registers);
  RUN_TMAP(kevo::NoTail, noTail, 128, 256, 2, 1, 4, ColMajor, 8, Registers);
  RUN_TMA(BiasRelu, lin, 256, 128, 2, 1, 4, ColMajor, 8, None, 1, Registers);
  RUN_TMA(kevo::NoTail, noTail, 256, 128, 2, 1, 4, ColMajor, 8, None, 1, Registers);
  RUN_TMA(BiasRelu, lin, 128, 256, 2, 1, 4, RowMajor, 16, None, 1, Registers);
  RUN_TMA(BiasRelu, lin, 128, 256, 2, 1, 3, ColMajor, 8, None, 1, Registers);
#elif GROUP == 7
  RUN_TMA(BiasRelu, lin, 128, 256, 2, 1, 4, ColMajor, 8, None, 1, Staged);
  RUN_TMA(BiasRelu, lin, 128, 256, 1, 2, 4, ColMajor, 8, None, 1, Registers);
  RUN_TMA(BiasRelu, lin, 128, 128, 1, 1, 6, RowMajor, 8, None, 1, Registers);
  RUN_TMA(BiasRelu, lin, 128, 128, 1, 1, 5, RowMajor, 8, None, 1, Staged);
  RUN_TMA(BiasRelu, lin, 256, 128, 2, 1, 4, ColMajor, 8, Serial, 2, Registers);
  RUN_TMA(BiasRelu, lin, 128, 256, 2, 1, 3, RowMajor, 8, Parallel, 2, Kernel);
  RUN_TMAP(BiasRelu, lin, 256, 128, 2, 1, 4, ColMajor, 8, Registers);
  RUN_TMAP(kevo::NoTail, noTail, 256, 128, 2, 1, 4, RowMajor, 16, Registers);
  RUN_TMAP(BiasRelu, lin, 128, 128, 1, 1, 6, ColMajor, 8, Registers);
  RUN_TMAP(BiasRelu, lin, 128, 256, 2, 1, 4, ColMajor, 8, Kernel);
  RUN_TMAP(BiasRelu, lin, 128, 128, 1, 1, 4, ColMajor, 8, Staged);
#endif
  std::printf("done group %d\n", GROUP);
  return 0;
}
