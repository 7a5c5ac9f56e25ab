// cuBLASLt and cuDNN reached through dlopen and planned by the export runtime's own planners
// (src/runtime/kevo_export/cublaslt_plan.h, cudnn_plan.h), filled here from dlsym and the CUDA
// driver: the descriptors, algorithm lists and autotuned choices the worker measures are the ones
// an exported header makes. What stays here is the worker's: loading, error texts, one handle and
// workspace per process, the tunings it reports.
#include "eval/library_steps.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/graph.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "runtime/kevo_export/cublaslt_plan.h"
#include "runtime/kevo_export/cudnn_plan.h"

namespace kevo::eval {

namespace lt = kevo_export::cublaslt;
namespace dnn = kevo_export::cudnn;

namespace {

// One workspace serves both libraries; an algorithm that needs more is passed over.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// dlsym's answer, or null where the library lacks the symbol (an older cuBLASLt's missing emulation).
template <typename Fn>
void resolve_optional(void* lib, Fn& fn, const char* symbol) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
}

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

const void* pointer(CUdeviceptr p) { return reinterpret_cast<const void*>(p); }
void* mutable_pointer(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

bool adds_bias(Epilogue e) { return e == Epilogue::Bias || e == Epilogue::BiasRelu || e == Epilogue::BiasGelu; }

// The planner's timing calls on the driver API (CUevent is cudaEvent_t, CUstream cudaStream_t).
// They run only once the workspace exists, so the driver is there.
int event_create(cudaEvent_t* e) { return cuda_api()->cuEventCreate(e, CU_EVENT_DEFAULT); }
int event_destroy(cudaEvent_t e) { return cuda_api()->cuEventDestroy(e); }
int event_record(cudaEvent_t e, cudaStream_t s) { return cuda_api()->cuEventRecord(e, s); }
int event_elapsed_ms(float* ms, cudaEvent_t from, cudaEvent_t to) {
  return cuda_api()->cuEventElapsedTime(ms, from, to);
}
int stream_synchronize(cudaStream_t s) { return cuda_api()->cuStreamSynchronize(s); }

// How the worker names the planner's CUDA calls in its errors.
const char* autotuning_call(const std::string& member) {
  if (member == "event_create") return "cuEventCreate(cuBLASLt autotuning)";
  if (member == "event_record") return "cuEventRecord(cuBLASLt autotuning)";
  if (member == "event_elapsed_ms") return "cuEventElapsedTime(cuBLASLt autotuning)";
  return "cuBLASLt autotuning";  // stream_synchronize
}

}  // namespace

// ---- cuBLASLt ----------------------------------------------------------------------------------

struct LibrarySteps::Blas {
  struct Plan {
    lt::Key key{};
    lt::Plan core;        // descriptors, the usable algorithms a step's "algo" indexes, the tuned choice
    std::string problem;  // describe() and the alignments, for messages
  };

  // One launch's operands and plan, the plan's descriptor holding the launch's bias pointer.
  struct Call {
    Plan* plan = nullptr;
    CUdeviceptr a = 0, b = 0, d = 0;
    float alpha = 1.0f;
  };

  lt::Api api{};
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetStatusName) status_name = nullptr;
  cublasLtHandle_t handle = nullptr;
  std::vector<std::unique_ptr<Plan>> plans;  // by key; pointers stay valid

