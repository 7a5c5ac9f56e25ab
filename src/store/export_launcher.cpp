// The exported launcher's code, section by section: guard, workspace layout, run() and its steps
// (kernel launches packed as kevo's evaluation packs them, cuBLASLt and cuDNN calls).
#include "store/export_launcher.h"

#include <algorithm>
#include <array>
#include <set>
#include <sstream>

#include "core/tensor_map.h"
#include "store/export.h"
#include "store/export_shapes.h"
#include "store/export_text.h"

namespace kevo::store::exporter {

namespace {

std::string cublaslt_epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::None: return "CUBLASLT_EPILOGUE_DEFAULT";
    case Epilogue::Relu: return "CUBLASLT_EPILOGUE_RELU";
    case Epilogue::Gelu: return "CUBLASLT_EPILOGUE_GELU";
    case Epilogue::Bias: return "CUBLASLT_EPILOGUE_BIAS";
    case Epilogue::BiasRelu: return "CUBLASLT_EPILOGUE_RELU_BIAS";
    case Epilogue::BiasGelu: return "CUBLASLT_EPILOGUE_GELU_BIAS";
  }
  return "CUBLASLT_EPILOGUE_DEFAULT";
}

// MatmulShape's emulation as cuBLAS names the strategy (an int: the field is one).
std::string cublas_emulation_strategy(Emulation e) {
  return e == Emulation::Eager ? "CUBLAS_EMULATION_STRATEGY_EAGER" : "CUBLAS_EMULATION_STRATEGY_PERFORMANT";
}

size_t kernel_index(const Candidate& c, const std::string& kernel) {
  const std::vector<std::string> kernels = c.kernel_names();
  return static_cast<size_t>(std::find(kernels.begin(), kernels.end(), kernel) - kernels.begin());
}

// What every section reads, and the text written so far.
struct Writer {
  const Task& task;
  const Candidate& c;
  const std::vector<int>& validated;
  const LauncherNames& L;
  const std::string& kernel_fn;
  const ExportShapes& shapes;
  std::string ns;
  size_t n_scratch = 0, n_regions = 0;  // scratch buffers, and with the libraries' workspace
  bool layout_sms = false;              // scratch sizes use num_sms
  std::ostringstream h;
};

// The constant axes, the workload table and the guard.
void write_guard(Writer& w) {
  const std::string& ns = w.ns;
  const Task& task = w.task;
  const LauncherNames& L = w.L;
  std::ostringstream& h = w.h;
  const std::vector<int>& validated = w.validated;
  h << "\n// ---- the launcher\nnamespace " << ns << " {\nnamespace {\n\n";
  for (const Axis* a : L.const_axes())
    h << "constexpr int64_t " << L.axis_name(a->name) << " = " << *a->value << ";  // a constant axis of the task\n";
  if (!L.const_axes().empty()) h << "\n";

  std::vector<std::string> axis_list;
  for (const Axis* a : L.var_axes()) axis_list.push_back(L.axis_name(a->name));
  h << "// The shapes kevo validated this kernel on (the task's workloads " << [&] {
    std::vector<std::string> ids;
    for (int w : validated) ids.push_back(std::to_string(w));
    return joined(ids);
  }() << (w.shapes.general ? "), where it was measured; supported_shape() below\n"
                             "// says which other shapes run() accepts.\n"
                           : "). run() returns cudaErrorInvalidValue\n"
                             "// for any other shape: the plan's sizes and the kernel's results were checked only for these.\n")
    << "struct Workload {\n";
  for (const std::string& a : axis_list) h << "  int64_t " << a << ";\n";
  h << "};\nconstexpr Workload kValidatedWorkloads[] = {\n";
  for (int w : validated) {
    std::vector<std::string> vals;
    for (const Axis* a : L.var_axes()) vals.push_back(std::to_string(task.workloads[w].axes.at(a->name)));
    h << "    {" << joined(vals) << "},  // workload " << w << "\n";
  }
  h << "};\n\n"
    << "// The index in kValidatedWorkloads of this shape, or -1. Constant axes are constants above and the\n"
    << "// other dimensions of the tensors (" << [&] {
         std::vector<std::string> derived;
         for (const auto* list : {&task.inputs, &task.outputs})
           for (const TensorDecl& t : *list)
             for (const Dim& d : t.shape)
               if (!d.expr.empty() && !L.is_literal(d.expr) && std::find_if(task.axes.begin(), task.axes.end(), [&](const Axis& a) {
                                                                   return a.name == d.expr;
                                                                 }) == task.axes.end())
                 derived.push_back(d.expr);
         std::sort(derived.begin(), derived.end());
         derived.erase(std::unique(derived.begin(), derived.end()), derived.end());
         return derived.empty() ? std::string("none here") : joined(derived);
       }()
    << ") follow from the axes, so the axes decide.\n";
  {
    const std::string i = Names(L.names()).take("i");
    h << "constexpr int validated_workload(" << L.axis_params() << ") {\n"
      << "  for (int " << i << " = 0; " << i
      << " < static_cast<int>(sizeof kValidatedWorkloads / sizeof kValidatedWorkloads[0]); ++" << i << ")\n";
    std::vector<std::string> eqs;
    for (const std::string& a : axis_list) eqs.push_back("kValidatedWorkloads[" + i + "]." + a + " == " + a);
    h << "    if (" << (eqs.empty() ? "true" : joined(eqs, " && ")) << ") return " << i << ";\n";
  }
  h << "  return -1;\n}\n\n";
  if (w.shapes.general) h << general_guard_code(task, w.c, w.shapes.kernel, w.shapes.verified, L);
}

