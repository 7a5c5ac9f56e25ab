// cuBLASLt and cuDNN reached through dlopen; each distinct step shape's descriptors and algorithm kept.
#include "eval/library_steps.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"

namespace kevo::eval {

namespace {

// One workspace serves both libraries; an algorithm that needs more is passed over.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
// How many of cuBLASLt's heuristic results a plan's "algo" may pick from, and autotuning times.
constexpr int kMatmulAlgorithms = 8;
// Autotuning runs each candidate algorithm once to warm up, then this many times, timed.
constexpr int kTunedRuns = 5;

// The first of `names` the process already has (LibTorch's copy), else the first that loads.
void* open_library(std::initializer_list<const char*> names, std::string& error) {
  for (const char* n : names)
    if (void* lib = dlopen(n, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return lib;
  for (const char* n : names) {
    if (void* lib = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* why = dlerror();
    if (error.empty()) error = why ? why : "unknown reason";
  }
  return nullptr;
}

template <typename Fn>
void resolve(void* lib, Fn& fn, const char* symbol, const char* who, const char* file) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (!fn) throw std::runtime_error(std::string(who) + ": " + file + " lacks " + symbol);
}

CUdeviceptr address(const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers, int index, const char* who) {
  if (buffers.size() != plan.buffers.size())
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(buffers.size()) + " buffers for a plan of " +
                                std::to_string(plan.buffers.size()));
  if (index < 0 || static_cast<size_t>(index) >= buffers.size())
    throw std::invalid_argument(std::string(who) + ": the step names buffer " + std::to_string(index) +
                                " of a plan of " + std::to_string(buffers.size()));
  return buffers[static_cast<size_t>(index)];
}

// The largest power of two up to 256 dividing the address: what cuBLASLt's heuristic may assume.
uint32_t alignment(CUdeviceptr p) {
  uint32_t a = 256;
  while (a > 1 && p % a != 0) a /= 2;
  return a;
}

bool adds_bias(Epilogue e) { return e == Epilogue::Bias || e == Epilogue::BiasRelu || e == Epilogue::BiasGelu; }

// ---- cuDNN's legacy convolution API, declared here because the GPU node may lack cudnn.h ------
// Signatures and values as in cuDNN 9's cudnn_graph.h, cudnn_ops.h and cudnn_cnn.h; its enums
// are passed as int, which is how the C ABI passes them.
namespace dnn {

using Status = int;
using Handle = struct cudnnContext*;
using TensorDesc = struct cudnnTensorStruct*;
using FilterDesc = struct cudnnFilterStruct*;
using ConvDesc = struct cudnnConvolutionStruct*;
using ActivationDesc = struct cudnnActivationStruct*;

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

}  // namespace dnn

}  // namespace

// ---- cuBLASLt ----------------------------------------------------------------------------------

struct LibrarySteps::Blas {
  // Row-major d[M,N] is column-major d^T[N,M] = op(b)^T op(a)^T, so cuBLASLt's A is our b and its
  // B our a; a row-major [rows, cols] matrix is a column-major [cols, rows] one with ld = cols.
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // our a, b, d
    std::vector<cublasLtMatmulAlgo_t> algos;  // the heuristic's usable results, best first: a step's "algo" indexes it
    int tuned = -1;                           // the autotuned index into algos, once chosen
    std::string problem;                      // describe() and the alignments, for messages
  };

  // One launch's operands and plan, the plan's descriptor holding the launch's bias pointer.
  struct Call {
    Plan* plan = nullptr;
    CUdeviceptr a = 0, b = 0, d = 0;
    float alpha = 1.0f;
  };

  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetStatusName) status_name = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;

  cublasLtHandle_t handle = nullptr;
  std::map<std::vector<int64_t>, Plan> plans;

