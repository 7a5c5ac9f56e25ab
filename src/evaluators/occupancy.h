// A kernel's theoretical occupancy from its registers, shared memory and block size: the MAP-Elites
// descriptor beside the design space, and a feature policies see.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"

namespace kevo::evaluators {

struct KernelFootprint {
  int registers = 0;
  int64_t static_shared = 0;
  int64_t spill_bytes = 0;
};

struct PlanResources {
  std::string kernel;
  int registers = 0;
  int64_t shared_bytes = 0;   // static plus dynamic
  int64_t spill_bytes = 0;
  int threads = 0;
  double occupancy = 0;       // resident warps / the SM's maximum, 0..1
};

// Resident warps over the maximum (64) of an sm_90/sm_100 SM: 65536 registers (allocated per warp
// in units of 256), 228 KiB shared memory (1 KiB reserved per block), 2048 threads, 32 blocks.
double theoretical_occupancy(int threads, int registers, int64_t shared_bytes);

// Per kernel launch of the plan, on the task's largest workload (by bytes moved).
std::vector<PlanResources> plan_resources(const Candidate& c, const Task& task, const DeviceLimits& limits,
                                          const std::function<KernelFootprint(const std::string&)>& footprint);

}  // namespace kevo::evaluators