// The shape check of run() and workspace_bytes(): the general predicate, or the validated workloads.
std::string shape_refused(const Writer& w) {
  return w.shapes.general ? "!supported_shape(" + w.L.axis_args() + ")" : "validated_workload(" + w.L.axis_args() + ") < 0";
}

// Where the scratch buffers (and the libraries' workspace) lie in the caller's workspace.
void write_workspace_offsets(Writer& w) {
  const Candidate& c = w.c;
  const LauncherNames& L = w.L;
  std::ostringstream& h = w.h;
  const size_t n_scratch = w.n_scratch, n_regions = w.n_regions;
  const bool layout_sms = w.layout_sms;
  if (n_regions > 0) {
    h << "// Where the scratch of the plan lives in the caller's workspace: offsets[i] is where region i starts\n"
      << "// (a multiple of 256 bytes), offsets[" << n_regions << "] the total size.\n";
    for (size_t i = 0; i < n_scratch; ++i) {
      const ScratchBuffer& s = c.plan.buffers[i];
      h << "//   [" << i << "] " << s.name << "  " << dtype_name(s.dtype) << " " << plan_expr_list(s.shape) << "\n";
    }
    if (L.has_library()) h << "//   [" << n_scratch << "] the cuBLASLt/cuDNN workspace, 32 MiB\n";
    std::string params = L.axis_params();
    std::vector<std::string> used;  // only the axes the sizes use, so that no parameter goes unused
    std::set<std::string> needed;
    for (const ScratchBuffer& s : c.plan.buffers)
      for (const PlanExpr& e : s.shape)
        for (const std::string& n : e.expr.names()) needed.insert(n);
    for (const Axis* a : L.var_axes())
      used.push_back("int64_t " + (needed.count(a->name) ? L.axis_name(a->name) : "/*" + L.axis_name(a->name) + "*/"));
    if (layout_sms) used.push_back("int64_t " + L.num_sms());
    used.push_back("size_t " + L.offsets() + "[" + std::to_string(n_regions + 1) + "]");
    const std::string at = Names(L.names()).take("at");
    h << "inline void workspace_offsets(" << joined(used) << ") {\n  size_t " << at << " = 0;\n";
    for (size_t i = 0; i < n_scratch; ++i) {
      const ScratchBuffer& s = c.plan.buffers[i];
      std::string bytes = "size_t{" + std::to_string(dtype_size(s.dtype)) + "}";
      for (const PlanExpr& e : s.shape) bytes = (L.is_literal(e.expr.text()) ? L.cpp(e) : "size_t(" + L.cpp(e) + ")") + " * " + bytes;
      h << "  " << L.offsets() << "[" << i << "] = " << at << ";  // " << s.name << "\n"
        << "  " << at << " = kevo_export::align_up(" << at << " + " << bytes << ");\n";
    }
    if (L.has_library())
      h << "  " << L.offsets() << "[" << n_scratch << "] = " << at << ";  // cuBLASLt/cuDNN\n"
        << "  " << at << " = kevo_export::align_up(" << at << " + kevo_export::kLibraryWorkspaceBytes);\n";
    h << "  " << L.offsets() << "[" << n_regions << "] = " << at << ";\n}\n\n";
  }
}