  Blas() {
    std::string why;
    // LibTorch built for CUDA 12 brings libcublasLt.so.12; the entry points used here are the same.
    void* lib = open_library({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, why);
    if (!lib) throw std::runtime_error("cuBLASLt: libcublasLt.so.13 not found: " + why);
    const char* file = "libcublasLt";
    resolve(lib, create, "cublasLtCreate", "cuBLASLt", file);
    resolve(lib, destroy, "cublasLtDestroy", "cuBLASLt", file);
    resolve(lib, status_name, "cublasLtGetStatusName", "cuBLASLt", file);
    resolve(lib, desc_create, "cublasLtMatmulDescCreate", "cuBLASLt", file);
    resolve(lib, desc_destroy, "cublasLtMatmulDescDestroy", "cuBLASLt", file);
    resolve(lib, desc_set, "cublasLtMatmulDescSetAttribute", "cuBLASLt", file);
    resolve(lib, layout_create, "cublasLtMatrixLayoutCreate", "cuBLASLt", file);
    resolve(lib, layout_destroy, "cublasLtMatrixLayoutDestroy", "cuBLASLt", file);
    resolve(lib, pref_create, "cublasLtMatmulPreferenceCreate", "cuBLASLt", file);
    resolve(lib, pref_destroy, "cublasLtMatmulPreferenceDestroy", "cuBLASLt", file);
    resolve(lib, pref_set, "cublasLtMatmulPreferenceSetAttribute", "cuBLASLt", file);
    resolve(lib, heuristic, "cublasLtMatmulAlgoGetHeuristic", "cuBLASLt", file);
    resolve(lib, matmul, "cublasLtMatmul", "cuBLASLt", file);
    check(create(&handle), "cublasLtCreate");
  }

  ~Blas() {
    for (auto& [key, p] : plans) release(p);
    if (handle) destroy(handle);
  }

  void check(cublasStatus_t s, const char* what) const {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    const char* name = status_name ? status_name(s) : nullptr;
    throw std::runtime_error(std::string("cuBLASLt: ") +
                             (name ? name : "status " + std::to_string(static_cast<int>(s))) + " in " + what);
  }

  void release(Plan& p) const {
    if (p.a) layout_destroy(p.a);
    if (p.b) layout_destroy(p.b);
    if (p.d) layout_destroy(p.d);
    if (p.desc) desc_destroy(p.desc);
    p = Plan{};
  }

  template <typename T>
  void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) const {
    check(desc_set(desc, attr, &value, sizeof(value)), "cublasLtMatmulDescSetAttribute");
  }

