// Perturbed inputs for correctness trials: the contract's distributions moved (scaled, shifted,
// with a few outliers), so that the statistics of the declared distribution (a loss's
// expectation, say) move from trial to trial, and a kernel that answers from those statistics,
// or from a sample of its input, instead of computing from all of it, fails. Floating inputs
// move, constant ones too (a kernel must not assume a weight of ones); labels (`choice`) and
// integers keep their declared values. Perturbed values stay on the declared distribution's side
// of zero and inside the input's `domain`.
#pragma once

#include "eval/torch_tensors.h"

#include <cstdint>
#include <string>
#include <vector>

#include "core/task.h"

namespace kevo::eval {

// What a perturbation does to one input.
struct InputPerturbation {
  std::string input;
  double scale = 1, shift = 0;  // x -> scale * x + shift
  double outliers = 0;          // fraction of elements (at random places) multiplied by `outlier_factor` after that
  double outlier_factor = 8;
};

struct Perturbation {
  std::vector<InputPerturbation> inputs;  // the inputs it moves; empty: none
  bool empty() const { return inputs.empty(); }
  std::string describe() const;           // "x scaled 1.37x, shifted +0.12, 0.01% outliers x8"
};

// The perturbation of trial inputs drawn from `seed` (reproducible); `with_outliers` false leaves
// the outliers out (for a reference that is not finite with them).
Perturbation perturbation_for(const Task& task, uint64_t seed, bool with_outliers = true);

// Applies `p` to `inputs` (in contract order, as make_inputs draws them) in place.
void perturb(const Task& task, const Perturbation& p, uint64_t seed, std::vector<torch::Tensor>& inputs);

}  // namespace kevo::eval
