// A dispatcher header: several kernels of one task (the best of several campaigns, or per workload
// bucket), each in its own namespace, and a run() that picks one by shape.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "store/export.h"

namespace kevo::store {

// One kernel of a dispatcher: what export_header would take for it alone.
struct DispatchKernel {
  Candidate candidate;
  ExportProvenance provenance;  // its campaign, variant, speedups, validated workloads
  ExportShapes shapes;          // general: a fallback for every shape it supports
};

// The header for `task` holding every kernel of `kernels` as namespace kevo_<task>::k<i> (their
// own header's content, provenance included), then namespace kevo_<task> with the dispatch:
// kBuckets (a workload's var axes -> the kernel that runs it: `buckets` maps workload indices to
// kernel indices; each kernel must have been validated on its workloads), kernel_for() (constexpr:
// the bucket of the shape, else the first general kernel whose supported_shape() holds, else -1),
// workspace_bytes() and run() with the single-kernel header's signature. Throws InputError (one
// line) for an empty list, a bucket naming a kernel or workload that does not exist or a kernel
// not validated on it, or a kernel that export_header refuses.
std::string export_dispatch_header(const Task& task, const std::vector<DispatchKernel>& kernels,
                                   const std::map<int, int>& buckets);

}  // namespace kevo::store
