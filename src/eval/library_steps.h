// A plan's library steps (cuBLASLt matmuls, cuDNN convolutions) on the GPU (eval/ only: brings in cuda.h).
#pragma once

#include <cuda.h>

#include <memory>
#include <vector>

#include "core/candidate.h"

namespace kevo::eval {

// cuBLASLt and cuDNN, loaded with dlopen on first use (libcublasLt.so.13 or .so.12, libcudnn.so.9,
// or the unversioned names; a copy the process already has, such as LibTorch's, is taken first), so
// that the CPU build needs neither and the worker shares LibTorch's. Both compute in full fp32, never
// TF32, so their results match fp32 LibTorch with TF32 off. Descriptors and the chosen algorithms
// (cuBLASLt: the heuristic's list, up to 8, which a matmul step's "algo" indexes) are kept per
// distinct shape, so repeated launches of a step (timing runs) do no host-side search. Everything lives in the context current at first use; one object per worker process,
// used from one thread, its steps queued on one stream at a time (they share one workspace).
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

 private:
  struct Blas;
  struct Dnn;
  CUdeviceptr workspace();  // allocated on first use

  std::unique_ptr<Blas> blas_;
  std::unique_ptr<Dnn> dnn_;
  CUdeviceptr workspace_ = 0;
};

}  // namespace kevo::eval
