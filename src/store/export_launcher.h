// The launcher of an exported header (store/ only): the workload table and guard, the workspace
// layout, and run(), which carries out the plan's steps for the validated shapes.
#pragma once

#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "store/export.h"
#include "store/export_names.h"

namespace kevo::store::exporter {

// The text from "// ---- the launcher" to the end of the header: namespace `ns` with the constant
// axes, the workload table of `validated`, validated_workload(), workspace_offsets(),
// workspace_bytes() and run(). Kernels are named source::<kernel_fn><i>() by their index in
// c.kernel_names().
std::string launcher_code(const std::string& ns, const Task& task, const Candidate& c, const std::vector<int>& validated,
                          const LauncherNames& L, const std::string& kernel_fn, const ExportShapes& shapes = {});

}  // namespace kevo::store::exporter
