// The draws of a workload's inputs that evaluation uses, with the reference's outputs (eval/ only:
// LibTorch): the contract's distributions, or perturbed ones (eval/perturbation.h) for the
// trials that catch kernels fitted to the declared distribution. A perturbation under which the
// reference is not finite drops its outliers, then itself: every draw has a finite reference
// where the declared distribution does.
#pragma once

#include "eval/torch_tensors.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "core/graph.h"
#include "core/task.h"
#include "eval/discrimination.h"
#include "eval/perturbation.h"

namespace kevo::eval {

struct ReferenceDraw {
  std::vector<torch::Tensor> inputs, outputs;  // contract order; outputs contiguous
  Perturbation perturbation;                   // the one applied (empty: the declared distributions)
};

ReferenceDraw draw_with_reference(const Task& task, const Graph& graph, const Workload& w, uint64_t seed, bool perturbed,
                                  torch::Device device);

// The seeds of the draws a workload's discrimination analysis uses (two declared, two perturbed),
// from a base seed: the runner's trial and timing draws are among them.
struct DiscriminationSeeds {
  uint64_t declared, declared2, perturbed, perturbed2;
};

// The declared draw of `seed` with its floating inputs widened to float64 and the reference run on
// them, or nothing where it cannot run so (an op that insists on its dtype, the memory).
std::optional<Draw> exact_draw(const Task& task, const Graph& graph, const Workload& w, uint64_t seed,
                               torch::Device device);

// Runs the analysis on the four draws on `device` (and, where an output is floating, on the first
// declared draw in float64: discriminate()'s `exact`).
Discrimination discriminate_on(const Task& task, const Graph& graph, const Workload& w, const DiscriminationSeeds& s,
                               torch::Device device);

}  // namespace kevo::eval
