// The tensor-core families' precision gates: the error models behind them, and the same rules as
// expressions over the axes for a shape-general export.
#include "lower/precision.h"

#include <cmath>

#include "lower/kit.h"

namespace kevo::lower {

namespace {
// K <= bound as an expression: 1 or 0 as (bound // K + bound) // (bound + 1); "0" where no K is.
std::string k_at_most_expr(double bound, const std::string& k) {
  const int64_t b = bound >= 9e18 ? INT64_MAX / 4 : static_cast<int64_t>(bound);
  if (b < 1) return "0";
  return "(" + std::to_string(b) + " // " + paren(k) + " + " + std::to_string(b) + ") // " + std::to_string(b + 1);
}
}  // namespace

// The rule that admits plain TF32 (documented in docs/templates.md): a TF32 product rounds each
// operand to 11 significant bits (u = 2^-11), and the probabilistic bound on a length-K dot
// product's rounding error (Higham and Mary) is about u * sqrt(K) relative to sum |a_i b_i|.
// TF32 is offered where the task's rtol covers that at every workload's K.
bool tf32_admitted(const Task& task, int64_t k) { return task.tolerance.rtol >= std::ldexp(1.0, -11) * std::sqrt(double(k)); }
// 3xTF32's products carry fp32-level error, but the tensor cores add each of the three into the
// fp32 accumulator rounding toward zero (Fasi et al., "Numerical behavior of NVIDIA tensor cores"):
// each add loses about 2^-24 of the running sum on average, always the same way. Three adds per k
// step of 8 over a sum that grows along K drift by about 3/8 * K * 2^-24 / 2 = 3 * 2^-28 * K
// relative where the terms do not cancel (the perturbed trials' shifted inputs). On an H100,
// KernelBench level 1 #17 (K = 8192) came out 1.05e-4 off on such inputs where that says 9.2e-5,
// and a layer norm after a GEMM at K = 1024 (a 16th of 1e-4, split.cpp) broke on the H200.
// Offered where rtol covers twice that: rtol >= 3 * 2^-27 * K (K <= 4,473 at 1e-4); elsewhere the
// promoted form (each k step's products summed on the CUDA cores) serves the task.
constexpr double kTf32x3DriftPerK = 3.0 / (int64_t{1} << 27);
// 3xbf16's k steps are 16 long: half the adds, half the drift (rtol >= 3 * 2^-28 * K).
constexpr double kBf16x3DriftPerK = kTf32x3DriftPerK / 2;
bool tf32x3_admitted(const Task& task, int64_t k) { return task.tolerance.rtol >= kTf32x3DriftPerK * double(k); }
// 3xbf16 drops lo*lo and keeps about 17 bits of each operand: about 2^-16 relative error per
// product, unbiased (round to nearest), so it is offered where rtol covers that much, and, since
// its products are added on the tensor cores as 3xTF32's are, only where that drift fits too (on
// an H100 KernelBench's matmul with K = 524,288 came out 1.1e-3 off at 1e-4); the evaluator's
// correctness checks on every workload decide, as for every genome.
bool bf16x3_admitted(const Task& task, int64_t k) {
  return task.tolerance.rtol >= std::ldexp(1.0, -16) && task.tolerance.rtol >= kBf16x3DriftPerK * double(k);
}
// TF32's error grows with sqrt(K): K <= (rtol / 2^-11)^2.
std::string tf32_admitted_expr(const Task& task, bool fp32, const std::string& k) {
  const double root = task.tolerance.rtol / std::ldexp(1.0, -11);
  return fp32 ? k_at_most_expr(root * root, k) : "0";
}
// 3xTF32's and 3xbf16's drift grows with K: K <= rtol / (drift per K).
std::string tf32x3_admitted_expr(const Task& task, bool fp32, const std::string& k) {
  return fp32 ? k_at_most_expr(task.tolerance.rtol / kTf32x3DriftPerK, k) : "0";
}
std::string bf16x3_admitted_expr(const Task& task, bool fp32, const std::string& k) {
  return fp32 && task.tolerance.rtol >= std::ldexp(1.0, -16) ? k_at_most_expr(task.tolerance.rtol / kBf16x3DriftPerK, k)
                                                              : "0";
}

}  // namespace kevo::lower
