// Header export: a candidate (device source + launch plan) as a self-contained .cuh with a host launcher.
#pragma once

#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/shape_condition.h"
#include "core/task.h"

namespace kevo::store {

// What the header's comment says about where the kernel came from. Empty strings print as "unknown".
struct ExportProvenance {
  double speedup_eager = 0, speedup_compile = 0;  // 0: unknown
  std::string gpu, date, kevo_version, kevo_commit, campaign_id, variant;  // variant: id or genome text
  std::vector<int> validated_workloads;  // workload indices (into task.workloads) it was validated on
};

// Which shapes the header's run() accepts. By default the validated workloads only; `general`:
// every shape inside the contract's axis ranges under which the kernel is correct (`kernel`: its
// template's constraints and its family's assumptions, over the axes) and which every plan needs
// (CUDA's limits, int32 arguments: added by the export). `verified`: the unseen shapes the kernel
// was checked on (var axis -> value), listed in the header.
struct ExportShapes {
  bool general = false;
  std::vector<ShapeCondition> kernel;
  std::vector<std::map<std::string, int64_t>> verified;
  std::string verified_on;  // the GPU and date of the verification, for the comment
};

// The header text for `candidate` solving `task` (docs/export.md describes it): provenance, the
// source inside namespace kevo_<task>, and kevo_<task>::run / ::workspace_bytes, which accept only
// the validated workloads' shapes. Throws InputError (one line) when the plan cannot be exported:
// no or unknown validated workloads, an #include inside a block of the source.
std::string export_header(const Task& task, const Candidate& candidate, const ExportProvenance& p,
                          const ExportShapes& shapes = {});

// The same header with everything in namespace `ns` ("kevo_relu::k1": C++17 nested names), as a
// dispatcher holds several kernels of one task (export_dispatch.h).
std::string export_header_in(const std::string& ns, const Task& task, const Candidate& candidate,
                             const ExportProvenance& p, const ExportShapes& shapes);

// "kevo_softmax": the header's namespace for a task (its name made an identifier).
std::string export_namespace(const Task& task);

// "softmax.cuh": the file name the header is meant to be saved under.
std::string export_file_name(const Task& task);

}  // namespace kevo::store
