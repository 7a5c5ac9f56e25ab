// The export runtime's cuDNN conv2d step, header-only on the CUDA runtime and cuDNN 9 (its legacy
// API, deprecated there and still present): a plan cache per device and shape around the planner
// kevo's evaluation runs (cudnn_plan.h), filled from the linked cuDNN, whose declarations are
// checked here against cudnn.h. kevo export copies the block below (from its
// "// ---- kevo export runtime" line), with the planner inlined at its #include, into every header
// whose plan has a cuDNN step; the includes above it make this file compile on its own.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <cudnn.h>

// ---- kevo export runtime: cuDNN convolution steps (link with -lcudnn; cuDNN 9's legacy API)
#ifndef KEVO_EXPORT_CUDNN_V2
#define KEVO_EXPORT_CUDNN_V2
#include "cudnn_plan.h"
namespace kevo_export {
inline namespace v2 {

namespace detail {

// The planner declares cuDNN's API itself (kevo's worker runs where cudnn.h may be missing); here
// cudnn.h is at hand, so its values are checked against cuDNN's own.
static_assert(cudnn::kSuccess == CUDNN_STATUS_SUCCESS && cudnn::kNchw == CUDNN_TENSOR_NCHW &&
                  cudnn::kFloat == CUDNN_DATA_FLOAT && cudnn::kCrossCorrelation == CUDNN_CROSS_CORRELATION &&
                  cudnn::kFmaMath == CUDNN_FMA_MATH && cudnn::kTensorOpMath == CUDNN_TENSOR_OP_MATH &&
                  cudnn::kTensorOpMathConversion == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
                  cudnn::kRelu == CUDNN_ACTIVATION_RELU && cudnn::kPropagateNan == CUDNN_PROPAGATE_NAN &&
                  cudnn::kForwardAlgorithms == CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
              "kevo's declarations of cuDNN's values differ from cudnn.h");
static_assert(sizeof(cudnn::ForwardAlgoPerf) == sizeof(cudnnConvolutionFwdAlgoPerf_t) &&
                  offsetof(cudnn::ForwardAlgoPerf, memory) == offsetof(cudnnConvolutionFwdAlgoPerf_t, memory) &&
                  offsetof(cudnn::ForwardAlgoPerf, math_type) == offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType),
              "kevo's declaration of cudnnConvolutionFwdAlgoPerf_t differs from cudnn.h");

inline cudaError_t from_cudnn(cudnn::Status s) {
  switch (s) {
    case CUDNN_STATUS_SUCCESS: return cudaSuccess;
    case CUDNN_STATUS_ALLOC_FAILED: return cudaErrorMemoryAllocation;
    case CUDNN_STATUS_BAD_PARAM: return cudaErrorInvalidValue;
    case CUDNN_STATUS_NOT_SUPPORTED: return cudaErrorNotSupported;  // no fp32 algorithm for the shape
    default: return cudaErrorUnknown;
  }
}

// cudnnGetConvolutionForwardAlgorithm_v7 into the planner's declaration of its results.
inline cudnn::Status forward_algorithms(cudnnHandle_t h, cudnnTensorStruct* x, cudnnFilterStruct* w,
                                        cudnnConvolutionStruct* c, cudnnTensorStruct* y, int requested, int* returned,
                                        cudnn::ForwardAlgoPerf* results) {
  cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {};
  if (requested > CUDNN_CONVOLUTION_FWD_ALGO_COUNT) requested = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  const cudnnStatus_t st = cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, c, y, requested, returned, r);
  for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < *returned && i < requested; ++i)
    results[i] = cudnn::ForwardAlgoPerf{r[i].algo, r[i].status, r[i].time, r[i].memory, r[i].determinism,
                                        r[i].mathType, {0, 0, 0}};
  return st;
}

