// The export runtime's cuBLASLt matmul step, header-only on the CUDA runtime and cuBLASLt: a
// plan cache per device and problem around the planner kevo's evaluation runs (cublaslt_plan.h),
// filled from the linked libraries. kevo export copies the block below (from its
// "// ---- kevo export runtime" line), with the planner inlined at its #include, into every
// header whose plan has a cuBLASLt step; the includes above it make this file compile on its own.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <cublasLt.h>

// ---- kevo export runtime: cuBLASLt matmul steps (link with -lcublasLt)
#ifndef KEVO_EXPORT_CUBLASLT_V6
#define KEVO_EXPORT_CUBLASLT_V6
#include "cublaslt_plan.h"
namespace kevo_export {
inline namespace v6 {

namespace detail {

inline cudaError_t from_cublas(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return cudaSuccess;
    case CUBLAS_STATUS_ALLOC_FAILED: return cudaErrorMemoryAllocation;
    case CUBLAS_STATUS_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUBLAS_STATUS_NOT_SUPPORTED: return cudaErrorNotSupported;  // no algorithm for the shape
    case CUBLAS_STATUS_ARCH_MISMATCH: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;
  }
}

inline cudaError_t from_outcome(const cublaslt::Outcome& o) {
  if (o.ok()) return cudaSuccess;
  return o.cuda ? static_cast<cudaError_t>(o.status) : from_cublas(static_cast<cublasStatus_t>(o.status));
}

// The planner's entry points: the linked cuBLASLt, and CUDA runtime events for autotuning.
inline const cublaslt::Api& linked_cublaslt() {
  static const cublaslt::Api api = {
      &cublasLtMatmulDescCreate,
      &cublasLtMatmulDescDestroy,
      &cublasLtMatmulDescSetAttribute,
      &cublasLtMatrixLayoutCreate,
      &cublasLtMatrixLayoutDestroy,
      &cublasLtMatrixLayoutSetAttribute,
      &cublasLtMatmulPreferenceCreate,
      &cublasLtMatmulPreferenceDestroy,
      &cublasLtMatmulPreferenceSetAttribute,
      &cublasLtMatmulAlgoGetHeuristic,
      &cublasLtMatmul,
      [](cudaEvent_t* e) { return static_cast<int>(cudaEventCreate(e)); },
      [](cudaEvent_t e) { return static_cast<int>(cudaEventDestroy(e)); },
      [](cudaEvent_t e, cudaStream_t s) { return static_cast<int>(cudaEventRecord(e, s)); },
      [](float* ms, cudaEvent_t from, cudaEvent_t to) { return static_cast<int>(cudaEventElapsedTime(ms, from, to)); },
      [](cudaStream_t s) { return static_cast<int>(cudaStreamSynchronize(s)); },
#if KEVO_EXPORT_CUBLASLT_EMULATION
      &cublasLtEmulationDescCreate,
      &cublasLtEmulationDescDestroy,
      &cublasLtEmulationDescSetAttribute,
#endif
  };
  return api;
}

struct MatmulPlan {
  int device;
  size_t workspace_bytes;
  cublaslt::Key key;
  cublasLtHandle_t handle;
  cublaslt::Plan plan;
};

// The plan for (device, problem, alignments, workspace), made on first use; null with *err set
// when it cannot be made.
inline MatmulPlan* find_or_make_plan(std::vector<MatmulPlan>& plans,
                                     std::vector<std::pair<int, cublasLtHandle_t>>& handles, int device,
                                     const cublaslt::Key& key, size_t workspace_bytes, cudaError_t* err) {
  for (MatmulPlan& q : plans)
    if (q.device == device && q.workspace_bytes == workspace_bytes && cublaslt::same(q.key, key)) return &q;
  MatmulPlan q{device, workspace_bytes, key, nullptr, cublaslt::Plan{}};
  for (const auto& h : handles)
    if (h.first == device) q.handle = h.second;
  if (!q.handle) {
    cublasStatus_t st = cublasLtCreate(&q.handle);
    if (st != CUBLAS_STATUS_SUCCESS) {
      *err = from_cublas(st);
      return nullptr;
    }
    handles.emplace_back(device, q.handle);
  }
  const cublaslt::Outcome o = cublaslt::build(linked_cublaslt(), q.handle, key, workspace_bytes, q.plan);
  if (!o.ok()) {
    cublaslt::release(linked_cublaslt(), q.plan);
    *err = from_outcome(o);
    return nullptr;
  }
  plans.push_back(q);
  return &plans.back();
}

// An autotuned problem's first call: the planner's timing, refused during stream capture, where
// nothing can be waited for.
inline cudaError_t tune(MatmulPlan& p, const MatmulShape& s, const void* a, const void* b, void* d, void* workspace,
                        cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t err = cudaStreamIsCapturing(stream, &capture);
  if (err != cudaSuccess) return err;
  if (capture != cudaStreamCaptureStatusNone) return cudaErrorStreamCaptureUnsupported;
  float median_ms[cublaslt::kMaxAlgorithms];
  err = from_outcome(cublaslt::tune(linked_cublaslt(), p.handle, p.plan, s.alpha, a, b, d, workspace,
                                    p.workspace_bytes, stream, median_ms));
  if (err != cudaSuccess) return err;
  return p.plan.tuned < 0 ? cudaErrorNotSupported : cudaSuccess;  // none of them launched
}

}  // namespace detail

// Queues the matmul on `stream` (of the current device). A handle per device, and descriptors and
// the usable algorithms per distinct (device, shape, operand alignment), are made on first use and
// kept for the life of the process (deliberately never destroyed: destruction at exit may run
// after the CUDA context is gone). An autotuned shape ("algo" -1) times its candidates on that
// first call, which therefore waits for the stream and must not be inside stream capture
// (cudaErrorStreamCaptureUnsupported). A mutex serialises the calls: a cached descriptor carries
// the bias pointer.
inline cudaError_t cublaslt_matmul(const void* a, const void* b, void* d, const void* bias, const MatmulShape& s,
                                   void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  static std::mutex mutex;
  static std::vector<detail::MatmulPlan>& plans = *new std::vector<detail::MatmulPlan>;
  static std::vector<std::pair<int, cublasLtHandle_t>>& handles = *new std::vector<std::pair<int, cublasLtHandle_t>>;
  std::lock_guard<std::mutex> lock(mutex);
  const cublaslt::Key key = cublaslt::key_of(s, reinterpret_cast<uintptr_t>(a), reinterpret_cast<uintptr_t>(b),
                                             reinterpret_cast<uintptr_t>(d));
  detail::MatmulPlan* plan = detail::find_or_make_plan(plans, handles, device, key, workspace_bytes, &err);
  if (!plan) return err;
  if (plan->plan.usable == 0) return cudaErrorNotSupported;  // no algorithm fits the workspace
  if (bias) err = detail::from_outcome(cublaslt::set_bias(detail::linked_cublaslt(), plan->plan, bias));
  if (err == cudaSuccess && s.algo < 0 && plan->plan.tuned < 0) err = detail::tune(*plan, s, a, b, d, workspace, stream);
  if (err != cudaSuccess) return err;
  const int index = s.algo < 0 ? plan->plan.tuned : s.algo;
  if (index >= plan->plan.usable) return cudaErrorNotSupported;  // the plan's "algo" is past the list
  return detail::from_cublas(cublaslt::run(detail::linked_cublaslt(), plan->handle, plan->plan, index, s.alpha, a, b,
                                           d, workspace, workspace_bytes, stream));
}

}  // namespace v6
}  // namespace kevo_export
#endif  // KEVO_EXPORT_CUBLASLT_V6
