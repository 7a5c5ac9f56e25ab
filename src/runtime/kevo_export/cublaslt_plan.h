// The cuBLASLt planner, header-only on cuBLASLt's header: a matmul step's descriptors, the
// heuristic's usable algorithms and autotuning by timing, through a table of the entry points it
// calls. Exported headers fill the table from the linked cuBLASLt and the CUDA runtime
// (cublaslt.h); kevo's worker from dlsym and CUDA driver adapters (src/eval/library_steps.cpp),
// so the algorithm the search measured is the one the header runs. kevo export inlines the part
// below (from its "// ----" line) into cublaslt.h's block, whose guard and version it shares.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>

// ---- the cuBLASLt planner, shared with kevo's evaluation (src/runtime/kevo_export/cublaslt_plan.h)
namespace kevo_export {
inline namespace v6 {

// cuBLASLt's fp32 emulation (bf16x9) came with CUDA 13's headers; built against older ones, a
// plan asking for it fails as CUBLAS_STATUS_NOT_SUPPORTED.
#if defined(CUBLAS_VER_MAJOR) && CUBLAS_VER_MAJOR >= 13
#define KEVO_EXPORT_CUBLASLT_EMULATION 1
#else
#define KEVO_EXPORT_CUBLASLT_EMULATION 0
#endif

// d[m,n] = epilogue(alpha * op(a)[m,k] @ op(b)[k,n] (+ bias[n])) on row-major fp32 matrices, with
// the bias added after the alpha scaling (cuBLASLt's order) and gelu cuBLASLt's tanh approximation.
// A strided batch repeats it `batch` times: product i reads a + i * stride_a and b + i * stride_b
// (elements; 0 broadcasts one matrix to every product), writes d + i * m * n, and adds the same bias.
struct MatmulShape {
  int64_t m, n, k;
  bool transpose_a, transpose_b;
  float alpha;
  cublasLtEpilogue_t epilogue;
  int algo;  // index into the heuristic's usable results (0: its first choice), as the plan's "algo";
             // -1 (the plan's "auto"): the fastest of them, timed at the first call of each shape
  int emulation = 0;  // 0: plain fp32; else the bf16x9 emulation with this cublasEmulationStrategy_t
                      // (1 performant, 2 eager), as the plan's "emulation": sm_100a and sm_103a only
  int64_t batch = 1;                  // products in the strided batch (at most INT32_MAX)
  int64_t stride_a = 0, stride_b = 0;  // elements between consecutive products' a, b
};

namespace cublaslt {

constexpr int kMaxAlgorithms = 8;  // heuristic results asked for: what a plan's "algo" indexes
constexpr int kTunedRuns = 5;      // timed runs per algorithm when autotuning, after one warm-up

// The entry points the planner calls. The CUDA ones return 0 on success, else the error of the
// API that filled them (cudaError_t or CUresult): cudaStream_t and CUstream, cudaEvent_t and
// CUevent, are the same types.
struct Api {
  decltype(&cublasLtMatmulDescCreate) desc_create;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
  decltype(&cublasLtMatmul) matmul;
  int (*event_create)(cudaEvent_t*);
  int (*event_destroy)(cudaEvent_t);
  int (*event_record)(cudaEvent_t, cudaStream_t);
  int (*event_elapsed_ms)(float*, cudaEvent_t, cudaEvent_t);
  int (*stream_synchronize)(cudaStream_t);
#if KEVO_EXPORT_CUBLASLT_EMULATION
  // Null where the library lacks them (a cuBLASLt before 13): an emulated plan then fails.
  decltype(&cublasLtEmulationDescCreate) emulation_create;
  decltype(&cublasLtEmulationDescDestroy) emulation_destroy;
  decltype(&cublasLtEmulationDescSetAttribute) emulation_set;
#endif
};

// The first call that failed, or none (ok()).
struct Outcome {
  const char* call = nullptr;  // cuBLASLt's name for it, or the Api member's for a CUDA call
  int status = 0;              // a cublasStatus_t, or (cuda) what the Api's CUDA member returned
  bool cuda = false;
  bool ok() const { return call == nullptr; }
};

// What a plan is made for: the problem and the operands' alignments. Not alpha, which each call
// passes, nor "algo", which indexes the plan's list.
struct Key {
  int64_t m, n, k;
  bool transpose_a, transpose_b;
  cublasLtEpilogue_t epilogue;
  uint32_t align_a, align_b, align_d;
  int emulation;                         // MatmulShape's
  int64_t batch, stride_a, stride_b;     // MatmulShape's
};

// Descriptors (cuBLASLt's view: its A is our b, its B our a) and the usable algorithms.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // our a, b, d
  cublasLtMatmulAlgo_t algos[kMaxAlgorithms] = {};  // the heuristic's results that fit, best first
  int usable = 0;                                   // how many of algos
  int tuned = -1;                                   // the autotuned index into algos, once chosen
#if KEVO_EXPORT_CUBLASLT_EMULATION
  cublasLtEmulationDesc_t emulation = nullptr;  // an emulated plan's strategy, which desc points at
#endif
};

// The largest power of two up to 256 dividing the address: what cuBLASLt's heuristic may assume.
inline uint32_t alignment(uint64_t address) {
  uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

// A batch's alignments are those every product's operands share: the base's and the stride's.
inline Key key_of(const MatmulShape& s, uint64_t a, uint64_t b, uint64_t d) {
  const uint64_t bytes = sizeof(float), batched = s.batch > 1 ? 1 : 0;
  const uint64_t stride_a = batched * bytes * static_cast<uint64_t>(s.stride_a),
                 stride_b = batched * bytes * static_cast<uint64_t>(s.stride_b),
                 stride_d = batched * bytes * static_cast<uint64_t>(s.m * s.n);
  return Key{s.m,
             s.n,
             s.k,
             s.transpose_a,
             s.transpose_b,
             s.epilogue,
             alignment(a | stride_a),
             alignment(b | stride_b),
             alignment(d | stride_d),
             s.emulation,
             s.batch,
             s.stride_a,
             s.stride_b};
}

inline bool same(const Key& x, const Key& y) {
  return x.m == y.m && x.n == y.n && x.k == y.k && x.transpose_a == y.transpose_a &&
         x.transpose_b == y.transpose_b && x.epilogue == y.epilogue && x.align_a == y.align_a &&
         x.align_b == y.align_b && x.align_d == y.align_d && x.emulation == y.emulation && x.batch == y.batch &&
         x.stride_a == y.stride_a && x.stride_b == y.stride_b;
}

inline Outcome failed(const char* call, cublasStatus_t status) { return Outcome{call, static_cast<int>(status), false}; }

inline void release(const Api& api, Plan& p) {
  if (p.a) api.layout_destroy(p.a);
  if (p.b) api.layout_destroy(p.b);
  if (p.d) api.layout_destroy(p.d);
  if (p.desc) api.desc_destroy(p.desc);
#if KEVO_EXPORT_CUBLASLT_EMULATION
  if (p.emulation) api.emulation_destroy(p.emulation);  // after the descriptor that points at it
#endif
  p = Plan{};
}

// A row-major [rows, cols] fp32 matrix is a column-major [cols, rows] one with leading dimension cols;
// in a strided batch of `batch` (more than 1), consecutive matrices `stride` elements apart.
inline Outcome layout(const Api& api, cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t batch,
                      int64_t stride) {
  cublasStatus_t st = api.layout_create(l, CUDA_R_32F, static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), cols);
  if (st != CUBLAS_STATUS_SUCCESS) return failed("cublasLtMatrixLayoutCreate", st);
  if (batch <= 1) return Outcome{};
  const int32_t count = static_cast<int32_t>(batch);
  st = api.layout_set(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = api.layout_set(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
  return st == CUBLAS_STATUS_SUCCESS ? Outcome{} : failed("cublasLtMatrixLayoutSetAttribute", st);
}

// The heuristic's results for the plan's descriptors that fit `workspace_bytes`, into p.algos.
inline Outcome find_algorithms(const Api& api, cublasLtHandle_t handle, const Key& s, size_t workspace_bytes,
                               Plan& p) {
  cublasLtMatmulPreference_t pref = nullptr;
  cublasStatus_t st = api.pref_create(&pref);
  if (st != CUBLAS_STATUS_SUCCESS) return failed("cublasLtMatmulPreferenceCreate", st);
  const uint64_t max_workspace = workspace_bytes;
  st = api.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof max_workspace);
  const uint32_t aligns[4] = {s.align_b, s.align_a, s.align_d, s.align_d};  // cuBLASLt's A, B, C, D
  const cublasLtMatmulPreferenceAttributes_t align_attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; ++i)
    st = api.pref_set(pref, align_attrs[i], &aligns[i], sizeof aligns[i]);
  if (st != CUBLAS_STATUS_SUCCESS) {
    api.pref_destroy(pref);
    return failed("cublasLtMatmulPreferenceSetAttribute", st);
  }
  cublasLtMatmulHeuristicResult_t results[kMaxAlgorithms] = {};
  int found = 0;
  st = api.heuristic(handle, p.desc, p.b, p.a, p.d, p.d, pref, kMaxAlgorithms, results, &found);
  api.pref_destroy(pref);
  // NOT_SUPPORTED: no algorithm at all for the problem, which is no usable one.
  if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
    return failed("cublasLtMatmulAlgoGetHeuristic", st);
  p.usable = 0;
  for (int i = 0; i < found && i < kMaxAlgorithms && st == CUBLAS_STATUS_SUCCESS; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= workspace_bytes)
      p.algos[p.usable++] = results[i].algo;
  return Outcome{};
}

// An emulated plan's strategy, in an emulation descriptor that the matmul descriptor points at.
inline Outcome emulate(const Api& api, int strategy, Plan& p) {
#if KEVO_EXPORT_CUBLASLT_EMULATION
  if (!api.emulation_create || !api.emulation_destroy || !api.emulation_set)
    return failed("cublasLtEmulationDescCreate", CUBLAS_STATUS_NOT_SUPPORTED);
  cublasStatus_t st = api.emulation_create(&p.emulation);
  if (st != CUBLAS_STATUS_SUCCESS) return failed("cublasLtEmulationDescCreate", st);
  const int32_t value = strategy;  // cublasEmulationStrategy_t's value
  st = api.emulation_set(p.emulation, CUBLASLT_EMULATION_DESC_STRATEGY, &value, sizeof value);
  if (st != CUBLAS_STATUS_SUCCESS) return failed("cublasLtEmulationDescSetAttribute", st);
  st = api.desc_set(p.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &p.emulation, sizeof p.emulation);
  return st == CUBLAS_STATUS_SUCCESS ? Outcome{} : failed("cublasLtMatmulDescSetAttribute", st);
#else
  (void)api, (void)strategy, (void)p;
  return failed("cublasLtEmulationDescCreate", CUBLAS_STATUS_NOT_SUPPORTED);
#endif
}

// The plan for a problem: descriptors and the heuristic's usable algorithms within
// `workspace_bytes` (none usable is p.usable == 0, not a failure). On a failure p keeps what was
// made, for release().
inline Outcome build(const Api& api, cublasLtHandle_t handle, const Key& s, size_t workspace_bytes, Plan& p) {
  // Row-major d = op(a) op(b) is column-major d^T = op(b)^T op(a)^T: cuBLASLt's A is our b, its B our a.
  // CUBLAS_COMPUTE_32F is plain fp32; TF32 would be CUBLAS_COMPUTE_32F_FAST_TF32. The emulated
  // compute type splits each operand into three bf16 parts (nine bf16 products, fp32-accurate);
  // cuBLASLt refuses an emulation descriptor with any other.
#if KEVO_EXPORT_CUBLASLT_EMULATION
  const cublasComputeType_t compute = s.emulation ? CUBLAS_COMPUTE_32F_EMULATED_16BFX9 : CUBLAS_COMPUTE_32F;
#else
  const cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
#endif
  cublasStatus_t st = api.desc_create(&p.desc, compute, CUDA_R_32F);
  if (st != CUBLAS_STATUS_SUCCESS) return failed("cublasLtMatmulDescCreate", st);
  if (s.emulation) {
    const Outcome emulated = emulate(api, s.emulation, p);
    if (!emulated.ok()) return emulated;
  }
  const cublasOperation_t op_a = s.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = s.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  st = api.desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a);
  if (st == CUBLAS_STATUS_SUCCESS) st = api.desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = api.desc_set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &s.epilogue, sizeof s.epilogue);
  if (st != CUBLAS_STATUS_SUCCESS) return failed("cublasLtMatmulDescSetAttribute", st);
  // A strided batch's bias is the same vector for every product: CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE's default 0.
  Outcome laid = s.transpose_a ? layout(api, &p.a, s.k, s.m, s.batch, s.stride_a)
                               : layout(api, &p.a, s.m, s.k, s.batch, s.stride_a);
  if (laid.ok())
    laid = s.transpose_b ? layout(api, &p.b, s.n, s.k, s.batch, s.stride_b)
                         : layout(api, &p.b, s.k, s.n, s.batch, s.stride_b);
  if (laid.ok()) laid = layout(api, &p.d, s.m, s.n, s.batch, s.m * s.n);
  if (!laid.ok()) return laid;
  return find_algorithms(api, handle, s, workspace_bytes, p);
}