  // A row-major [rows, cols] fp32 matrix.
  cublasLtMatrixLayout_t layout(int64_t rows, int64_t cols) const {
    cublasLtMatrixLayout_t l = nullptr;
    check(layout_create(&l, CUDA_R_32F, static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), cols),
          "cublasLtMatrixLayoutCreate");
    return l;
  }

  Plan& plan_for(const ResolvedMatmul& s, uint32_t align_a, uint32_t align_b, uint32_t align_d) {
    const MatmulStep& c = s.call;
    std::vector<int64_t> key = {
        s.m, s.n, s.k, c.transpose_a, c.transpose_b, static_cast<int64_t>(c.epilogue), align_a, align_b, align_d};
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan p;
    try {
      build(p, s, align_a, align_b, align_d);
    } catch (...) {
      release(p);
      throw;
    }
    p.problem = describe(s) + ", alignments " + std::to_string(align_a) + "/" + std::to_string(align_b) + "/" +
                std::to_string(align_d);
    return plans.emplace(std::move(key), p).first->second;
  }

  // The step's operands and plan, with the bias pointer set on the plan's descriptor.
  Call prepare(const ResolvedMatmul& step, const ResolvedPlan& rp, const std::vector<CUdeviceptr>& buffers) {
    Call c;
    c.a = address(rp, buffers, step.a, "cuBLASLt");
    c.b = address(rp, buffers, step.b, "cuBLASLt");
    c.d = address(rp, buffers, step.d, "cuBLASLt");
    const bool bias = adds_bias(step.call.epilogue);
    if (bias != (step.bias >= 0))
      throw std::invalid_argument("cuBLASLt: epilogue '" + epilogue_name(step.call.epilogue) +
                                  (bias ? "' needs a bias" : "' takes no bias"));
    c.plan = &plan_for(step, alignment(c.a), alignment(c.b), alignment(c.d));
    if (bias) {
      const void* ptr = reinterpret_cast<const void*>(address(rp, buffers, step.bias, "cuBLASLt"));
      set(c.plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ptr);
    }
    c.alpha = static_cast<float>(step.call.alpha);
    return c;
  }

  cublasStatus_t run(const Call& c, const cublasLtMatmulAlgo_t& algo, CUdeviceptr ws, CUstream stream) const {
    const Plan& p = *c.plan;
    const float beta = 0.0f;
    void* d = reinterpret_cast<void*>(c.d);
    return matmul(handle, p.desc, &c.alpha, reinterpret_cast<const void*>(c.b), p.b, reinterpret_cast<const void*>(c.a),
                  p.a, &beta, d, p.d, d, p.d, &algo, reinterpret_cast<void*>(ws), kWorkspaceBytes, stream);
  }

  // Times every usable algorithm of the call's plan on its operands and keeps the fastest in
  // plan.tuned. Each runs once (a warm-up: it loads its kernels), then kTunedRuns times back to
  // back with an event after each, so that each run is timed from the end of the one before; one
  // that cuBLASLt refuses to launch is passed over. The median of each decides.
  LibrarySteps::MatmulTuning tune(const Call& c, CUdeviceptr ws, CUstream stream) const {
    const CudaApi& api = *cuda_api();  // the workspace exists: the driver is there
    Plan& p = *c.plan;
    struct Events {
      const CudaApi& api;
      CUevent e[kTunedRuns + 1] = {};
      ~Events() {
        for (CUevent x : e)
          if (x) api.cuEventDestroy(x);
      }
    } ev{api};
    for (CUevent& x : ev.e) check_cuda(api.cuEventCreate(&x, CU_EVENT_DEFAULT), "cuEventCreate(cuBLASLt autotuning)");
    LibrarySteps::MatmulTuning t;
    t.problem = p.problem;
    for (const cublasLtMatmulAlgo_t& algo : p.algos) {
      bool ran = run(c, algo, ws, stream) == CUBLAS_STATUS_SUCCESS;
      if (ran) check_cuda(api.cuEventRecord(ev.e[0], stream), "cuEventRecord(cuBLASLt autotuning)");
      for (int r = 0; r < kTunedRuns && ran; ++r) {
        ran = run(c, algo, ws, stream) == CUBLAS_STATUS_SUCCESS;
        if (ran) check_cuda(api.cuEventRecord(ev.e[r + 1], stream), "cuEventRecord(cuBLASLt autotuning)");
      }
      check_cuda(api.cuStreamSynchronize(stream), "cuBLASLt autotuning");
      double median = std::numeric_limits<double>::infinity();
      if (ran) {
        std::vector<double> ms;
        for (int r = 0; r < kTunedRuns; ++r) {
          float x = 0;
          check_cuda(api.cuEventElapsedTime(&x, ev.e[r], ev.e[r + 1]), "cuEventElapsedTime(cuBLASLt autotuning)");
          ms.push_back(x);
        }
        std::sort(ms.begin(), ms.end());
        median = ms[ms.size() / 2];
      }
      t.median_ms.push_back(median);
    }
    const auto best = std::min_element(t.median_ms.begin(), t.median_ms.end());
    if (*best == std::numeric_limits<double>::infinity())
      throw std::runtime_error("cuBLASLt: none of the " + std::to_string(p.algos.size()) +
                               " heuristic algorithms launched for " + p.problem + " (autotuning)");
    t.algo = static_cast<int>(best - t.median_ms.begin());
    p.tuned = t.algo;
    return t;
  }

  void build(Plan& p, const ResolvedMatmul& s, uint32_t align_a, uint32_t align_b, uint32_t align_d) const {
    const MatmulStep& c = s.call;
    // CUBLAS_COMPUTE_32F is plain fp32: the TF32 variant is CUBLAS_COMPUTE_32F_FAST_TF32.
    check(desc_create(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, c.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N);
    set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, c.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N);
    set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue(c.epilogue));
    p.a = c.transpose_a ? layout(s.k, s.m) : layout(s.m, s.k);
    p.b = c.transpose_b ? layout(s.n, s.k) : layout(s.k, s.n);
    p.d = layout(s.m, s.n);

    cublasLtMatmulPreference_t pref = nullptr;
    check(pref_create(&pref), "cublasLtMatmulPreferenceCreate");
    cublasLtMatmulHeuristicResult_t results[kMatmulAlgorithms] = {};
    int found = 0;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    auto pref_set_value = [&](cublasLtMatmulPreferenceAttributes_t attr, auto value) {
      if (st == CUBLAS_STATUS_SUCCESS) st = pref_set(pref, attr, &value, sizeof(value));
    };
    pref_set_value(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t{kWorkspaceBytes});
    pref_set_value(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_b);  // cuBLASLt's A is our b
    pref_set_value(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_a);
    pref_set_value(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d);
    pref_set_value(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d);
    if (st != CUBLAS_STATUS_SUCCESS) {
      pref_destroy(pref);
      check(st, "cublasLtMatmulPreferenceSetAttribute");
    }
    st = heuristic(handle, p.desc, p.b, p.a, p.d, p.d, pref, kMatmulAlgorithms, results, &found);
    pref_destroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) check(st, "cublasLtMatmulAlgoGetHeuristic");
    for (int i = 0; i < found && st == CUBLAS_STATUS_SUCCESS; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= kWorkspaceBytes)
        p.algos.push_back(results[i].algo);
    if (!p.algos.empty()) return;
    throw std::runtime_error("cuBLASLt: no algorithm for " + describe(s) + " within a " +
                             std::to_string(kWorkspaceBytes >> 20) + " MiB workspace");
  }

  static cublasLtEpilogue_t epilogue(Epilogue e) {
    switch (e) {
      case Epilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
      case Epilogue::Relu: return CUBLASLT_EPILOGUE_RELU;
      case Epilogue::Gelu: return CUBLASLT_EPILOGUE_GELU;
      case Epilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
      case Epilogue::BiasRelu: return CUBLASLT_EPILOGUE_RELU_BIAS;
      case Epilogue::BiasGelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
    }
    throw std::invalid_argument("cuBLASLt: unknown epilogue");
  }

  // "op(a)[37,29] @ op(b)[29,51] (transpose_b, epilogue bias_gelu)"
  static std::string describe(const ResolvedMatmul& s) {
    auto dims = [](int64_t r, int64_t c) { return "[" + std::to_string(r) + "," + std::to_string(c) + "]"; };
    std::string flags;
    if (s.call.transpose_a) flags += "transpose_a, ";
    if (s.call.transpose_b) flags += "transpose_b, ";
    return "op(a)" + dims(s.m, s.k) + " @ op(b)" + dims(s.k, s.n) + " (" + flags + "epilogue " +
           epilogue_name(s.call.epilogue) + ")";
  }
};