void write_workspace_bytes(Writer& w) {
  const LauncherNames& L = w.L;
  std::ostringstream& h = w.h;
  const size_t n_regions = w.n_regions;
  const bool layout_sms = w.layout_sms;
  h << "// The workspace run() needs for this shape, in bytes (0 for a shape it does not accept"
    << (layout_sms ? ", or when the\n// current device's SM count cannot be read" : "") << ").\n";
  if (n_regions == 0) {
    h << "inline size_t workspace_bytes(" << L.axis_params_commented() << ") { return 0; }  // the plan has no scratch\n\n";
  } else {
    h << "inline size_t workspace_bytes(" << L.axis_params() << ") {\n"
      << "  if (" << shape_refused(w) << ") return 0;\n";
    std::vector<std::string> args;
    for (const Axis* a : L.var_axes()) args.push_back(L.axis_name(a->name));
    if (layout_sms) {
      h << "  int64_t " << L.num_sms() << " = 0;\n"
        << "  if (kevo_export::num_sms(&" << L.num_sms() << ") != cudaSuccess) return 0;\n";
      args.push_back(L.num_sms());
    }
    args.push_back(L.offsets());
    h << "  size_t " << L.offsets() << "[" << n_regions + 1 << "];\n"
      << "  workspace_offsets(" << joined(args) << ");\n"
      << "  return " << L.offsets() << "[" << n_regions << "];\n}\n\n";
  }
}

// The checks that need the GPU (its SM count, its opt-in shared memory maximum): after the shape
// guard and before any launch. Reading the device's attributes queues no work.
void write_device_guard(Writer& w) {
  const LauncherNames& L = w.L;
  std::ostringstream& h = w.h;
  bool sms_is_axis = false;  // a task axis named num_sms is a parameter already
  for (const Axis* a : L.var_axes()) sms_is_axis |= L.axis_name(a->name) == L.num_sms();
  const std::string sms = sms_is_axis ? "" : (L.uses_num_sms_anywhere() ? L.num_sms() : "0") + std::string(", ");
  const std::string dev = Names(L.names()).take("device"), most = Names(L.names()).take("shared_optin");
  h << "  {\n"
    << "    int " << dev << " = 0, " << most << " = 0;\n"
    << "    if ((" << L.err() << " = cudaGetDevice(&" << dev << ")) != cudaSuccess) return " << L.err() << ";\n"
    << "    if ((" << L.err() << " = cudaDeviceGetAttribute(&" << most << ", cudaDevAttrMaxSharedMemoryPerBlockOptin, " << dev
    << ")) != cudaSuccess)\n      return " << L.err() << ";\n"
    << "    if (!plan_fits_device(" << L.axis_args() << (L.axis_args().empty() ? "" : ", ") << sms << most
    << ")) return cudaErrorInvalidValue;\n  }\n";
}