// The descriptor carries the bias pointer: set before each call that adds a bias.
inline Outcome set_bias(const Api& api, Plan& p, const void* bias) {
  cublasStatus_t st = api.desc_set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  return st == CUBLAS_STATUS_SUCCESS ? Outcome{} : failed("cublasLtMatmulDescSetAttribute", st);
}

// Queues the matmul with algorithm `index` of the plan (cublasLtMatmul's status).
inline cublasStatus_t run(const Api& api, cublasLtHandle_t handle, const Plan& p, int index, float alpha,
                          const void* a, const void* b, void* d, void* workspace, size_t workspace_bytes,
                          cudaStream_t stream) {
  if (index < 0 || index >= p.usable) return CUBLAS_STATUS_INVALID_VALUE;
  const float beta = 0.0f;
  return api.matmul(handle, p.desc, &alpha, b, p.b, a, p.a, &beta, d, p.d, d, p.d, &p.algos[index], workspace,
                    workspace_bytes, stream);
}

// Times every usable algorithm on the call's own operands and stream and sets p.tuned to the one
// with the smallest median (the first of equals), or leaves it -1 when none launched. Each runs
// once (a warm-up: it loads its kernels), then kTunedRuns times back to back with an event after
// each, so that each run is timed from the end of the one before; one that cuBLASLt refuses to
// launch is passed over. median_ms[i] gets each median, -1 for one that did not launch. Waits for
// the stream and leaves d overwritten. A failed CUDA call stops it, p.tuned unchanged.
inline Outcome tune(const Api& api, cublasLtHandle_t handle, Plan& p, float alpha, const void* a, const void* b,
                    void* d, void* workspace, size_t workspace_bytes, cudaStream_t stream,
                    float median_ms[kMaxAlgorithms]) {
  cudaEvent_t events[kTunedRuns + 1] = {};
  Outcome out;
  auto cuda = [&](const char* call, int status) {
    if (status != 0 && out.ok()) out = Outcome{call, status, true};
  };
  for (cudaEvent_t& e : events)
    if (out.ok()) cuda("event_create", api.event_create(&e));
  int best = -1;
  for (int i = 0; i < p.usable && out.ok(); ++i) {
    median_ms[i] = -1.0f;
    bool ran = run(api, handle, p, i, alpha, a, b, d, workspace, workspace_bytes, stream) == CUBLAS_STATUS_SUCCESS;
    if (ran) cuda("event_record", api.event_record(events[0], stream));
    for (int r = 0; r < kTunedRuns && ran && out.ok(); ++r) {
      ran = run(api, handle, p, i, alpha, a, b, d, workspace, workspace_bytes, stream) == CUBLAS_STATUS_SUCCESS;
      if (ran) cuda("event_record", api.event_record(events[r + 1], stream));
    }
    if (out.ok()) cuda("stream_synchronize", api.stream_synchronize(stream));
    if (!ran || !out.ok()) continue;
    float ms[kTunedRuns];
    for (int r = 0; r < kTunedRuns && out.ok(); ++r)
      cuda("event_elapsed_ms", api.event_elapsed_ms(&ms[r], events[r], events[r + 1]));
    if (!out.ok()) continue;
    for (int r = 1; r < kTunedRuns; ++r)  // insertion sort: ms[kTunedRuns / 2] is the median
      for (int j = r; j > 0 && ms[j] < ms[j - 1]; --j) {
        const float t = ms[j];
        ms[j] = ms[j - 1];
        ms[j - 1] = t;
      }
    median_ms[i] = ms[kTunedRuns / 2];
    if (best < 0 || median_ms[i] < median_ms[best]) best = i;
  }
  for (cudaEvent_t e : events)
    if (e) api.event_destroy(e);
  if (out.ok()) p.tuned = best;
  return out;
}

}  // namespace cublaslt
}  // namespace v6
}  // namespace kevo_export
