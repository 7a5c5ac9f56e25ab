// The oracle's CPU path: draw inputs, run the reference graph, summarise the outputs.
#include "eval/oracle.h"

#include <chrono>

#include <torch/version.h>

#include "core/rng.h"
#include "eval/criterion.h"
#include "eval/draws.h"
#include "eval/inputs.h"
#include "eval/torch_graph.h"

namespace kevo::eval {

ReferenceRun run_reference_on_cpu(const Task& task, const Workload& w, uint64_t seed) {
  Graph g = task.graph(w);
  std::vector<torch::Tensor> inputs = make_inputs(task, w, seed);
  auto start = std::chrono::steady_clock::now();
  std::vector<torch::Tensor> outputs = run_graph(g, inputs);
  ReferenceRun run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const torch::Tensor& t = outputs[i];
    OutputSummary s;
    s.name = task.outputs[i].name;
    s.dtype = from_torch(t.scalar_type());
    s.shape = Shape(t.sizes().begin(), t.sizes().end());
    if (t.is_floating_point()) s.non_finite = (~torch::isfinite(t)).sum().item<int64_t>();
    s.mean_abs = mean_abs_of(t);
    run.outputs.push_back(std::move(s));
  }
  return run;
}

DiscriminationReport check_discrimination_on_cpu(const Task& task, const Workload& w, uint64_t seed) {
  const Graph g = task.graph(w);
  const DiscriminationSeeds seeds{seed, splitmix(seed + 1), splitmix(seed + 2), splitmix(seed + 3)};
  const Discrimination d = discriminate_on(task, g, w, seeds, torch::kCPU);
  DiscriminationReport r;
  r.ok = d.ok();
  r.error = d.error();
  r.lines = d.report(task.tolerance);
  r.perturbation = d.perturbation;
  return r;
}

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace kevo::eval
