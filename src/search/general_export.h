// `kevo export --general`: a best variant verified on unseen shapes on the GPU before its header
// may accept shapes it was not measured on. The verification's bookkeeping (which shapes count as
// verified, which are retried, what refuses) is verify_unseen_shapes, which any checker drives;
// ShapeVerifier checks on the GPUs.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/measurement.h"
#include "search/unseen_shapes.h"
#include "store/export.h"
#include "store/records.h"

namespace kevo::search {

struct GeneralExportOptions {
  UnseenShapeOptions draw;
  std::vector<int> gpus;  // empty: every GPU
  int trials = 2;         // correctness trials per unseen shape
  std::map<std::string, Task> ranges;  // per task name: a contract whose axis ranges apply (--ranges)
};

// Checks the candidate on a task whose workloads are checked-only unseen shapes; a measurement
// stops at its first failing workload, as eval::Runner's does.
using CheckShapes = std::function<eval::Measurement(const Task& checked)>;

// The shapes of a shape-general header for candidate c of variant v: the kernel's conditions, and
// the unseen shapes drawn for them, each checked by `check` against the reference. `task` takes the
// axis ranges of o.ranges first (the header reads them from it). A shape whose check cannot tell
// outputs that ignore the inputs (unverifiable) is left out and the shapes after it are checked
// again. `device` names what checked them, for the header's note. Throws InputError (one line)
// when the kernel cannot be exported for shapes not measured (a fact without an axis expression,
// no unseen shape admitted) or fails on a shape (named).
store::ExportShapes verify_unseen_shapes(Task& task, const Candidate& c, const store::VariantRecord& v,
                                         const GeneralExportOptions& o, const CheckShapes& check,
                                         const std::function<std::string()>& device);

// Verifies on the GPU, once, for every header of an export (a Runner is started on first use).
class ShapeVerifier {
 public:
  explicit ShapeVerifier(GeneralExportOptions o);
  ~ShapeVerifier();

  // verify_unseen_shapes on the GPUs; also refuses where there is no GPU.
  store::ExportShapes verify(Task& task, const Candidate& c, const store::VariantRecord& v);

 private:
  struct State;
  GeneralExportOptions o_;
  std::unique_ptr<State> s_;
};

}  // namespace kevo::search
