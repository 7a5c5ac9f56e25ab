// The oracle: runs a task's reference on LibTorch. This header stays free of torch types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/task.h"

namespace kevo::eval {

struct OutputSummary {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  int64_t non_finite = 0;  // NaN or infinite elements
  double mean_abs = 0.0;
};

struct ReferenceRun {
  double seconds = 0.0;  // wall time of the reference itself, inputs excluded
  std::vector<OutputSummary> outputs;
};

// Runs the reference for one workload on the CPU with inputs drawn from `seed`.
ReferenceRun run_reference_on_cpu(const Task& task, const Workload& w, uint64_t seed);

// Whether the task's check tells outputs computed from the inputs from outputs that ignore them,
// for one workload, on the CPU (eval/discrimination.h): four reference runs from `seed`.
struct DiscriminationReport {
  bool ok = true;
  std::string error;               // one line when !ok
  std::vector<std::string> lines;  // per output: what kevo found and does
  std::string perturbation;        // what the first perturbed draw did to the inputs
};
DiscriminationReport check_discrimination_on_cpu(const Task& task, const Workload& w, uint64_t seed);

// Versions of the libraries the oracle uses.
std::string torch_version();

}  // namespace kevo::eval