// run()'s signature and checks, up to its first step.
void write_run_prologue(Writer& w) {
  const Task& task = w.task;
  const Candidate& c = w.c;
  const LauncherNames& L = w.L;
  std::ostringstream& h = w.h;
  const size_t n_scratch = w.n_scratch, n_regions = w.n_regions;
  const bool layout_sms = w.layout_sms;
  std::vector<std::string> params;
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& t : *list)
      params.push_back(std::string(list == &task.inputs ? "const " : "") + cuda_type_name(t.dtype) + "* " + L.tensor_name(t.name));
  for (const Axis* a : L.var_axes()) params.push_back("int64_t " + L.axis_name(a->name));
  params.push_back("cudaStream_t stream");
  params.push_back("void* workspace = nullptr");
  params.push_back("size_t workspace_bytes = 0");
  h << "// Runs the plan on `stream`: " << c.plan.steps.size() << " step" << (c.plan.steps.size() == 1 ? "" : "s")
    << ", in order. Returns the first error, cudaErrorInvalidValue for a shape\n"
    << (w.shapes.general ? "// supported_shape() refuses" : "// outside kValidatedWorkloads")
    << ", a null tensor, or a workspace that is too small or not 256-byte aligned.\n"
    << "inline cudaError_t run(" << joined(params, ",\n                       ") << ") {\n"
    << (w.shapes.general ? "  // Shape guard: the axis ranges, the plan's limits and the kernel's conditions.\n"
                         : "  // Shape guard: only the validated workloads.\n")
    << "  if (" << shape_refused(w) << ") return cudaErrorInvalidValue;\n";
  {
    std::vector<std::string> nulls;
    for (const auto* list : {&task.inputs, &task.outputs})
      for (const TensorDecl& t : *list) nulls.push_back("!" + L.tensor_name(t.name));
    if (!nulls.empty()) h << "  if (" << joined(nulls, " || ") << ") return cudaErrorInvalidValue;\n";
  }
  h << "  cudaError_t " << L.err() << " = cudaSuccess;\n";
  if (L.uses_num_sms_anywhere())
    h << "  int64_t " << L.num_sms() << " = 0;  // the plan sizes some launches by the GPU's SM count\n"
      << "  if ((" << L.err() << " = kevo_export::num_sms(&" << L.num_sms() << ")) != cudaSuccess) return " << L.err()
      << ";\n";
  if (w.shapes.general && needs_device_checks(task, w.c, L)) write_device_guard(w);
  if (n_regions == 0) {
    h << "  (void)workspace;  // the plan needs no scratch\n  (void)workspace_bytes;\n";
  } else {
    std::vector<std::string> args;
    for (const Axis* a : L.var_axes()) args.push_back(L.axis_name(a->name));
    if (layout_sms) args.push_back(L.num_sms());
    args.push_back(L.offsets());
    h << "  size_t " << L.offsets() << "[" << n_regions + 1 << "];\n"
      << "  workspace_offsets(" << joined(args) << ");\n"
      << "  if (workspace == nullptr || workspace_bytes < " << L.offsets() << "[" << n_regions
      << "] || reinterpret_cast<uintptr_t>(workspace) % 256 != 0)\n"
      << "    return cudaErrorInvalidValue;\n";
    for (size_t i = 0; i < n_scratch; ++i)
      h << "  void* " << L.scratch_name(c.plan.buffers[i].name) << " = static_cast<char*>(workspace) + " << L.offsets()
        << "[" << i << "];\n";
    if (L.has_library())
      h << "  void* " << L.library() << " = static_cast<char*>(workspace) + " << L.offsets() << "[" << n_scratch
        << "];\n";
  }
}

