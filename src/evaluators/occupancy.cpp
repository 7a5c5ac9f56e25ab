// Theoretical occupancy, the CUDA occupancy calculator's arithmetic for sm_90/sm_100.
#include "evaluators/occupancy.h"

#include <algorithm>

namespace kevo::evaluators {

double theoretical_occupancy(int threads, int registers, int64_t shared_bytes) {
  if (threads <= 0) return 0;
  const int warps = (threads + 31) / 32;
  int blocks = std::min(32, 2048 / (warps * 32));
  if (registers > 0) {
    const int per_warp = (registers * 32 + 255) / 256 * 256;
    blocks = std::min(blocks, 65536 / (per_warp * warps));
  }
  blocks = std::min<int64_t>(blocks, (228 * 1024) / (shared_bytes + 1024));
  return std::max(0, blocks) * warps / 64.0;
}

std::vector<PlanResources> plan_resources(const Candidate& c, const Task& task, const DeviceLimits& limits,
                                          const std::function<KernelFootprint(const std::string&)>& footprint) {
  std::vector<PlanResources> out;
  if (task.workloads.empty()) return out;
  size_t largest = 0;
  for (size_t w = 1; w < task.workloads.size(); ++w)
    if (task.bytes_moved(task.workloads[w]) > task.bytes_moved(task.workloads[largest])) largest = w;
  ResolvedPlan plan;
  try {
    plan = resolve_plan(c, task, task.workloads[largest], limits);
  } catch (...) {
    return out;
  }
  for (const ResolvedStep& step : plan.steps) {
    const auto* k = std::get_if<ResolvedKernel>(&step);
    if (!k) continue;
    KernelFootprint f = footprint(k->kernel);
    PlanResources r;
    r.kernel = k->kernel;
    r.registers = f.registers;
    r.spill_bytes = f.spill_bytes;
    r.shared_bytes = f.static_shared + k->shared_bytes;
    r.threads = static_cast<int>(k->block[0] * k->block[1] * k->block[2]);
    r.occupancy = theoretical_occupancy(r.threads, r.registers, r.shared_bytes);
    out.push_back(r);
  }
  return out;
}

}  // namespace kevo::evaluators
