// Whether a task's check tells outputs computed from the inputs from outputs that ignore them
// (eval/ only: LibTorch). Per workload and output it asks what the contract's tolerance accepts
// that a kernel could write without reading its inputs, or by fitting the declared
// distribution: zeros, a constant (the reference's mean), the outputs of another draw, and, on
// perturbed inputs (eval/perturbation.h), the declared distribution's outputs. Where the
// tolerance accepts any of them, kevo checks that output with atol scaled to the outputs
// (eval/criterion.h); where even that accepts one, no check can be built and the task is
// refused. That another draw of the declared distribution passes is allowed (an average that the
// inputs barely move, such as a loss over 2^30 elements): the perturbed trials catch a kernel
// that answers with the distribution's expectation.
#pragma once

#include "eval/torch_tensors.h"

#include <functional>
#include <string>
#include <vector>

#include "core/task.h"
#include "eval/criterion.h"

namespace kevo::eval {

// The reference's outputs for one draw of the inputs.
struct Draw {
  std::vector<torch::Tensor> outputs;  // in contract order
};

struct OutputVerdict {
  std::string output;
  std::vector<std::string> plain_accepts;  // what the contract's tolerance accepts ("zeros", ...)
  bool scaled = false;                     // checked with atol scaled to the outputs
  bool noise = false;                      // the outputs are the reference's own rounding noise: the contract's atol
  double scaled_atol = 0;                  // on the declared draw
  // The reference's own rounding where it takes over kNoiseShare of the allowance on the declared
  // draw: max |ref - float64 ref| / mean |float64 ref| (0 otherwise), and the floor the check
  // gives atol for it (Criterion::noise_floor: kNoiseMargin times that).
  double reference_error = 0, noise_floor = 0;
  double reference_share = 0;  // the largest |ref - float64 ref| / allowance on the declared draw
  std::vector<std::string> still_accepts;  // what even the scaled check accepts: no check can be built
  bool declared_draws_agree = false;       // another declared draw's outputs pass (only perturbed trials tell)
  bool constant = false;  // the same bits on every draw, perturbed ones too (refused, and said so)
  bool discriminates() const { return still_accepts.empty(); }
};

struct Discrimination {
  std::vector<OutputVerdict> outputs;
  std::string perturbation;  // what the perturbed draw analysed did to the inputs
  bool ok() const;
  // One line when !ok: "output y: even atol 1e-12 accepts zeros: no check can tell ...".
  std::string error() const;
  // The criterion each output is checked with, in contract order.
  std::vector<Criterion> criteria(const Tolerance& t) const;
  // Per output, what kevo found and does, one line each (for kevo check).
  std::vector<std::string> report(const Tolerance& t) const;
};

// Where the reference's own rounding (against float64) takes more than this share of an output's
// allowance, a kernel rounding differently could miss it: atol gets a floor of kNoiseMargin times
// that rounding, relative to the outputs' mean magnitude. A sum of 8,192 GEMM outputs that cancel
// to near zero (KernelBench level 2 #14) misses float64 by up to 4x rtol there in float32, and a
// kernel that sums the weights first misses it by 3.5 times as much as the reference does.
constexpr double kNoiseShare = 0.125;
constexpr double kNoiseMargin = 8;

// `declared`, `declared2`: two draws of the contract's distributions; `perturbed`, `perturbed2`:
// two perturbed draws; all of one workload. `exact`, where given, is asked for `declared`'s inputs
// run in float64, or null where they cannot run so (an op that insists on its dtype, or no memory
// for it). An output whose reference misses that by more than the scaled atol, where the contract's
// tolerance would need scaling, is rounding noise around an exact result near zero (the mean of a
// normalised tensor): no kernel could meet the scaled check, zeros are right to within what the
// dtype resolves, and it keeps the contract's tolerance (OutputVerdict::noise); the perturbed draws,
// where its outputs move, still tell. An output of a float32 task whose reference misses it by more
// than kNoiseShare of its allowance gets the noise floor (OutputVerdict::noise_floor), and what the check then
// accepts is analysed again under it.
Discrimination discriminate(const Task& task, const Draw& declared, const Draw& declared2, const Draw& perturbed,
                            const Draw& perturbed2, const std::function<const Draw*()>& exact = {});

}  // namespace kevo::eval