// ---- cuDNN -------------------------------------------------------------------------------------

struct LibrarySteps::Dnn {
  struct Plan {
    dnn::TensorDesc x = nullptr, y = nullptr, bias = nullptr;
    dnn::FilterDesc w = nullptr;
    dnn::ConvDesc conv = nullptr;
    dnn::ActivationDesc relu = nullptr;
    int algo = 0;
  };

  const char* (*error_string)(dnn::Status) = nullptr;
  dnn::Status (*create)(dnn::Handle*) = nullptr;
  dnn::Status (*destroy)(dnn::Handle) = nullptr;
  dnn::Status (*set_stream)(dnn::Handle, CUstream) = nullptr;
  dnn::Status (*tensor_create)(dnn::TensorDesc*) = nullptr;
  dnn::Status (*tensor_set_4d)(dnn::TensorDesc, int format, int type, int n, int c, int h, int w) = nullptr;
  dnn::Status (*tensor_destroy)(dnn::TensorDesc) = nullptr;
  dnn::Status (*filter_create)(dnn::FilterDesc*) = nullptr;
  dnn::Status (*filter_set_4d)(dnn::FilterDesc, int type, int format, int k, int c, int h, int w) = nullptr;
  dnn::Status (*filter_destroy)(dnn::FilterDesc) = nullptr;
  dnn::Status (*conv_create)(dnn::ConvDesc*) = nullptr;
  dnn::Status (*conv_set_2d)(dnn::ConvDesc, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
                             int dilation_w, int mode, int compute_type) = nullptr;
  dnn::Status (*conv_set_groups)(dnn::ConvDesc, int groups) = nullptr;
  dnn::Status (*conv_set_math)(dnn::ConvDesc, int math_type) = nullptr;
  dnn::Status (*conv_destroy)(dnn::ConvDesc) = nullptr;
  dnn::Status (*forward_algorithms)(dnn::Handle, dnn::TensorDesc, dnn::FilterDesc, dnn::ConvDesc, dnn::TensorDesc,
                                    int requested, int* returned, dnn::ForwardAlgoPerf* results) = nullptr;
  dnn::Status (*forward_workspace)(dnn::Handle, dnn::TensorDesc, dnn::FilterDesc, dnn::ConvDesc, dnn::TensorDesc,
                                   int algo, size_t* bytes) = nullptr;
  dnn::Status (*forward)(dnn::Handle, const void* alpha, dnn::TensorDesc, const void* x, dnn::FilterDesc, const void* w,
                         dnn::ConvDesc, int algo, void* workspace, size_t workspace_bytes, const void* beta,
                         dnn::TensorDesc, void* y) = nullptr;
  dnn::Status (*add_tensor)(dnn::Handle, const void* alpha, dnn::TensorDesc, const void* a, const void* beta,
                            dnn::TensorDesc, void* c) = nullptr;
  dnn::Status (*activation_create)(dnn::ActivationDesc*) = nullptr;
  dnn::Status (*activation_set)(dnn::ActivationDesc, int mode, int nan_option, double coef) = nullptr;
  dnn::Status (*activation_destroy)(dnn::ActivationDesc) = nullptr;
  dnn::Status (*activation_forward)(dnn::Handle, dnn::ActivationDesc, const void* alpha, dnn::TensorDesc, const void* x,
                                    const void* beta, dnn::TensorDesc, void* y) = nullptr;

