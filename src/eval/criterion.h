// How a candidate's output is judged against the reference's (eval/ only: LibTorch): the contract's
// elementwise tolerance |out - ref| <= atol + rtol |ref| (or equal; NaN never passes; integers
// exactly), or, where that tolerance accepts outputs that ignore the inputs (eval/discrimination.h),
// the same with atol scaled to the outputs' own magnitude; and where the reference's own rounding
// takes a large part of that allowance, atol no smaller than a multiple of that rounding.
#pragma once

#include "eval/torch_tensors.h"

#include <cstdint>

#include "core/task.h"

namespace kevo::eval {

struct Criterion {
  Tolerance tolerance;
  // atol becomes min(atol, rtol * mean |ref|) of the reference checked against: an atol above the
  // outputs' own size would accept zeros.
  bool scaled = false;
  // atol becomes at least noise_floor * mean |ref|: where the reference, computed in the contract's
  // dtype, misses its float64 result by much of the allowance (a sum whose terms cancel: its
  // outputs near zero carry the rounding of terms far larger), a kernel summing in another order
  // misses the reference by as much. 0: no floor.
  double noise_floor = 0;

  double atol_for(const torch::Tensor& ref) const;
  double allowed(double ref, double atol) const { return atol + tolerance.rtol * std::fabs(ref); }
};

struct ValueCheck {
  int64_t bad = 0;         // elements outside the criterion
  int64_t non_finite = 0;  // of them, NaN or infinite where the reference is finite
  int64_t worst_at = -1;   // flat index of the worst element (largest error over its allowance)
  double max_abs = 0;      // largest finite |out - ref|
  double max_ratio = 0;    // largest finite |out - ref| / allowance
  double atol = 0;         // the atol the check used
};

// The mean of t's elements (of their absolute values), summed in float64 a chunk at a time: no
// float64 copy of a tensor that may be a large part of the GPU's memory (KernelBench's Frobenius
// norm has a 7 GiB output; its float64 copy ran an 80 GB H100 out of memory).
double mean_of(const torch::Tensor& t);
double mean_abs_of(const torch::Tensor& t);

// `out` and `ref` of the same number of elements (any shapes, any device), in chunks that keep
// the temporaries small.
ValueCheck check_values(const torch::Tensor& out, const torch::Tensor& ref, const Criterion& c);

// Whether `out` passes (no element outside the criterion).
inline bool passes(const torch::Tensor& out, const torch::Tensor& ref, const Criterion& c) {
  return check_values(out, ref, c).bad == 0;
}

}  // namespace kevo::eval
