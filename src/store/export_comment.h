// The comment block that opens an exported header (store/ only): provenance, the validated
// workloads, the tensors, usage, build flags, libraries and how the source was namespaced.
#pragma once

#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "store/export.h"
#include "store/export_names.h"

namespace kevo::store::exporter {

// What the comment says about the plan beyond its task and candidate.
struct HeaderFacts {
  bool clusters = false;  // the source uses __cluster_dims__
  bool cublaslt = false;  // the plan has a cuBLASLt step
  bool cudnn = false;     // and a cuDNN step
};

// The comment, each line starting "//", ending with its final "//" line (no blank line after).
std::string header_comment(const std::string& ns, const Task& task, const Candidate& c, const ExportProvenance& p,
                           const std::vector<int>& validated, const LauncherNames& L, const HeaderFacts& facts,
                           const ExportShapes& shapes = {});

}  // namespace kevo::store::exporter