  dnn::Handle handle = nullptr;
  std::map<std::vector<int64_t>, Plan> plans;

  Dnn() {
    std::string why;
    // cuDNN 9 keeps the legacy API in libcudnn_cnn/libcudnn_ops, reached through libcudnn.so.9's symbols.
    void* lib = open_library({"libcudnn.so.9", "libcudnn.so"}, why);
    if (!lib) throw std::runtime_error("cuDNN: libcudnn.so.9 not found: " + why);
    const char* file = "libcudnn.so.9";
    resolve(lib, error_string, "cudnnGetErrorString", "cuDNN", file);
    resolve(lib, create, "cudnnCreate", "cuDNN", file);
    resolve(lib, destroy, "cudnnDestroy", "cuDNN", file);
    resolve(lib, set_stream, "cudnnSetStream", "cuDNN", file);
    resolve(lib, tensor_create, "cudnnCreateTensorDescriptor", "cuDNN", file);
    resolve(lib, tensor_set_4d, "cudnnSetTensor4dDescriptor", "cuDNN", file);
    resolve(lib, tensor_destroy, "cudnnDestroyTensorDescriptor", "cuDNN", file);
    resolve(lib, filter_create, "cudnnCreateFilterDescriptor", "cuDNN", file);
    resolve(lib, filter_set_4d, "cudnnSetFilter4dDescriptor", "cuDNN", file);
    resolve(lib, filter_destroy, "cudnnDestroyFilterDescriptor", "cuDNN", file);
    resolve(lib, conv_create, "cudnnCreateConvolutionDescriptor", "cuDNN", file);
    resolve(lib, conv_set_2d, "cudnnSetConvolution2dDescriptor", "cuDNN", file);
    resolve(lib, conv_set_groups, "cudnnSetConvolutionGroupCount", "cuDNN", file);
    resolve(lib, conv_set_math, "cudnnSetConvolutionMathType", "cuDNN", file);
    resolve(lib, conv_destroy, "cudnnDestroyConvolutionDescriptor", "cuDNN", file);
    resolve(lib, forward_algorithms, "cudnnGetConvolutionForwardAlgorithm_v7", "cuDNN", file);
    resolve(lib, forward_workspace, "cudnnGetConvolutionForwardWorkspaceSize", "cuDNN", file);
    resolve(lib, forward, "cudnnConvolutionForward", "cuDNN", file);
    resolve(lib, add_tensor, "cudnnAddTensor", "cuDNN", file);
    resolve(lib, activation_create, "cudnnCreateActivationDescriptor", "cuDNN", file);
    resolve(lib, activation_set, "cudnnSetActivationDescriptor", "cuDNN", file);
    resolve(lib, activation_destroy, "cudnnDestroyActivationDescriptor", "cuDNN", file);
    resolve(lib, activation_forward, "cudnnActivationForward", "cuDNN", file);
    check(create(&handle), "cudnnCreate");
  }

