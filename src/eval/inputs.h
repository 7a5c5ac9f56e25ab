// Draws a task's inputs from their contract distributions, reproducibly from a seed (LibTorch).
#pragma once

#include "eval/torch_tensors.h"

#include <cstdint>
#include <vector>

#include "core/task.h"

namespace kevo::eval {

// The inputs of one workload in contract order, drawn from `seed` on `device` itself (a GPU's
// own generator: large inputs need no host round trip). The same (task, workload, seed, device
// kind) always gives the same values; CPU and GPU draws differ.
std::vector<torch::Tensor> make_inputs(const Task& task, const Workload& w, uint64_t seed,
                                       torch::Device device = torch::kCPU);

// Fan-in of a weight as torch.nn.init computes it: dim 1 times the product of dims 2 and on.
int64_t fan_in(const Shape& weight_shape);

}  // namespace kevo::eval