// A tensor-map argument: the TMA descriptor kevo's evaluation built, encoded here by the runtime
// over the same buffer, sizes and strides (in bytes), box and swizzle.
void write_tensor_map(Writer& w, Names& local, const TensorMapArg& t, const std::string& v) {
  const LauncherNames& L = w.L;
  const Task& task = w.task;
  DType dtype = DType::Float32;
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& d : *list)
      if (d.name == t.buffer) dtype = d.dtype;
  for (const ScratchBuffer& b : w.c.plan.buffers)
    if (b.name == t.buffer) dtype = b.dtype;
  const std::string elem = std::to_string(dtype_size(dtype));
  std::vector<std::string> dims, strides, box;
  std::string packed;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    dims.push_back("uint64_t(" + L.cpp(t.dims[i]) + ")");
    box.push_back(std::to_string(t.box[i]) + "u");
    if (i == 0) continue;
    packed += (packed.empty() ? "" : " * ") + dims[i - 1];
    strides.push_back(t.strides.empty() ? packed + " * " + elem : "uint64_t(" + L.cpp(t.strides[i - 1]) + ") * " + elem);
  }
  if (strides.empty()) strides.push_back("0");  // rank 1: no stride, but no empty array either
  const std::string dims_name = local.take("dims"), strides_name = local.take("stride_bytes"), box_name = local.take("box");
  w.h << "    kevo_export::TensorMap " << v << ";\n"
      << "    {\n      const uint64_t " << dims_name << "[] = {" << joined(dims) << "};\n"
      << "      const uint64_t " << strides_name << "[] = {" << joined(strides) << "};\n"
      << "      const uint32_t " << box_name << "[] = {" << joined(box) << "};\n"
      << "      " << L.err() << " = kevo_export::encode_tensor_map(&" << v << ", " << tensor_map_data_type(dtype) << ", "
      << t.dims.size() << ", " << L.pointer(t.buffer) << ", " << dims_name << ", " << strides_name << ", " << box_name
      << ", " << t.swizzle << ");\n"
      << "      if (" << L.err() << " != cudaSuccess) return " << L.err() << ";\n    }\n";
}

void write_kernel_step(Writer& w, size_t si, const KernelStep* k) {
  const std::string& kernel_fn = w.kernel_fn;
  const Candidate& c = w.c;
  const LauncherNames& L = w.L;
  std::ostringstream& h = w.h;
  std::vector<std::string> described;
  for (const KernelArg& a : k->args) {
    switch (a.kind) {
      case ArgKind::Buffer: described.push_back(a.buffer); break;
      case ArgKind::Int32: described.push_back("int " + a.value.expr.text()); break;
      case ArgKind::Int64: described.push_back("int64 " + a.value.expr.text()); break;
      case ArgKind::Float32: described.push_back("float " + double_literal(a.real)); break;
      case ArgKind::Float64: described.push_back("double " + double_literal(a.real)); break;
      case ArgKind::TensorMap: described.push_back("tensor map of " + a.tensor_map.buffer); break;
    }
  }
  h << "  // step " << si << ": " << k->kernel << ", grid " << plan_expr_list(k->grid) << ", block "
    << plan_expr_list(k->block);
  if (!(L.is_literal(k->shared_bytes.expr.text()) && L.cpp(k->shared_bytes) == "0"))
    h << ", " << k->shared_bytes.expr.text() << " bytes of dynamic shared memory";
  h << "\n  //         args (" << joined(described) << ")\n  {\n";
  Names local = L.names();
  std::vector<std::string> arg_ptrs;
  for (size_t ai = 0; ai < k->args.size(); ++ai) {
    const KernelArg& a = k->args[ai];
    if (a.kind == ArgKind::Buffer) {
      arg_ptrs.push_back("&" + L.pointer(a.buffer));
      continue;
    }
    std::string v = local.take("arg" + std::to_string(ai));
    switch (a.kind) {
      case ArgKind::Int32: h << "    int32_t " << v << " = static_cast<int32_t>(" << L.cpp(a.value) << ");\n"; break;
      case ArgKind::Int64: h << "    int64_t " << v << " = " << L.cpp(a.value) << ";\n"; break;
      case ArgKind::Float32: h << "    float " << v << " = " << float_literal(a.real) << ";\n"; break;
      case ArgKind::Float64: h << "    double " << v << " = " << double_literal(a.real) << ";\n"; break;
      case ArgKind::TensorMap: write_tensor_map(w, local, a.tensor_map, v); break;
      case ArgKind::Buffer: break;
    }
    arg_ptrs.push_back("&" + v);
  }
  std::string args_name = local.take("args");
  if (arg_ptrs.empty()) h << "    void** " << args_name << " = nullptr;\n";
  else h << "    void* " << args_name << "[] = {" << joined(arg_ptrs) << "};\n";
  auto dims = [&](const std::vector<PlanExpr>& v) {
    std::vector<std::string> out;
    for (const PlanExpr& e : v) out.push_back(L.unsigned_cpp(e));
    return "dim3(" + joined(out) + ")";
  };
  std::string smem = L.is_literal(k->shared_bytes.expr.text()) ? L.cpp(k->shared_bytes)
                                                                 : "size_t(" + L.cpp(k->shared_bytes) + ")";
  h << "    " << L.err() << " = kevo_export::launch(source::" << kernel_fn << kernel_index(c, k->kernel) << "(), "
    << dims(k->grid) << ", " << dims(k->block) << ", " << smem << ", " << args_name << ", stream);\n"
    << "    if (" << L.err() << " != cudaSuccess) return " << L.err() << ";\n  }\n";
}

