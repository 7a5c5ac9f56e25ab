// Shapes a kernel was not measured on, for verifying a shape-general export: the conditions an
// exported header would check, and a seeded draw of awkward and random shapes they admit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/shape_condition.h"
#include "core/task.h"
#include "store/records.h"

namespace kevo::search {

using AxisValues = std::map<std::string, int64_t>;  // every var axis

// The kernel's own conditions for a variant: its template's constraints with its genome's knobs
// and its family's assumptions (mutate::shape_conditions); none for a free-form variant (source
// edited, hand-written), which gets only the checks every plan gets. `pinned` lists the facts a
// constraint reads that have no axis expression: such a kernel is known correct only on its
// validated workloads.
ShapeConditions kernel_conditions(const Task& task, const store::VariantRecord& v);

// Whether an exported header with these kernel conditions would accept the shape: inside the
// contract's axis ranges, every kernel condition and every plan condition (store's) holding, the
// reference lowering to the declared outputs and the plan resolving there.
bool header_admits(const Task& task, const Candidate& c, const std::vector<ShapeCondition>& kernel, const AxisValues& shape);

struct UnseenShapeOptions {
  uint64_t seed = 1;
  int count = 24;                            // shapes wanted
  int64_t max_bytes = int64_t{2} << 30;      // inputs plus outputs of one shape, so a draw fits GPU memory
};

// Up to `count` shapes that are no workload of the task, each admitted by `admits` and within
// max_bytes, deterministic for a seed: first the awkward ones (each axis at 1, at its min, its
// max, just above its min, the largest multiple below its max, odd sizes, and values one off a
// power of two where multiple_of allows), the other axes at a workload's values, then every axis
// at its min and at its max, then random ones (log-uniform per axis, rounded to its multiple).
std::vector<AxisValues> draw_unseen_shapes(const Task& task, const std::function<bool(const AxisValues&)>& admits,
                                           const UnseenShapeOptions& o);

// The task with `shapes` as its workloads, each checked and not timed (what verification runs).
Task with_checked_shapes(const Task& task, const std::vector<AxisValues>& shapes);

// The axis ranges `from` declares, put on `task` (a campaign's recorded contract, which may predate
// them). Throws InputError (one line, naming from's file) unless `from` is the same task: its name,
// its var axes and its workloads' shapes.
void take_axis_ranges(Task& task, const Task& from);

// "B=17, D=4096"
std::string shape_text(const Task& task, const AxisValues& shape);

}  // namespace kevo::search
