// `kevo export --general` (cli only): verifying a best variant on unseen shapes on the GPU before its
// header may accept shapes it was not measured on.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "search/unseen_shapes.h"
#include "store/export.h"
#include "store/records.h"

namespace kevo::cli {

struct GeneralExportOptions {
  search::UnseenShapeOptions draw;
  std::vector<int> gpus;  // empty: every GPU
  int trials = 2;         // correctness trials per unseen shape
  std::map<std::string, Task> ranges;  // per task name: a contract whose axis ranges apply (--ranges)
};

// Verifies the GPU, once, for every header of an export (a Runner is started on first use).
class ShapeVerifier {
 public:
  explicit ShapeVerifier(GeneralExportOptions o);
  ~ShapeVerifier();

  // The shapes of a shape-general header for candidate c of variant v: the kernel's conditions, and
  // the unseen shapes drawn for them, each checked on the GPU against the reference. `task` takes
  // the axis ranges of --ranges first (the header reads them from it). Throws
  // InputError (one line) when the kernel cannot be exported for shapes not measured (a fact
  // without an axis expression, no unseen shape admitted, no GPU) or fails on a shape (named).
  store::ExportShapes verify(Task& task, const Candidate& c, const store::VariantRecord& v);

 private:
  struct State;
  GeneralExportOptions o_;
  std::unique_ptr<State> s_;
};

}  // namespace kevo::cli
