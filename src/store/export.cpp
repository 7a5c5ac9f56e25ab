// Header export: the provenance comment, the includes and the export runtime, the candidate's
// source namespaced, and the launcher, put together in that order (each part in its own file).
#include "store/export.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/error.h"
#include "core/template_library.h"
#include "store/export_comment.h"
#include "store/export_launcher.h"
#include "store/export_names.h"
#include "store/export_runtime.h"
#include "store/export_source.h"

namespace kevo::store {

namespace {

[[noreturn]] void fail(const Candidate& c, const std::string& where, const std::string& what) {
  throw InputError(Location{c.file, 0, 0}, where, what);
}

// The candidate with kevo's template library pasted in where it includes it: an exported header
// includes nothing of kevo's.
Candidate self_contained(const Candidate& c) {
  Candidate out = c;
  try {
    out.source = templates::inline_library(c.source);
  } catch (const std::exception& e) {
    fail(c, "export", e.what());
  }
  return out;
}

}  // namespace

std::string export_namespace(const Task& task) {
  std::string n = "kevo_";
  for (char c : task.name) n += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return n;
}

std::string export_file_name(const Task& task) { return task.name + ".cuh"; }

std::string export_header(const Task& task, const Candidate& c, const ExportProvenance& p, const ExportShapes& shapes) {
  return export_header_in(export_namespace(task), task, c, p, shapes);
}

std::string export_header_in(const std::string& ns, const Task& task, const Candidate& candidate,
                             const ExportProvenance& p, const ExportShapes& shapes) {
  const Candidate c = self_contained(candidate);
  // ---- the validated workloads: the only shapes the launcher accepts ----
  std::vector<int> validated = p.validated_workloads;
  std::sort(validated.begin(), validated.end());
  validated.erase(std::unique(validated.begin(), validated.end()), validated.end());
  if (validated.empty())
    fail(c, "export", "no validated workloads: the header's launcher accepts only the shapes the kernel was validated on");
  for (int w : validated)
    if (w < 0 || static_cast<size_t>(w) >= task.workloads.size())
      fail(c, "export", "validated workload " + std::to_string(w) + " is not one of task '" + task.name + "''s " +
                            std::to_string(task.workloads.size()) + " workloads");
  for (int w : validated) resolve_plan(c, task, task.workloads[static_cast<size_t>(w)], DeviceLimits{});
  for (const auto& shape : shapes.verified)
    for (const Axis& a : task.axes)
      if (!a.value && !shape.count(a.name))
        fail(c, "export", "a verified shape gives no size for axis '" + a.name + "'");

  const exporter::LauncherNames L(task, c);
  bool has_matmul = false, has_conv = false;
  bool has_tensor_map = false;
  for (const Step& s : c.plan.steps) {
    has_matmul |= std::holds_alternative<MatmulStep>(s.op);
    has_conv |= std::holds_alternative<Conv2dStep>(s.op);
    if (const auto* k = std::get_if<KernelStep>(&s.op))
      for (const KernelArg& a : k->args) has_tensor_map |= a.kind == ArgKind::TensorMap;
  }
  bool needs_fp16 = false, needs_bf16 = false;
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& t : *list) {
      needs_fp16 |= t.dtype == DType::Float16;
      needs_bf16 |= t.dtype == DType::BFloat16;
    }

  // ---- the source, namespaced ----
  const std::string kernel_fn = exporter::kernel_function_prefix(c);
  const std::string open = "namespace " + ns + " {\nnamespace source {\nnamespace {";
  const std::string close = "}  // namespace\n}  // namespace source\n}  // namespace " + ns;
  const exporter::PreparedSource src = exporter::prepare_source(c, open, close);
  const std::vector<std::string> kernels = c.kernel_names();

  std::ostringstream h;
  h << exporter::header_comment(ns, task, c, p, validated, L, {src.clusters, has_matmul, has_conv}, shapes)
    << "\n#pragma once\n\n"
    << "#include <cuda_runtime.h>\n\n#include <cstddef>\n#include <cstdint>\n";
  if (needs_fp16) h << "#include <cuda_fp16.h>\n";
  if (needs_bf16) h << "#include <cuda_bf16.h>\n";
  if (has_matmul || has_conv) h << "#include <mutex>\n#include <utility>\n#include <vector>\n";
  if (has_tensor_map) h << "#include <cuda.h>  // CUtensorMap; the driver call is looked up at run time (no -lcuda)\n";
  if (has_matmul) h << "\n#include <cublasLt.h>\n";
  if (has_conv) h << "\n#include <cudnn.h>\n";
  h << "\n" << export_runtime_block("runtime.h");
  if (has_matmul) h << "\n" << export_runtime_block("cublaslt.h");
  if (has_conv) h << "\n" << export_runtime_block("cudnn.h");
  if (has_tensor_map) h << "\n" << export_runtime_block("tensor_map.h");

  // ---- the candidate's source ----
  h << "\n// ---- the candidate's source";
  if (src.extern_c > 0 || src.includes > 0)
    h << " (" << src.extern_c << " extern \"C\" dropped, " << src.includes << " #include closed around)";
  h << "\n";
  for (const std::string& m : src.macros) h << "#pragma push_macro(\"" << m << "\")\n#undef " << m << "\n";
  h << open << "\n\n" << src.text << (src.text.empty() || src.text.back() == '\n' ? "" : "\n") << "\n";
  if (!kernels.empty()) {
    h << "// The plan's kernels by the plan's name expressions (here, where the source's macros still apply).\n";
    for (size_t i = 0; i < kernels.size(); ++i)
      h << "inline const void* " << kernel_fn << i << "() { return reinterpret_cast<const void*>(&" << kernels[i]
        << "); }\n";
  }
  h << close << "\n";
  for (auto it = src.macros.rbegin(); it != src.macros.rend(); ++it) h << "#pragma pop_macro(\"" << *it << "\")\n";


  h << exporter::launcher_code(ns, task, c, validated, L, kernel_fn, shapes);
  return h.str();
}

}  // namespace kevo::store