  ~Dnn() {
    for (auto& [key, p] : plans) release(p);
    if (handle) destroy(handle);
  }

  void check(dnn::Status s, const char* what) const {
    if (s == dnn::kSuccess) return;
    const char* name = error_string ? error_string(s) : nullptr;
    throw std::runtime_error(std::string("cuDNN: ") + (name ? name : "status " + std::to_string(s)) + " in " + what);
  }

  void release(Plan& p) const {
    if (p.x) tensor_destroy(p.x);
    if (p.y) tensor_destroy(p.y);
    if (p.bias) tensor_destroy(p.bias);
    if (p.w) filter_destroy(p.w);
    if (p.conv) conv_destroy(p.conv);
    if (p.relu) activation_destroy(p.relu);
    p = Plan{};
  }

  // The legacy API takes int sizes.
  static int narrow(int64_t v, const char* what) {
    if (v < 0 || v > INT_MAX)
      throw std::runtime_error(std::string("cuDNN: ") + what + " = " + std::to_string(v) +
                               " does not fit the legacy API's int");
    return static_cast<int>(v);
  }

  dnn::TensorDesc tensor(const Shape& s, const char* what) const {
    const int n = narrow(s[0], what), c = narrow(s[1], what), h = narrow(s[2], what), w = narrow(s[3], what);
    dnn::TensorDesc t = nullptr;
    check(tensor_create(&t), "cudnnCreateTensorDescriptor");
    dnn::Status st = tensor_set_4d(t, dnn::kNchw, dnn::kFloat, n, c, h, w);
    if (st != dnn::kSuccess) tensor_destroy(t);
    check(st, "cudnnSetTensor4dDescriptor");
    return t;
  }

