// Loads a built CUBIN and launches a resolved plan's steps: kernels through the driver API, library
// steps through LibrarySteps (eval/ only: brings in cuda.h). The GPU worker's launch path.
#pragma once

#include <cuda.h>

#include <map>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "eval/builder.h"

namespace kevo::eval {

class LibrarySteps;  // eval/library_steps.h

// A CUBIN loaded into the current context, with the plan's kernels looked up by name expression.
class LoadedModule {
 public:
  // Throws std::runtime_error (with the driver's error) when the CUBIN does not load or a
  // kernel's lowered name is missing from it.
  explicit LoadedModule(const BuildResult& built);
  ~LoadedModule();
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;

  CUfunction function(const std::string& name_expression) const;
  CUmodule handle() const { return module_; }

 private:
  CUmodule module_ = nullptr;
  std::map<std::string, CUfunction> functions_;
};

// Launches every step of `plan` in order on `stream`; buffers[i] is the device address of
// plan.buffers[i]. Kernels asking for more than 48 KiB of dynamic shared memory are opted in
// first. Library steps (cuBLASLt, cuDNN) go to `libs`; without one they throw std::runtime_error.
// Returns after the launches are queued; the caller synchronises.
void launch_plan(const LoadedModule& module, const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers,
                 CUstream stream, LibrarySteps* libs = nullptr);

}  // namespace kevo::eval
