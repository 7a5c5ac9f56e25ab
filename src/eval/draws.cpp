// Drawing inputs (declared or perturbed) and running the reference on them.
#include "eval/draws.h"

#include <optional>

#include "eval/inputs.h"
#include "eval/torch_graph.h"

namespace kevo::eval {

namespace {

bool finite(const std::vector<torch::Tensor>& outputs) {
  for (const torch::Tensor& t : outputs)
    if (t.is_floating_point() && !torch::isfinite(t).all().item<bool>()) return false;
  return true;
}

}  // namespace

ReferenceDraw draw_with_reference(const Task& task, const Graph& graph, const Workload& w, uint64_t seed, bool perturbed,
                                  torch::Device device) {
  // With the outliers, without them, unperturbed: the first whose reference is finite (the inputs
  // are drawn again for each, so that no two sets are held at once).
  for (int attempt = perturbed ? 0 : 2;; ++attempt) {
    ReferenceDraw d;
    d.inputs = make_inputs(task, w, seed, device);
    if (attempt < 2) d.perturbation = perturbation_for(task, seed, /*with_outliers=*/attempt == 0);
    if (attempt < 2 && d.perturbation.empty()) continue;
    perturb(task, d.perturbation, seed, d.inputs);
    d.outputs = run_graph(graph, d.inputs);
    if (attempt < 2 && !finite(d.outputs)) continue;
    for (torch::Tensor& t : d.outputs) t = t.contiguous();
    return d;
  }
}

std::optional<Draw> exact_draw(const Task& task, const Graph& graph, const Workload& w, uint64_t seed,
                               torch::Device device) {
  Graph wide = graph;  // every floating value in float64
  for (ValueInfo& v : wide.values)
    if (is_floating(v.dtype)) v.dtype = DType::Float64;
  try {
    std::vector<torch::Tensor> inputs = make_inputs(task, w, seed, device);
    for (torch::Tensor& t : inputs)
      if (t.is_floating_point()) t = t.to(torch::kFloat64);
    return Draw{run_graph(wide, inputs)};
  } catch (const std::exception&) {
    return std::nullopt;  // an op that insists on its dtype, or not the memory for float64: no verdict
  }
}

Discrimination discriminate_on(const Task& task, const Graph& graph, const Workload& w, const DiscriminationSeeds& s,
                               torch::Device device) {
  auto outputs_of = [&](uint64_t seed, bool perturbed, Perturbation* used = nullptr) {
    ReferenceDraw d = draw_with_reference(task, graph, w, seed, perturbed, device);
    if (used) *used = d.perturbation;
    return Draw{std::move(d.outputs)};
  };
  const Draw d0 = outputs_of(s.declared, false), d1 = outputs_of(s.declared2, false);
  Perturbation used;
  const Draw p1 = outputs_of(s.perturbed, true, &used), p2 = outputs_of(s.perturbed2, true);
  // The float64 run, once, for the first floating output: how far the reference's rounding is from it.
  std::optional<std::optional<Draw>> exact;
  auto exact_once = [&]() -> const Draw* {
    if (!exact) exact = exact_draw(task, graph, w, s.declared, device);
    return *exact ? &**exact : nullptr;
  };
  Discrimination d = discriminate(task, d0, d1, p1, p2, exact_once);
  d.perturbation = used.describe();
  return d;
}

}  // namespace kevo::eval