  const Plan& plan_for(const ResolvedConv2d& s, const ResolvedPlan& rp) {
    const Conv2dStep& c = s.call;
    const Shape &x = rp.buffers.at(static_cast<size_t>(s.x)).shape, &w = rp.buffers.at(static_cast<size_t>(s.w)).shape,
                &y = rp.buffers.at(static_cast<size_t>(s.y)).shape;
    if (x.size() != 4 || w.size() != 4 || y.size() != 4)
      throw std::invalid_argument("cuDNN: conv2d operands must be NCHW tensors");
    if (c.epilogue != Epilogue::None && c.epilogue != Epilogue::Relu)
      throw std::invalid_argument("cuDNN: conv2d epilogue '" + epilogue_name(c.epilogue) + "' is not supported");
    std::vector<int64_t> key(x.begin(), x.end());
    key.insert(key.end(), w.begin(), w.end());
    key.insert(key.end(), y.begin(), y.end());
    key.insert(key.end(), {c.stride[0], c.stride[1], c.padding[0], c.padding[1], c.dilation[0], c.dilation[1], c.groups,
                           s.bias >= 0, c.epilogue == Epilogue::Relu});
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan p;
    try {
      build(p, s, x, w, y);
    } catch (...) {
      release(p);
      throw;
    }
    return plans.emplace(std::move(key), p).first->second;
  }

  void build(Plan& p, const ResolvedConv2d& s, const Shape& x, const Shape& w, const Shape& y) const {
    const Conv2dStep& c = s.call;
    p.x = tensor(x, "x's size");
    p.y = tensor(y, "y's size");
    check(filter_create(&p.w), "cudnnCreateFilterDescriptor");
    check(filter_set_4d(p.w, dnn::kFloat, dnn::kNchw, narrow(w[0], "w's size"), narrow(w[1], "w's size"),
                        narrow(w[2], "w's size"), narrow(w[3], "w's size")),
          "cudnnSetFilter4dDescriptor");
    check(conv_create(&p.conv), "cudnnCreateConvolutionDescriptor");
    check(conv_set_2d(p.conv, narrow(c.padding[0], "padding"), narrow(c.padding[1], "padding"),
                      narrow(c.stride[0], "stride"), narrow(c.stride[1], "stride"), narrow(c.dilation[0], "dilation"),
                      narrow(c.dilation[1], "dilation"), dnn::kCrossCorrelation, dnn::kFloat),
          "cudnnSetConvolution2dDescriptor");
    check(conv_set_groups(p.conv, narrow(c.groups, "groups")), "cudnnSetConvolutionGroupCount");
    check(conv_set_math(p.conv, dnn::kFmaMath), "cudnnSetConvolutionMathType");
    if (s.bias >= 0) p.bias = tensor({1, y[1], 1, 1}, "bias size");
    if (c.epilogue == Epilogue::Relu) {
      check(activation_create(&p.relu), "cudnnCreateActivationDescriptor");
      check(activation_set(p.relu, dnn::kRelu, dnn::kPropagateNan, 0.0), "cudnnSetActivationDescriptor");
    }

    // cuDNN's own heuristic ranking (no trial runs, as LibTorch without benchmark mode): the first
    // fp32 (non tensor-op) algorithm whose workspace fits.
    dnn::ForwardAlgoPerf results[dnn::kForwardAlgorithms] = {};
    int found = 0;
    check(forward_algorithms(handle, p.x, p.w, p.conv, p.y, dnn::kForwardAlgorithms, &found, results),
          "cudnnGetConvolutionForwardAlgorithm_v7");
    for (int i = 0; i < found; ++i) {
      const dnn::ForwardAlgoPerf& r = results[i];
      if (r.status != dnn::kSuccess || r.math_type == dnn::kTensorOpMath || r.math_type == dnn::kTensorOpMathConversion)
        continue;
      size_t bytes = 0;
      if (forward_workspace(handle, p.x, p.w, p.conv, p.y, r.algo, &bytes) != dnn::kSuccess) continue;
      if (bytes > kWorkspaceBytes) continue;
      p.algo = r.algo;
      return;
    }
    throw std::runtime_error("cuDNN: no fp32 forward algorithm for x" + shape_string(x) + " * w" + shape_string(w) +
                             " within a " + std::to_string(kWorkspaceBytes >> 20) + " MiB workspace");
  }
};

// ---- LibrarySteps ------------------------------------------------------------------------------

LibrarySteps::LibrarySteps() = default;

LibrarySteps::~LibrarySteps() {
  dnn_.reset();
  blas_.reset();
  if (workspace_)
    if (const CudaApi* api = cuda_api()) api->cuMemFree(workspace_);
}