// The MatmulShape's sizes as C++ expressions of the launcher's axes, as plan_resolve reads them: a
// strided batch where b, or a transposed a, has leading dims (a and b each a matrix or that batch);
// else an untransposed a of rank 3 or more is a batch of rows, whose leading dims make m.
struct MatmulSizes {
  std::string rows, cols, inner;
  std::string batch, stride_a, stride_b;  // empty: one product
};

MatmulSizes matmul_sizes(const LauncherNames& L, const MatmulStep& m) {
  const std::vector<std::string> a = L.shape(m.a), b = L.shape(m.b);
  auto product = [](const std::vector<std::string>& dims, size_t from, size_t to) {
    std::string out = dims[from];
    for (size_t d = from + 1; d < to; ++d) out = "(" + out + ") * (" + dims[d] + ")";
    return out;
  };
  const bool batched = strided_batch(a.size(), b.size(), m.transpose_a);
  MatmulSizes s;
  s.rows = !batched && !m.transpose_a ? product(a, 0, a.size() - 1) : a[a.size() - (m.transpose_a ? 1 : 2)];
  s.inner = a[a.size() - (m.transpose_a ? 2 : 1)];
  s.cols = b[b.size() - (m.transpose_b ? 2 : 1)];
  if (!batched) return s;
  const std::vector<std::string>& leading = b.size() > 2 ? b : a;
  s.batch = product(leading, 0, leading.size() - 2);
  s.stride_a = a.size() > 2 ? "(" + s.rows + ") * (" + s.inner + ")" : "0";
  s.stride_b = b.size() > 2 ? "(" + s.inner + ") * (" + s.cols + ")" : "0";
  return s;
}

void write_matmul_step(Writer& w, size_t si, const MatmulStep& m) {
  const LauncherNames& L = w.L;
  std::ostringstream& h = w.h;
  const MatmulSizes z = matmul_sizes(L, m);
  const bool batched = !z.batch.empty();
  std::string value = (m.alpha == 1.0 ? "" : double_literal(m.alpha) + " * ") + m.a +
                      (m.transpose_a ? "^T" : "") + " @ " + m.b + (m.transpose_b ? "^T" : "") +
                      (m.bias.empty() ? "" : " + " + m.bias);
  if (m.epilogue == Epilogue::Relu || m.epilogue == Epilogue::BiasRelu) value = "relu(" + value + ")";
  if (m.epilogue == Epilogue::Gelu || m.epilogue == Epilogue::BiasGelu) value = "gelu_tanh(" + value + ")";
  const bool emulated = m.emulation != Emulation::Off;
  h << "  // step " << si << ": cuBLASLt, " << m.d << " = " << value << (batched ? " per product of a strided batch" : "")
    << (emulated ? ", fp32 emulated with bf16x9 (cuBLAS strategy " + emulation_name(m.emulation) + "; sm_100a, sm_103a)\n"
                 : std::string(", fp32 (no TF32)\n"))
    << "  " << L.err() << " = kevo_export::cublaslt_matmul(\n"
    << "      " << L.pointer(m.a) << ", " << L.pointer(m.b) << ", " << L.pointer(m.d) << ", "
    << (m.bias.empty() ? "nullptr" : L.pointer(m.bias)) << ",\n"
    << "      kevo_export::MatmulShape{" << z.rows << ", " << z.cols << ", " << z.inner << ", "
    << (m.transpose_a ? "true" : "false") << ", " << (m.transpose_b ? "true" : "false") << ", "
    << float_literal(m.alpha) << ", " << cublaslt_epilogue(m.epilogue) << ", " << m.algo
    << (emulated ? ", " + cublas_emulation_strategy(m.emulation) : batched ? std::string(", 0") : std::string())
    << (batched ? ", " + z.batch + ", " + z.stride_a + ", " + z.stride_b : std::string())
    << "},  // m, n, k, transpose a, b, alpha, epilogue, "
    << (m.algo == kAutotunedAlgo ? "algorithm autotuned at the first call of each shape"
                                  : "heuristic algorithm index")
    << (emulated || batched ? ", emulation strategy" : "") << (batched ? ", batch, strides of a and b" : "") << "\n"
    << "      " << L.library() << ", kevo_export::kLibraryWorkspaceBytes, stream);\n"
    << "  if (" << L.err() << " != cudaSuccess) return " << L.err() << ";\n";
}