// The planner's entry points: the linked cuDNN, its enums passed as the ints the planner holds.
inline const cudnn::Api& linked_cudnn() {
  using namespace cudnn;
  static const Api api = {
      [](Handle h, cudaStream_t s) -> Status { return cudnnSetStream(h, s); },
      [](TensorDesc* t) -> Status { return cudnnCreateTensorDescriptor(t); },
      [](TensorDesc t, int format, int type, int n, int c, int h, int w) -> Status {
        return cudnnSetTensor4dDescriptor(t, cudnnTensorFormat_t(format), cudnnDataType_t(type), n, c, h, w);
      },
      [](TensorDesc t) -> Status { return cudnnDestroyTensorDescriptor(t); },
      [](FilterDesc* f) -> Status { return cudnnCreateFilterDescriptor(f); },
      [](FilterDesc f, int type, int format, int k, int c, int h, int w) -> Status {
        return cudnnSetFilter4dDescriptor(f, cudnnDataType_t(type), cudnnTensorFormat_t(format), k, c, h, w);
      },
      [](FilterDesc f) -> Status { return cudnnDestroyFilterDescriptor(f); },
      [](ConvDesc* c) -> Status { return cudnnCreateConvolutionDescriptor(c); },
      [](ConvDesc c, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h, int dilation_w, int mode,
         int type) -> Status {
        return cudnnSetConvolution2dDescriptor(c, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w,
                                               cudnnConvolutionMode_t(mode), cudnnDataType_t(type));
      },
      [](ConvDesc c, int groups) -> Status { return cudnnSetConvolutionGroupCount(c, groups); },
      [](ConvDesc c, int math) -> Status { return cudnnSetConvolutionMathType(c, cudnnMathType_t(math)); },
      [](ConvDesc c) -> Status { return cudnnDestroyConvolutionDescriptor(c); },
      &forward_algorithms,
      [](Handle h, TensorDesc x, FilterDesc w, ConvDesc c, TensorDesc y, int algo, size_t* bytes) -> Status {
        return cudnnGetConvolutionForwardWorkspaceSize(h, x, w, c, y, cudnnConvolutionFwdAlgo_t(algo), bytes);
      },
      [](Handle h, const void* alpha, TensorDesc xd, const void* x, FilterDesc wd, const void* w, ConvDesc c,
         int algo, void* ws, size_t ws_bytes, const void* beta, TensorDesc yd, void* y) -> Status {
        return cudnnConvolutionForward(h, alpha, xd, x, wd, w, c, cudnnConvolutionFwdAlgo_t(algo), ws, ws_bytes, beta,
                                       yd, y);
      },
      [](Handle h, const void* alpha, TensorDesc ad, const void* a, const void* beta, TensorDesc cd,
         void* c) -> Status { return cudnnAddTensor(h, alpha, ad, a, beta, cd, c); },
      [](ActivationDesc* a) -> Status { return cudnnCreateActivationDescriptor(a); },
      [](ActivationDesc a, int mode, int nan, double coef) -> Status {
        return cudnnSetActivationDescriptor(a, cudnnActivationMode_t(mode), cudnnNanPropagation_t(nan), coef);
      },
      [](ActivationDesc a) -> Status { return cudnnDestroyActivationDescriptor(a); },
      [](Handle h, ActivationDesc a, const void* alpha, TensorDesc xd, const void* x, const void* beta, TensorDesc yd,
         void* y) -> Status { return cudnnActivationForward(h, a, alpha, xd, x, beta, yd, y); },
  };
  return api;
}

struct Conv2dPlan {
  int device;
  Conv2dShape shape;
  bool bias;
  size_t workspace_bytes;
  cudnnHandle_t handle;
  cudnn::Plan plan;
};

// The plan for (device, shape, bias, workspace), made on first use; null with *err set when it
// cannot be made.
inline Conv2dPlan* find_or_make_plan(std::vector<Conv2dPlan>& plans,
                                     std::vector<std::pair<int, cudnnHandle_t>>& handles, int device,
                                     const Conv2dShape& s, bool bias, size_t workspace_bytes, cudaError_t* err) {
  for (Conv2dPlan& q : plans)
    if (q.device == device && cudnn::same(q.shape, s) && q.bias == bias && q.workspace_bytes == workspace_bytes)
      return &q;
  Conv2dPlan q{device, s, bias, workspace_bytes, nullptr, cudnn::Plan{}};
  for (const auto& h : handles)
    if (h.first == device) q.handle = h.second;
  if (!q.handle) {
    cudnnStatus_t st = cudnnCreate(&q.handle);
    if (st != CUDNN_STATUS_SUCCESS) {
      *err = from_cudnn(st);
      return nullptr;
    }
    handles.emplace_back(device, q.handle);
  }
  const cudnn::Outcome o = cudnn::build(linked_cudnn(), q.handle, s, bias, workspace_bytes, q.plan);
  if (!o.ok() || q.plan.algo < 0) {
    cudnn::release(linked_cudnn(), q.plan);
    *err = o.ok() ? cudaErrorNotSupported : from_cudnn(o.status);  // no fp32 algorithm fits
    return nullptr;
  }
  plans.push_back(q);
  return &plans.back();
}

}  // namespace detail

// Queues the convolution (and its bias and ReLU) on `stream` (of the current device). A handle per
// device, and descriptors and the algorithm per distinct (device, shape), are made on first use and
// kept for the life of the process (never destroyed, as for cuBLASLt). A mutex serialises the calls:
// the handle is bound to the call's stream.
inline cudaError_t cudnn_conv2d_forward(const void* x, const void* w, void* y, const void* bias,
                                        const Conv2dShape& s, void* workspace, size_t workspace_bytes,
                                        cudaStream_t stream) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  static std::mutex mutex;
  static std::vector<detail::Conv2dPlan>& plans = *new std::vector<detail::Conv2dPlan>;
  static std::vector<std::pair<int, cudnnHandle_t>>& handles = *new std::vector<std::pair<int, cudnnHandle_t>>;
  std::lock_guard<std::mutex> lock(mutex);
  detail::Conv2dPlan* plan =
      detail::find_or_make_plan(plans, handles, device, s, bias != nullptr, workspace_bytes, &err);
  if (!plan) return err;
  const cudnn::Outcome o =
      cudnn::run(detail::linked_cudnn(), plan->handle, plan->plan, x, w, y, bias, workspace, workspace_bytes, stream);
  return detail::from_cudnn(o.status);
}

}  // namespace v2
}  // namespace kevo_export
#endif  // KEVO_EXPORT_CUDNN_V2
