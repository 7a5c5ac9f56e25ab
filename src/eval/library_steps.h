// A plan's library steps (cuBLASLt matmuls, cuDNN convolutions) on the GPU (eval/ only: brings in cuda.h).
#pragma once

#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "core/candidate.h"

namespace kevo::eval {

// cuBLASLt and cuDNN, loaded with dlopen on first use (libcublasLt.so.13 or .so.12, libcudnn.so.9,
// or the unversioned names; a copy the process already has, such as LibTorch's, is taken first), so
// that the CPU build needs neither and the worker shares LibTorch's. Both compute in full fp32, never
// TF32, so their results match fp32 LibTorch with TF32 off. The descriptors, algorithm lists and
// choices come from the export runtime's planners (src/runtime/kevo_export/*_plan.h), the code an
// exported header runs. They are kept per distinct shape (cuBLASLt: the heuristic's list, up to 8,
// which a matmul step's "algo" indexes, and the autotuned choice), so repeated launches of a step
// (timing runs) do no host-side search. Everything lives in the context current at first use; one
// object per worker process, used from one thread, its steps queued on one stream at a time (they
// share one workspace).
class LibrarySteps {
 public:
  LibrarySteps();   // loads nothing, allocates nothing
  ~LibrarySteps();  // destroys the handles, the descriptors and the workspace
  LibrarySteps(const LibrarySteps&) = delete;
  LibrarySteps& operator=(const LibrarySteps&) = delete;

  // Queues the step on `stream` (a stream of the current context's device); buffers[i] is the
  // device address of plan.buffers[i]. Throws std::runtime_error with one line on failure:
  // "cuBLASLt: no algorithm for ...", "cublaslt.matmul: algo 5 but the heuristic returned 3
  // algorithms for ...", "cuDNN: libcudnn.so.9 not found: ...",
  // "cuDNN: CUDNN_STATUS_BAD_PARAM in cudnnConvolutionForward".
  void launch(const ResolvedMatmul& step, const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers,
              CUstream stream);
  void launch(const ResolvedConv2d& step, const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers,
              CUstream stream);

  // What autotuning chose for one problem of an "algo": "auto" matmul step.
  struct MatmulTuning {
    std::string problem;            // "op(a)[16,256] @ op(b)[256,128] (epilogue bias), alignments 256/256/256"
    int algo = 0;                   // the index chosen into the heuristic's usable results
    std::vector<double> median_ms;  // per usable result, in the heuristic's order; infinity: it did not run
    std::string text() const;       // one line: the problem, the choice and every median
  };

  // The index into cuBLASLt's usable heuristic results that an autotuned step runs for this problem
  // (shape, transposes, epilogue, operand alignments: what the descriptor cache keys on), chosen on
  // the problem's first call: each usable result (up to 8) runs once to warm up, then 5 times back
  // to back between events on `stream`, on the step's own buffers; the smallest median wins. That
  // call waits for those runs and leaves the step's output overwritten (the launch that follows
  // rewrites it). launch() does the same for an autotuned step; the worker calls this before
  // timing, so that no tuning run falls inside a timed span. Throws as launch() does.
  int autotune(const ResolvedMatmul& step, const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers,
               CUstream stream);
  // Every autotuned choice made so far (by launch() or autotune()), in order.
  const std::vector<MatmulTuning>& tunings() const { return tunings_; }

 private:
  struct Blas;
  struct Dnn;
  Blas& blas();             // loaded on first use
  CUdeviceptr workspace();  // allocated on first use

  std::unique_ptr<Blas> blas_;
  std::unique_ptr<Dnn> dnn_;
  CUdeviceptr workspace_ = 0;
  std::vector<MatmulTuning> tunings_;
};

}  // namespace kevo::eval
