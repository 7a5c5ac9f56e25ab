// The cuDNN convolution planner, header-only and without cudnn.h (the GPU node that runs kevo's
// worker may lack it): cuDNN 9's legacy API as far as kevo calls it, declared here, and a conv2d
// step's descriptors, choice of algorithm and forward calls through a table of those entry
// points. Exported headers fill the table from the linked cuDNN and check these declarations
// against cudnn.h when they compile (cudnn.h); kevo's worker fills it with dlsym
// (src/eval/library_steps.cpp). kevo export inlines the part below (from its "// ----" line) into
// cudnn.h's block, whose guard and version it shares.
#pragma once

#include <driver_types.h>  // cudaStream_t

#include <cstddef>
#include <cstdint>

// ---- the cuDNN planner, shared with kevo's evaluation (src/runtime/kevo_export/cudnn_plan.h)
// cuDNN's handle and descriptor types, by the struct names cudnn.h gives them.
struct cudnnContext;
struct cudnnTensorStruct;
struct cudnnFilterStruct;
struct cudnnConvolutionStruct;
struct cudnnActivationStruct;

namespace kevo_export {
inline namespace v2 {

// y[N,K,P,Q] = epilogue(conv2d(x[N,C,H,W], w[K,C/groups,R,S]) (+ bias[K])), NCHW fp32, the
// cross-correlation torch's conv2d computes; the bias and the ReLU are two more cuDNN calls.
struct Conv2dShape {
  int64_t x[4], w[4], y[4];
  int64_t stride[2], padding[2], dilation[2];
  int64_t groups;
  bool relu;
};

namespace cudnn {

// Signatures and values as in cuDNN 9's cudnn_graph.h, cudnn_ops.h and cudnn_cnn.h; its enums are
// passed as int, which is how the C ABI passes them.
using Status = int;
using Handle = cudnnContext*;
using TensorDesc = cudnnTensorStruct*;
using FilterDesc = cudnnFilterStruct*;
using ConvDesc = cudnnConvolutionStruct*;
using ActivationDesc = cudnnActivationStruct*;

constexpr Status kSuccess = 0;              // CUDNN_STATUS_SUCCESS
constexpr int kNchw = 0;                    // CUDNN_TENSOR_NCHW
constexpr int kFloat = 0;                   // CUDNN_DATA_FLOAT
constexpr int kCrossCorrelation = 1;        // CUDNN_CROSS_CORRELATION: what torch's conv2d computes
constexpr int kFmaMath = 3;                 // CUDNN_FMA_MATH: DEFAULT_MATH allows TF32 from sm_80 on
constexpr int kTensorOpMath = 1;            // CUDNN_TENSOR_OP_MATH
constexpr int kTensorOpMathConversion = 2;  // CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
constexpr int kRelu = 1;                    // CUDNN_ACTIVATION_RELU
constexpr int kPropagateNan = 1;            // CUDNN_PROPAGATE_NAN: as torch's relu
constexpr int kForwardAlgorithms = 8;       // CUDNN_CONVOLUTION_FWD_ALGO_COUNT

struct ForwardAlgoPerf {  // cudnnConvolutionFwdAlgoPerf_t
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

// The entry points the planner calls, by the cuDNN function each stands for.
struct Api {
  Status (*set_stream)(Handle, cudaStream_t);                                     // cudnnSetStream
  Status (*tensor_create)(TensorDesc*);                                           // cudnnCreateTensorDescriptor
  Status (*tensor_set_4d)(TensorDesc, int format, int type, int n, int c, int h, int w);  // cudnnSetTensor4dDescriptor
  Status (*tensor_destroy)(TensorDesc);                                           // cudnnDestroyTensorDescriptor
  Status (*filter_create)(FilterDesc*);                                           // cudnnCreateFilterDescriptor
  Status (*filter_set_4d)(FilterDesc, int type, int format, int k, int c, int h, int w);  // cudnnSetFilter4dDescriptor
  Status (*filter_destroy)(FilterDesc);                                           // cudnnDestroyFilterDescriptor
  Status (*conv_create)(ConvDesc*);                                // cudnnCreateConvolutionDescriptor
  Status (*conv_set_2d)(ConvDesc, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
                        int mode, int compute_type);               // cudnnSetConvolution2dDescriptor
  Status (*conv_set_groups)(ConvDesc, int groups);                 // cudnnSetConvolutionGroupCount
  Status (*conv_set_math)(ConvDesc, int math_type);                // cudnnSetConvolutionMathType
  Status (*conv_destroy)(ConvDesc);                                // cudnnDestroyConvolutionDescriptor
  Status (*forward_algorithms)(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int requested, int* returned,
                               ForwardAlgoPerf* results);          // cudnnGetConvolutionForwardAlgorithm_v7
  Status (*forward_workspace)(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int algo,
                              size_t* bytes);                      // cudnnGetConvolutionForwardWorkspaceSize
  Status (*forward)(Handle, const void* alpha, TensorDesc, const void* x, FilterDesc, const void* w, ConvDesc,
                    int algo, void* workspace, size_t workspace_bytes, const void* beta, TensorDesc,
                    void* y);                                      // cudnnConvolutionForward
  Status (*add_tensor)(Handle, const void* alpha, TensorDesc, const void* a, const void* beta, TensorDesc,
                       void* c);                                   // cudnnAddTensor
  Status (*activation_create)(ActivationDesc*);                    // cudnnCreateActivationDescriptor
  Status (*activation_set)(ActivationDesc, int mode, int nan_option, double coef);  // cudnnSetActivationDescriptor
  Status (*activation_destroy)(ActivationDesc);                    // cudnnDestroyActivationDescriptor
  Status (*activation_forward)(Handle, ActivationDesc, const void* alpha, TensorDesc, const void* x, const void* beta,
                               TensorDesc, void* y);               // cudnnActivationForward
};

// The first call that failed (by its cuDNN name) and its status, or none (ok()).
struct Outcome {
  const char* call = nullptr;
  Status status = kSuccess;
  bool ok() const { return call == nullptr; }
};

struct Plan {
  TensorDesc x = nullptr, y = nullptr, bias = nullptr;
  FilterDesc w = nullptr;
  ConvDesc conv = nullptr;
  ActivationDesc relu = nullptr;
  int algo = -1;  // the chosen forward algorithm; -1: none fits the workspace
};

inline bool same(const Conv2dShape& a, const Conv2dShape& b) {
  for (int i = 0; i < 4; ++i)
    if (a.x[i] != b.x[i] || a.w[i] != b.w[i] || a.y[i] != b.y[i]) return false;
  for (int i = 0; i < 2; ++i)
    if (a.stride[i] != b.stride[i] || a.padding[i] != b.padding[i] || a.dilation[i] != b.dilation[i]) return false;
  return a.groups == b.groups && a.relu == b.relu;
}

inline void release(const Api& api, Plan& p) {
  if (p.x) api.tensor_destroy(p.x);
  if (p.y) api.tensor_destroy(p.y);
  if (p.bias) api.tensor_destroy(p.bias);
  if (p.w) api.filter_destroy(p.w);
  if (p.conv) api.conv_destroy(p.conv);
  if (p.relu) api.activation_destroy(p.relu);
  p = Plan{};
}

// Records a failed call in `out`: whether all succeeded so far.
inline bool check(Outcome& out, const char* call, Status s) {
  if (s != kSuccess && out.ok()) out = Outcome{call, s};
  return out.ok();
}

// An NCHW fp32 tensor descriptor (the legacy API takes int sizes; the caller checked they fit).
inline bool tensor(const Api& api, Outcome& out, TensorDesc* t, const int64_t* d) {
  return check(out, "cudnnCreateTensorDescriptor", api.tensor_create(t)) &&
         check(out, "cudnnSetTensor4dDescriptor",
               api.tensor_set_4d(*t, kNchw, kFloat, static_cast<int>(d[0]), static_cast<int>(d[1]),
                                 static_cast<int>(d[2]), static_cast<int>(d[3])));
}

// The descriptors of the convolution, its bias (when `bias`) and its ReLU.
inline bool describe(const Api& api, Outcome& out, const Conv2dShape& s, bool bias, Plan& p) {
  const int64_t bias_shape[4] = {1, s.y[1], 1, 1};
  return tensor(api, out, &p.x, s.x) && tensor(api, out, &p.y, s.y) &&
         check(out, "cudnnCreateFilterDescriptor", api.filter_create(&p.w)) &&
         check(out, "cudnnSetFilter4dDescriptor",
               api.filter_set_4d(p.w, kFloat, kNchw, static_cast<int>(s.w[0]), static_cast<int>(s.w[1]),
                                 static_cast<int>(s.w[2]), static_cast<int>(s.w[3]))) &&
         check(out, "cudnnCreateConvolutionDescriptor", api.conv_create(&p.conv)) &&
         check(out, "cudnnSetConvolution2dDescriptor",
               api.conv_set_2d(p.conv, static_cast<int>(s.padding[0]), static_cast<int>(s.padding[1]),
                               static_cast<int>(s.stride[0]), static_cast<int>(s.stride[1]),
                               static_cast<int>(s.dilation[0]), static_cast<int>(s.dilation[1]), kCrossCorrelation,
                               kFloat)) &&
         check(out, "cudnnSetConvolutionGroupCount", api.conv_set_groups(p.conv, static_cast<int>(s.groups))) &&
         check(out, "cudnnSetConvolutionMathType", api.conv_set_math(p.conv, kFmaMath)) &&
         (!bias || tensor(api, out, &p.bias, bias_shape)) &&
         (!s.relu || (check(out, "cudnnCreateActivationDescriptor", api.activation_create(&p.relu)) &&
                      check(out, "cudnnSetActivationDescriptor",
                            api.activation_set(p.relu, kRelu, kPropagateNan, 0.0))));
}

// The plan: descriptors and the first fp32 (not tensor-op) algorithm of cuDNN's own heuristic
// ranking (no trial runs, as LibTorch without benchmark mode) whose workspace fits
// `workspace_bytes`; p.algo stays -1 when none does. On a failure p keeps what was made, for
// release().
inline Outcome build(const Api& api, Handle handle, const Conv2dShape& s, bool bias, size_t workspace_bytes, Plan& p) {
  Outcome out;
  ForwardAlgoPerf results[kForwardAlgorithms] = {};
  int found = 0;
  if (!describe(api, out, s, bias, p) ||
      !check(out, "cudnnGetConvolutionForwardAlgorithm_v7",
             api.forward_algorithms(handle, p.x, p.w, p.conv, p.y, kForwardAlgorithms, &found, results)))
    return out;
  for (int i = 0; i < found && i < kForwardAlgorithms; ++i) {
    const ForwardAlgoPerf& r = results[i];
    if (r.status != kSuccess || r.math_type == kTensorOpMath || r.math_type == kTensorOpMathConversion) continue;
    size_t bytes = 0;
    if (api.forward_workspace(handle, p.x, p.w, p.conv, p.y, r.algo, &bytes) != kSuccess || bytes > workspace_bytes)
      continue;
    p.algo = r.algo;
    break;
  }
  return out;
}

// Queues the convolution, then the bias and the ReLU when the plan has them, on `stream`.
inline Outcome run(const Api& api, Handle handle, const Plan& p, const void* x, const void* w, void* y,
                   const void* bias, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  Outcome out;
  if (!check(out, "cudnnSetStream", api.set_stream(handle, stream))) return out;
  if (!check(out, "cudnnConvolutionForward",
             api.forward(handle, &one, p.x, x, p.w, w, p.conv, p.algo, workspace, workspace_bytes, &zero, p.y, y)))
    return out;
  if (bias && !check(out, "cudnnAddTensor", api.add_tensor(handle, &one, p.bias, bias, &one, p.y, y))) return out;
  if (p.relu) check(out, "cudnnActivationForward", api.activation_forward(handle, p.relu, &one, p.y, y, &zero, p.y, y));
  return out;
}

}  // namespace cudnn
}  // namespace v2
}  // namespace kevo_export