  Blas() {
    std::string why;
    // LibTorch built for CUDA 12 brings libcublasLt.so.12; the entry points used here are the same.
    void* lib = open_library({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, why);
    if (!lib) throw std::runtime_error("cuBLASLt: libcublasLt.so.13 not found: " + why);
    const char* file = "libcublasLt";
    resolve(lib, create, "cublasLtCreate", "cuBLASLt", file);
    resolve(lib, destroy, "cublasLtDestroy", "cuBLASLt", file);
    resolve(lib, status_name, "cublasLtGetStatusName", "cuBLASLt", file);
    resolve(lib, api.desc_create, "cublasLtMatmulDescCreate", "cuBLASLt", file);
    resolve(lib, api.desc_destroy, "cublasLtMatmulDescDestroy", "cuBLASLt", file);
    resolve(lib, api.desc_set, "cublasLtMatmulDescSetAttribute", "cuBLASLt", file);
    resolve(lib, api.layout_create, "cublasLtMatrixLayoutCreate", "cuBLASLt", file);
    resolve(lib, api.layout_destroy, "cublasLtMatrixLayoutDestroy", "cuBLASLt", file);
    resolve(lib, api.layout_set, "cublasLtMatrixLayoutSetAttribute", "cuBLASLt", file);
    resolve(lib, api.pref_create, "cublasLtMatmulPreferenceCreate", "cuBLASLt", file);
    resolve(lib, api.pref_destroy, "cublasLtMatmulPreferenceDestroy", "cuBLASLt", file);
    resolve(lib, api.pref_set, "cublasLtMatmulPreferenceSetAttribute", "cuBLASLt", file);
    resolve(lib, api.heuristic, "cublasLtMatmulAlgoGetHeuristic", "cuBLASLt", file);
    resolve(lib, api.matmul, "cublasLtMatmul", "cuBLASLt", file);
    api.event_create = event_create;
    api.event_destroy = event_destroy;
    api.event_record = event_record;
    api.event_elapsed_ms = event_elapsed_ms;
    api.stream_synchronize = stream_synchronize;
#if KEVO_EXPORT_CUBLASLT_EMULATION
    resolve_optional(lib, api.emulation_create, "cublasLtEmulationDescCreate");
    resolve_optional(lib, api.emulation_destroy, "cublasLtEmulationDescDestroy");
    resolve_optional(lib, api.emulation_set, "cublasLtEmulationDescSetAttribute");
#endif
    check(create(&handle), "cublasLtCreate");
  }

  ~Blas() {
    for (auto& p : plans) lt::release(api, p->core);
    if (handle) destroy(handle);
  }

  void check(cublasStatus_t s, const char* what) const {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    const char* name = status_name ? status_name(s) : nullptr;
    throw std::runtime_error(std::string("cuBLASLt: ") +
                             (name ? name : "status " + std::to_string(static_cast<int>(s))) + " in " + what);
  }

  // A planner failure as the worker reports it: cuBLASLt's status, or the driver's error (CudaError).
  void check(const lt::Outcome& o) const {
    if (o.cuda)
      check_cuda(static_cast<CUresult>(o.status), autotuning_call(o.call));
    else if (!o.ok())
      check(static_cast<cublasStatus_t>(o.status), o.call);
  }

  // The step as the planner sees it (alpha and "algo" are per call; the key ignores them).
  static kevo_export::MatmulShape shape_of(const ResolvedMatmul& s) {
    return kevo_export::MatmulShape{s.m,
                                    s.n,
                                    s.k,
                                    s.call.transpose_a,
                                    s.call.transpose_b,
                                    static_cast<float>(s.call.alpha),
                                    epilogue(s.call.epilogue),
                                    static_cast<int>(s.call.algo),
                                    static_cast<int>(s.call.emulation),
                                    s.batch,
                                    s.stride_a,
                                    s.stride_b};
  }

  // An emulated step on this GPU and library: the plan was checked against the GPU's architecture
  // when it was resolved; this is the worker's own word on the device it runs, and on the library.
  void check_emulation(const ResolvedMatmul& s) const {
    if (s.call.emulation == Emulation::Off) return;
    const std::string what = "cublaslt.matmul: emulation \"" + emulation_name(s.call.emulation) + "\"";
    const CudaApi* cuda = cuda_api();
    CUdevice dev = 0;
    if (!cuda) throw std::runtime_error(cuda_driver_status().error);
    check_cuda(cuda->cuCtxGetDevice(&dev), "cuCtxGetDevice");
    const std::string arch = device_arch(static_cast<int>(dev));
    if (!emulation_runs_on(arch))
      throw std::runtime_error(what + ": cuBLASLt's bf16x9 fp32 emulation runs on sm_100a and sm_103a only, not on " +
                               arch);
#if KEVO_EXPORT_CUBLASLT_EMULATION
    const bool linked = api.emulation_create && api.emulation_destroy && api.emulation_set;
#else
    const bool linked = false;
#endif
    if (!linked)
      throw std::runtime_error(what + ": the loaded libcublasLt lacks cublasLtEmulationDescCreate (cuBLASLt 13 or "
                               "newer emulates)");
  }

  Plan& plan_for(const ResolvedMatmul& s, const lt::Key& key) {
    for (auto& p : plans)
      if (lt::same(p->key, key)) return *p;
    check_emulation(s);  // once per problem: its plan is kept
    auto p = std::make_unique<Plan>();
    p->key = key;
    const lt::Outcome built = lt::build(api, handle, key, kWorkspaceBytes, p->core);
    if (!built.ok() || p->core.usable == 0) lt::release(api, p->core);
    check(built);
    if (p->core.usable == 0)
      throw std::runtime_error("cuBLASLt: no algorithm for " + describe(s) + " within a " +
                               std::to_string(kWorkspaceBytes >> 20) + " MiB workspace");
    p->problem = describe(s) + ", alignments " + std::to_string(key.align_a) + "/" + std::to_string(key.align_b) +
                 "/" + std::to_string(key.align_d);
    plans.push_back(std::move(p));
    return *plans.back();
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
    c.plan = &plan_for(step, lt::key_of(shape_of(step), c.a, c.b, c.d));
    if (bias) check(lt::set_bias(api, c.plan->core, pointer(address(rp, buffers, step.bias, "cuBLASLt"))));
    c.alpha = static_cast<float>(step.call.alpha);
    return c;
  }

  cublasStatus_t run(const Call& c, int index, CUdeviceptr ws, CUstream stream) const {
    return lt::run(api, handle, c.plan->core, index, c.alpha, pointer(c.a), pointer(c.b), mutable_pointer(c.d),
                   mutable_pointer(ws), kWorkspaceBytes, stream);
  }

  // The planner's autotuning of the call's plan (lt::tune: the choice is kept in the plan), as the
  // tuning the worker reports.
  LibrarySteps::MatmulTuning tune(const Call& c, CUdeviceptr ws, CUstream stream) const {
    Plan& p = *c.plan;
    float median_ms[lt::kMaxAlgorithms];
    check(lt::tune(api, handle, p.core, c.alpha, pointer(c.a), pointer(c.b), mutable_pointer(c.d), mutable_pointer(ws),
                   kWorkspaceBytes, stream, median_ms));
    LibrarySteps::MatmulTuning t;
    t.problem = p.problem;
    for (int i = 0; i < p.core.usable; ++i)
      t.median_ms.push_back(median_ms[i] < 0 ? std::numeric_limits<double>::infinity() : median_ms[i]);
    if (p.core.tuned < 0)
      throw std::runtime_error("cuBLASLt: none of the " + std::to_string(p.core.usable) +
                               " heuristic algorithms launched for " + p.problem + " (autotuning)");
    t.algo = p.core.tuned;
    return t;
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

  // "op(a)[37,29] @ op(b)[29,51] (transpose_b, epilogue bias_gelu)"; a strided batch leads with
  // "12 x " and gives its strides.
  static std::string describe(const ResolvedMatmul& s) {
    auto dims = [](int64_t r, int64_t c) { return "[" + std::to_string(r) + "," + std::to_string(c) + "]"; };
    std::string flags;
    if (s.batch > 1)
      flags += "strides a " + std::to_string(s.stride_a) + ", b " + std::to_string(s.stride_b) + ", ";
    if (s.call.transpose_a) flags += "transpose_a, ";
    if (s.call.transpose_b) flags += "transpose_b, ";
    if (s.call.emulation != Emulation::Off) flags += "emulation " + emulation_name(s.call.emulation) + ", ";
    return (s.batch > 1 ? std::to_string(s.batch) + " x " : "") + "op(a)" + dims(s.m, s.k) + " @ op(b)" +
           dims(s.k, s.n) + " (" + flags + "epilogue " +
           epilogue_name(s.call.epilogue) + ")";
  }
};

// ---- cuDNN -------------------------------------------------------------------------------------

struct LibrarySteps::Dnn {
  struct Plan {
    kevo_export::Conv2dShape shape{};
    bool bias = false;
    dnn::Plan core;
  };

  dnn::Api api{};
  const char* (*error_string)(dnn::Status) = nullptr;
  dnn::Status (*create)(dnn::Handle*) = nullptr;
  dnn::Status (*destroy)(dnn::Handle) = nullptr;
  dnn::Handle handle = nullptr;
  std::vector<std::unique_ptr<Plan>> plans;

  Dnn() {
    std::string why;
    // cuDNN 9 keeps the legacy API in libcudnn_cnn/libcudnn_ops, reached through libcudnn.so.9's symbols.
    void* lib = open_library({"libcudnn.so.9", "libcudnn.so"}, why);
    if (!lib) throw std::runtime_error("cuDNN: libcudnn.so.9 not found: " + why);
    const char* file = "libcudnn.so.9";
    resolve(lib, error_string, "cudnnGetErrorString", "cuDNN", file);
    resolve(lib, create, "cudnnCreate", "cuDNN", file);
    resolve(lib, destroy, "cudnnDestroy", "cuDNN", file);
    resolve(lib, api.set_stream, "cudnnSetStream", "cuDNN", file);
    resolve(lib, api.tensor_create, "cudnnCreateTensorDescriptor", "cuDNN", file);
    resolve(lib, api.tensor_set_4d, "cudnnSetTensor4dDescriptor", "cuDNN", file);
    resolve(lib, api.tensor_destroy, "cudnnDestroyTensorDescriptor", "cuDNN", file);
    resolve(lib, api.filter_create, "cudnnCreateFilterDescriptor", "cuDNN", file);
    resolve(lib, api.filter_set_4d, "cudnnSetFilter4dDescriptor", "cuDNN", file);
    resolve(lib, api.filter_destroy, "cudnnDestroyFilterDescriptor", "cuDNN", file);
    resolve(lib, api.conv_create, "cudnnCreateConvolutionDescriptor", "cuDNN", file);
    resolve(lib, api.conv_set_2d, "cudnnSetConvolution2dDescriptor", "cuDNN", file);
    resolve(lib, api.conv_set_groups, "cudnnSetConvolutionGroupCount", "cuDNN", file);
    resolve(lib, api.conv_set_math, "cudnnSetConvolutionMathType", "cuDNN", file);
    resolve(lib, api.conv_destroy, "cudnnDestroyConvolutionDescriptor", "cuDNN", file);
    resolve(lib, api.forward_algorithms, "cudnnGetConvolutionForwardAlgorithm_v7", "cuDNN", file);
    resolve(lib, api.forward_workspace, "cudnnGetConvolutionForwardWorkspaceSize", "cuDNN", file);
    resolve(lib, api.forward, "cudnnConvolutionForward", "cuDNN", file);
    resolve(lib, api.add_tensor, "cudnnAddTensor", "cuDNN", file);
    resolve(lib, api.activation_create, "cudnnCreateActivationDescriptor", "cuDNN", file);
    resolve(lib, api.activation_set, "cudnnSetActivationDescriptor", "cuDNN", file);
    resolve(lib, api.activation_destroy, "cudnnDestroyActivationDescriptor", "cuDNN", file);
    resolve(lib, api.activation_forward, "cudnnActivationForward", "cuDNN", file);
    check(create(&handle), "cudnnCreate");
  }

  ~Dnn() {
    for (auto& p : plans) dnn::release(api, p->core);
    if (handle) destroy(handle);
  }

  void check(dnn::Status s, const char* what) const {
    if (s == dnn::kSuccess) return;
    const char* name = error_string ? error_string(s) : nullptr;
    throw std::runtime_error(std::string("cuDNN: ") + (name ? name : "status " + std::to_string(s)) + " in " + what);
  }
  void check(const dnn::Outcome& o) const {
    if (!o.ok()) check(o.status, o.call);
  }

  // The legacy API takes int sizes: every size the planner narrows must fit.
  static void check_fits(int64_t v, const char* what) {
    if (v < 0 || v > INT_MAX)
      throw std::runtime_error(std::string("cuDNN: ") + what + " = " + std::to_string(v) +
                               " does not fit the legacy API's int");
  }

  static kevo_export::Conv2dShape shape_of(const ResolvedConv2d& s, const Shape& x, const Shape& w, const Shape& y) {
    const Conv2dStep& c = s.call;
    kevo_export::Conv2dShape out{};
    for (int i = 0; i < 4; ++i) {
      out.x[i] = x[static_cast<size_t>(i)];
      out.w[i] = w[static_cast<size_t>(i)];
      out.y[i] = y[static_cast<size_t>(i)];
    }
    for (int i = 0; i < 2; ++i) {
      out.stride[i] = c.stride[static_cast<size_t>(i)];
      out.padding[i] = c.padding[static_cast<size_t>(i)];
      out.dilation[i] = c.dilation[static_cast<size_t>(i)];
    }
    out.groups = c.groups;
    out.relu = c.epilogue == Epilogue::Relu;
    return out;
  }

  static void check_fits(const kevo_export::Conv2dShape& s) {
    for (const auto& [dims, what] : {std::pair{s.x, "x's size"}, std::pair{s.y, "y's size"}, std::pair{s.w, "w's size"}})
      for (int i = 0; i < 4; ++i) check_fits(dims[i], what);
    for (const auto& [pair, what] :
         {std::pair{s.padding, "padding"}, std::pair{s.stride, "stride"}, std::pair{s.dilation, "dilation"}})
      for (int i = 0; i < 2; ++i) check_fits(pair[i], what);
    check_fits(s.groups, "groups");
  }

  const Plan& plan_for(const ResolvedConv2d& s, const ResolvedPlan& rp) {
    const Conv2dStep& c = s.call;
    const Shape &x = rp.buffers.at(static_cast<size_t>(s.x)).shape, &w = rp.buffers.at(static_cast<size_t>(s.w)).shape,
                &y = rp.buffers.at(static_cast<size_t>(s.y)).shape;
    if (x.size() != 4 || w.size() != 4 || y.size() != 4)
      throw std::invalid_argument("cuDNN: conv2d operands must be NCHW tensors");
    if (c.epilogue != Epilogue::None && c.epilogue != Epilogue::Relu)
      throw std::invalid_argument("cuDNN: conv2d epilogue '" + epilogue_name(c.epilogue) + "' is not supported");
    const kevo_export::Conv2dShape shape = shape_of(s, x, w, y);
    const bool bias = s.bias >= 0;
    for (auto& p : plans)
      if (dnn::same(p->shape, shape) && p->bias == bias) return *p;
    check_fits(shape);
    auto p = std::make_unique<Plan>();
    p->shape = shape;
    p->bias = bias;
    const dnn::Outcome built = dnn::build(api, handle, shape, bias, kWorkspaceBytes, p->core);
    if (!built.ok() || p->core.algo < 0) dnn::release(api, p->core);
    check(built);
    if (p->core.algo < 0)
      throw std::runtime_error("cuDNN: no fp32 forward algorithm for x" + shape_string(x) + " * w" + shape_string(w) +
                               " within a " + std::to_string(kWorkspaceBytes >> 20) + " MiB workspace");
    plans.push_back(std::move(p));
    return *plans.back();
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
  if (c.plan->core.tuned < 0) tunings_.push_back(b.tune(c, ws, stream));
  return c.plan->core.tuned;
}

void LibrarySteps::launch(const ResolvedMatmul& step, const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers,
                          CUstream stream) {
  Blas& b = blas();
  CUdeviceptr ws = workspace();
  Blas::Call c = b.prepare(step, plan, buffers);
  const lt::Plan& p = c.plan->core;
  if (step.call.algo == kAutotunedAlgo && p.tuned < 0) tunings_.push_back(b.tune(c, ws, stream));
  const int64_t index = step.call.algo == kAutotunedAlgo ? p.tuned : step.call.algo;
  if (index < 0 || index >= p.usable)
    throw std::runtime_error("cublaslt.matmul: algo " + std::to_string(index) + " but the heuristic returned " +
                             std::to_string(p.usable) + " algorithm" + (p.usable == 1 ? "" : "s") + " for " +
                             Blas::describe(step) + " (within the " + std::to_string(kWorkspaceBytes >> 20) +
                             " MiB workspace)");
  b.check(b.run(c, static_cast<int>(index), ws, stream), "cublasLtMatmul");
}

void LibrarySteps::launch(const ResolvedConv2d& step, const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers,
                          CUstream stream) {
  const void* x = pointer(address(plan, buffers, step.x, "cuDNN"));
  const void* w = pointer(address(plan, buffers, step.w, "cuDNN"));
  void* y = mutable_pointer(address(plan, buffers, step.y, "cuDNN"));
  const void* bias = step.bias >= 0 ? pointer(address(plan, buffers, step.bias, "cuDNN")) : nullptr;
  if (!dnn_) dnn_ = std::make_unique<Dnn>();
  void* ws = mutable_pointer(workspace());
  const Dnn::Plan& p = dnn_->plan_for(step, plan);
  dnn_->check(dnn::run(dnn_->api, dnn_->handle, p.core, x, w, y, bias, ws, kWorkspaceBytes, stream));
}

}  // namespace kevo::eval