void write_conv_step(Writer& w, size_t si, const Conv2dStep& cv) {
  const LauncherNames& L = w.L;
  std::ostringstream& h = w.h;
  auto list = [](const std::vector<std::string>& v) { return "{" + joined(v) + "}"; };
  auto pair = [](const std::array<int64_t, 2>& v) {
    return "{" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "}";
  };
  std::string value = "conv2d(" + cv.x + ", " + cv.w + ")" + (cv.bias.empty() ? "" : " + " + cv.bias);
  if (cv.epilogue == Epilogue::Relu) value = "relu(" + value + ")";
  h << "  // step " << si << ": cuDNN, " << cv.y << " = " << value << ", NCHW fp32 (no TF32)\n"
    << "  " << L.err() << " = kevo_export::cudnn_conv2d_forward(\n"
    << "      " << L.pointer(cv.x) << ", " << L.pointer(cv.w) << ", " << L.pointer(cv.y) << ", "
    << (cv.bias.empty() ? "nullptr" : L.pointer(cv.bias)) << ",\n"
    << "      kevo_export::Conv2dShape{" << list(L.shape(cv.x)) << ", " << list(L.shape(cv.w)) << ", "
    << list(L.shape(cv.y)) << ",\n"
    << "                               " << pair(cv.stride) << ", " << pair(cv.padding) << ", "
    << pair(cv.dilation) << ", " << cv.groups << ", " << (cv.epilogue == Epilogue::Relu ? "true" : "false")
    << "},  // x, w, y shapes; stride, padding, dilation, groups, relu\n"
    << "      " << L.library() << ", kevo_export::kLibraryWorkspaceBytes, stream);\n"
    << "  if (" << L.err() << " != cudaSuccess) return " << L.err() << ";\n";
}

}  // namespace

std::string launcher_code(const std::string& ns, const Task& task, const Candidate& c, const std::vector<int>& validated,
                          const LauncherNames& L, const std::string& kernel_fn, const ExportShapes& shapes) {
  Writer w{task, c, validated, L, kernel_fn, shapes, ns, 0, 0, false, {}};
  w.n_scratch = c.plan.buffers.size();
  w.n_regions = w.n_scratch + (L.has_library() ? 1 : 0);
  w.layout_sms = L.scratch_uses_num_sms();
  write_guard(w);
  write_workspace_offsets(w);
  write_workspace_bytes(w);
  write_run_prologue(w);
  for (size_t si = 0; si < c.plan.steps.size(); ++si) {
    const Step& step = c.plan.steps[si];
    w.h << "\n";
    if (const auto* k = std::get_if<KernelStep>(&step.op))
      write_kernel_step(w, si, k);
    else if (const auto* m = std::get_if<MatmulStep>(&step.op))
      write_matmul_step(w, si, *m);
    else
      write_conv_step(w, si, std::get<Conv2dStep>(step.op));
  }
  w.h << "  return cudaSuccess;\n}\n\n}  // namespace\n}  // namespace " << w.ns << "\n";
  return w.h.str();
}

}  // namespace kevo::store::exporter
