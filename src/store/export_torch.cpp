// The PyTorch extension of an exported header: the op's C++ (checks, allocation, the launcher on
// the current stream, TORCH_LIBRARY registration) and its Python loader.
#include "store/export_torch.h"

#include <cctype>
#include <sstream>

#include "core/dtype.h"
#include "core/error.h"
#include "store/export.h"
#include "store/export_names.h"

namespace kevo::store {

namespace {

using exporter::LauncherNames;

// The ATen scalar type of a contract dtype.
const char* aten_type(DType t) {
  switch (t) {
    case DType::Float32: return "at::kFloat";
    case DType::Float64: return "at::kDouble";
    case DType::Float16: return "at::kHalf";
    case DType::BFloat16: return "at::kBFloat16";
    case DType::Int64: return "at::kLong";
    case DType::Int32: return "at::kInt";
    case DType::Bool: return "at::kBool";
  }
  return "at::kFloat";
}

std::string joined(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// A C++ string literal of plain text (contract names and shapes: no quotes or backslashes to
// escape beyond these).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Where each var axis is read: the first input dimension that is the axis itself.
struct AxisSource {
  const TensorDecl* tensor = nullptr;
  size_t dim = 0;
};

// In the order of LauncherNames::var_axes (the contract's var axes); checked before anything else.
std::vector<AxisSource> axis_sources(const Task& task, const Candidate& c) {
  std::vector<AxisSource> out;
  for (const Axis& axis : task.axes) {
    if (axis.value) continue;
    const Axis* a = &axis;
    AxisSource s;
    for (const TensorDecl& t : task.inputs) {
      for (size_t k = 0; k < t.shape.size() && !s.tensor; ++k)
        if (t.shape[k].expr == a->name) s = {&t, k};
      if (s.tensor) break;
    }
    if (!s.tensor)
      throw InputError(Location{c.file, 0, 0}, "export --torch",
                       "axis '" + a->name + "' is no dimension of its own in any input's shape, so the op cannot "
                       "read it off its arguments");
    out.push_back(s);
  }
  return out;
}

bool uses_library(const Candidate& c, bool matmul) {
  for (const Step& s : c.plan.steps)
    if (matmul ? std::holds_alternative<MatmulStep>(s.op) : std::holds_alternative<Conv2dStep>(s.op)) return true;
  return false;
}

}  // namespace

std::string torch_op_name(const Task& task) {
  const std::string name = export_namespace(task).substr(5);  // "kevo_" dropped
  return std::isdigit(static_cast<unsigned char>(name[0])) ? "t" + name : name;  // an identifier for the schema
}

std::string torch_source_file_name(const Task& task) { return task.name + "_torch.cu"; }
std::string torch_loader_file_name(const Task& task) { return task.name + "_torch.py"; }

std::string export_torch_source(const Task& task, const Candidate& c, const std::string& header_file, bool general) {
  const std::string ns = export_namespace(task), op = torch_op_name(task), who = "kevo::" + op + ": ";
  const std::vector<AxisSource> sources = axis_sources(task, c);
  const LauncherNames L(task, c);
  const std::string first = L.tensor_name(task.inputs.front().name);

  std::vector<std::string> params, schema_args, schema_outs, returned;
  for (const TensorDecl& t : task.inputs) {
    params.push_back("const at::Tensor& " + L.tensor_name(t.name));
    schema_args.push_back("Tensor " + L.tensor_name(t.name));
  }
  for (size_t i = 0; i < task.outputs.size(); ++i) {
    schema_outs.push_back("Tensor");
    returned.push_back(L.tensor_name(task.outputs[i].name));
  }
  const bool several = task.outputs.size() > 1;
  const std::string result_type = several ? "std::tuple<" + joined(std::vector<std::string>(task.outputs.size(), "at::Tensor")) + ">"
                                          : "at::Tensor";
  const std::string schema = op + "(" + joined(schema_args) + ") -> " +
                             (several ? "(" + joined(schema_outs) + ")" : std::string("Tensor"));

  std::ostringstream s;
  s << "// kevo export --torch: torch.ops.kevo." << op << "(" << joined(schema_args) << ") runs the launcher of "
    << header_file << "\n"
    << "// (beside this file) on CUDA tensors of the current stream. Built by " << torch_loader_file_name(task)
    << " with torch.utils.cpp_extension.\n"
    << "// Every argument is checked first: dtype, rank and sizes (these need no GPU), then device and contiguity.\n"
    << "// Outputs and workspace come from PyTorch's caching allocator.\n"
    << "#include <ATen/ATen.h>\n#include <c10/cuda/CUDAGuard.h>\n#include <c10/cuda/CUDAStream.h>\n"
    << "#include <torch/library.h>\n\n#include <string>\n#include <tuple>\n#include <vector>\n\n"
    << "#include \"" << header_file << "\"\n\n"
    << "namespace " << ns << " {\nnamespace torch_op {\n\n"
    << "// Sizes as text for the errors, by hand: a wrong-rank argument crashed the op on torch 2.11 while\n"
    << "// its error was formatted (streaming c10::IntArrayRef is the suspect), where other errors raised.\n"
    << "inline std::string sizes_text(at::IntArrayRef sizes) {\n"
    << "  std::string text = \"[\";\n"
    << "  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? \", \" : \"\") + std::to_string(sizes[i]);\n"
    << "  return text + \"]\";\n}\n\n"
    << result_type << " run_op(" << joined(params) << ") {\n";
  for (const TensorDecl& t : task.inputs) {
    const std::string& n = L.tensor_name(t.name);
    s << "  TORCH_CHECK(" << n << ".scalar_type() == " << aten_type(t.dtype) << ", " << quoted(who + t.name + " must be " + dtype_name(t.dtype) + ", got ")
      << ", " << n << ".scalar_type());\n"
      << "  TORCH_CHECK(" << n << ".dim() == " << t.shape.size() << ", "
      << quoted(who + t.name + " must have " + std::to_string(t.shape.size()) + (t.shape.size() == 1 ? " dimension " : " dimensions ") +
                exporter::shape_text(t) + ", got ")
      << ", sizes_text(" << n << ".sizes()));\n";
  }
  for (size_t i = 0; i < sources.size(); ++i)
    s << "  const int64_t " << L.axis_name(L.var_axes()[i]->name) << " = " << L.tensor_name(sources[i].tensor->name)
      << ".size(" << sources[i].dim << ");\n";
  for (const TensorDecl& t : task.inputs) {
    const std::string& n = L.tensor_name(t.name);
    std::vector<std::string> dims;
    for (const Dim& d : t.shape) dims.push_back(L.dim_cpp(d));
    s << "  const std::vector<int64_t> kevo_" << n << "_shape = {" << joined(dims) << "};\n"
      << "  TORCH_CHECK(" << n << ".sizes() == at::IntArrayRef(kevo_" << n << "_shape), "
      << quoted(who + t.name + " must have shape " + exporter::shape_text(t) + " = ") << ", sizes_text(kevo_" << n
      << "_shape), \", got \", sizes_text(" << n << ".sizes()));\n";
  }
  std::vector<std::string> axis_text;
  for (const Axis* a : L.var_axes())
    axis_text.push_back(quoted((axis_text.empty() ? "" : " ") + a->name + "=") + ", " + L.axis_name(a->name));
  s << "  TORCH_CHECK(" << (general ? "supported_shape(" + L.axis_args() + ")" : "validated_workload(" + L.axis_args() + ") >= 0")
    << ", " << quoted(who + "the shape ") << (axis_text.empty() ? "" : ", " + joined(axis_text)) << ", "
    << quoted(general ? " is not one the kernel supports (see " + header_file + "'s supported_shape)"
                      : " is not one the kernel was validated on (see " + header_file + "'s kValidatedWorkloads)")
    << ");\n";
  for (const TensorDecl& t : task.inputs) {
    const std::string& n = L.tensor_name(t.name);
    s << "  TORCH_CHECK(" << n << ".is_cuda(), " << quoted(who + t.name + " must be a CUDA tensor, got one on ") << ", "
      << n << ".device());\n";
    if (n != first)
      s << "  TORCH_CHECK(" << n << ".device() == " << first << ".device(), "
        << quoted(who + t.name + " is on ") << ", " << n << ".device(), "
        << quoted(", " + task.inputs.front().name + " on ") << ", " << first << ".device());\n";
    s << "  TORCH_CHECK(" << n << ".is_contiguous(), " << quoted(who + t.name + " must be contiguous (row-major): call .contiguous()")
      << ");\n";
  }
  s << "  const c10::cuda::CUDAGuard kevo_guard(" << first << ".device());\n";
  for (const TensorDecl& t : task.outputs) {
    std::vector<std::string> dims;
    for (const Dim& d : t.shape) dims.push_back(L.dim_cpp(d));
    s << "  at::Tensor " << L.tensor_name(t.name) << " = at::empty(std::vector<int64_t>{" << joined(dims) << "}, " << first
      << ".options().dtype(" << aten_type(t.dtype) << "));\n";
  }
  s << "  const size_t kevo_bytes = workspace_bytes(" << L.axis_args() << ");\n"
    << "  at::Tensor kevo_workspace;  // the caching allocator's blocks are 512-byte aligned\n"
    << "  if (kevo_bytes > 0) kevo_workspace = at::empty({static_cast<int64_t>(kevo_bytes)}, " << first
    << ".options().dtype(at::kByte));\n";
  std::vector<std::string> args;
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& t : *list)
      args.push_back("reinterpret_cast<" + std::string(list == &task.inputs ? "const " : "") + cuda_type_name(t.dtype) +
                     "*>(" + L.tensor_name(t.name) + ".data_ptr())");
  for (const Axis* a : L.var_axes()) args.push_back(L.axis_name(a->name));
  args.push_back("c10::cuda::getCurrentCUDAStream().stream()");
  args.push_back("kevo_bytes > 0 ? kevo_workspace.data_ptr() : nullptr");
  args.push_back("kevo_bytes");
  s << "  const cudaError_t kevo_err = run(" << joined(args, ",\n                                   ") << ");\n"
    << "  TORCH_CHECK(kevo_err == cudaSuccess, " << quoted(who + "the launcher failed: ") << ", cudaGetErrorString(kevo_err));\n"
    << "  return " << (several ? "{" + joined(returned) + "}" : returned.front()) << ";\n"
    << "}\n\n}  // namespace torch_op\n}  // namespace " << ns << "\n\n"
    << "// A fragment, so that the ops of several exported tasks load into one process side by side.\n"
    << "TORCH_LIBRARY_FRAGMENT(kevo, m) { m.def(" << quoted(schema) << ", &" << ns << "::torch_op::run_op); }\n";
  return s.str();
}

std::string export_torch_loader(const Task& task, const Candidate& c) {
  const std::string op = torch_op_name(task);
  std::vector<std::string> libs;
  if (uses_library(c, true)) libs.push_back("\"-lcublasLt\"");
  if (uses_library(c, false)) libs.push_back("\"-lcudnn\"");
  std::vector<std::string> ins, outs;
  for (const TensorDecl& t : task.inputs) ins.push_back(t.name);
  for (const TensorDecl& t : task.outputs) outs.push_back(t.name);
  std::ostringstream s;
  s << "\"\"\"kevo's PyTorch extension of task " << task.name << ": torch.ops.kevo." << op << "(" << joined(ins)
    << ") -> " << joined(outs) << ".\n\n"
    << "    import " << task.name << "_torch\n"
    << "    op = " << task.name << "_torch.load()   # builds " << torch_source_file_name(task)
    << " against this torch for this GPU (cached)\n"
    << "    " << joined(outs) << " = op(" << joined(ins) << ")  # CUDA tensors, the current stream\n\n"
    << "Written by kevo export --torch beside " << export_file_name(task) << ", which the extension includes.\n"
    << "\"\"\"\n\n"
    << "import os\n\nimport torch\nfrom torch.utils import cpp_extension\n\n"
    << "HERE = os.path.dirname(os.path.abspath(__file__))\n"
    << "LIBRARIES = [" << joined(libs) << "]  # what the plan's library steps call\n\n\n"
    << "def arch_list(device=None):\n"
    << "    \"\"\"The architecture kevo's kernels were built for: the arch-specific target (9.0a, 10.0a) where one exists.\"\"\"\n"
    << "    major, minor = torch.cuda.get_device_capability(device)\n"
    << "    return f\"{major}.{minor}\" + (\"a\" if major >= 9 else \"\")\n\n\n"
    << "def load(verbose=False, build_directory=None):\n"
    << "    \"\"\"Builds (once per torch and GPU: cpp_extension caches it) and returns torch.ops.kevo." << op << ".\"\"\"\n"
    << "    arch = arch_list()\n"
    << "    os.environ.setdefault(\"TORCH_CUDA_ARCH_LIST\", arch)  # cpp_extension's -gencode for this GPU\n"
    << "    flags = [] if int(torch.__version__.split(\".\")[0]) >= 2 else [\"-std=c++17\"]  # torch 2 builds C++17\n"
    << "    cpp_extension.load(name=\"kevo_" << op << "_sm\" + arch.replace(\".\", \"\"),\n"
    << "                       sources=[os.path.join(HERE, \"" << torch_source_file_name(task) << "\")],\n"
    << "                       extra_include_paths=[HERE], extra_cuda_cflags=flags,\n"
    << "                       extra_ldflags=LIBRARIES, build_directory=build_directory,\n"
    << "                       is_python_module=False, verbose=verbose)\n"
    << "    return torch.ops.kevo." << op << "\n";
  return s.str();
}

}  // namespace kevo::store