CUdeviceptr LibrarySteps::workspace() {
  if (!workspace_) {
    const CudaApi* api = cuda_api();
    if (!api) throw std::runtime_error(cuda_driver_status().error);
    check_cuda(api->cuMemAlloc(&workspace_, kWorkspaceBytes), "cuMemAlloc(library workspace)");
  }
  return workspace_;
}

LibrarySteps::Blas& LibrarySteps::blas() {
  if (!blas_) blas_ = std::make_unique<Blas>();
  return *blas_;
}

std::string LibrarySteps::MatmulTuning::text() const {
  std::string s = "cuBLASLt autotuned " + problem + ": algo " + std::to_string(algo) + " of " +
                  std::to_string(median_ms.size()) + " (median ms:";
  for (double ms : median_ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.4g", ms);
    s += ms == std::numeric_limits<double>::infinity() ? std::string(" failed") : std::string(buf);
  }
  return s + ")";
}

int LibrarySteps::autotune(const ResolvedMatmul& step, const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers,
                           CUstream stream) {
  Blas& b = blas();
  CUdeviceptr ws = workspace();
  Blas::Call c = b.prepare(step, plan, buffers);
  if (c.plan->tuned < 0) tunings_.push_back(b.tune(c, ws, stream));
  return c.plan->tuned;
}

void LibrarySteps::launch(const ResolvedMatmul& step, const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers,
                          CUstream stream) {
  Blas& b = blas();
  CUdeviceptr ws = workspace();
  Blas::Call c = b.prepare(step, plan, buffers);
  const Blas::Plan& p = *c.plan;
  if (step.call.algo == kAutotunedAlgo && p.tuned < 0) tunings_.push_back(b.tune(c, ws, stream));
  const int64_t index = step.call.algo == kAutotunedAlgo ? p.tuned : step.call.algo;
  if (index < 0 || static_cast<size_t>(index) >= p.algos.size())
    throw std::runtime_error("cublaslt.matmul: algo " + std::to_string(index) + " but the heuristic returned " +
                             std::to_string(p.algos.size()) + " algorithm" + (p.algos.size() == 1 ? "" : "s") + " for " +
                             Blas::describe(step) + " (within the " + std::to_string(kWorkspaceBytes >> 20) +
                             " MiB workspace)");
  b.check(b.run(c, p.algos[static_cast<size_t>(index)], ws, stream), "cublasLtMatmul");
}

void LibrarySteps::launch(const ResolvedConv2d& step, const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers,
                          CUstream stream) {
  const void* x = reinterpret_cast<const void*>(address(plan, buffers, step.x, "cuDNN"));
  const void* w = reinterpret_cast<const void*>(address(plan, buffers, step.w, "cuDNN"));
  void* y = reinterpret_cast<void*>(address(plan, buffers, step.y, "cuDNN"));
  const void* bias =
      step.bias >= 0 ? reinterpret_cast<const void*>(address(plan, buffers, step.bias, "cuDNN")) : nullptr;
  if (!dnn_) dnn_ = std::make_unique<Dnn>();
  void* ws = reinterpret_cast<void*>(workspace());
  const Dnn::Plan& p = dnn_->plan_for(step, plan);
  Dnn& d = *dnn_;
  const float one = 1.0f, zero = 0.0f;
  d.check(d.set_stream(d.handle, stream), "cudnnSetStream");
  d.check(d.forward(d.handle, &one, p.x, x, p.w, w, p.conv, p.algo, ws, kWorkspaceBytes, &zero, p.y, y),
          "cudnnConvolutionForward");
  if (bias) d.check(d.add_tensor(d.handle, &one, p.bias, bias, &one, p.y, y), "cudnnAddTensor");
  if (p.relu) d.check(d.activation_forward(d.handle, p.relu, &one, p.y, y, &zero, p.y, y), "cudnnActivationForward");
}

}  // namespace kevo::eval
