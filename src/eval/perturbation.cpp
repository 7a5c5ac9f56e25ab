// Moving the contract's distributions for perturbed trials.
#include "eval/perturbation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/rng.h"
#include "eval/inputs.h"

namespace kevo::eval {

namespace {

constexpr double kMinScale = 0.5, kMaxScale = 2.0;  // log-uniform
constexpr double kMaxShift = 0.5;                   // of the declared spread
constexpr double kOutlierFraction = 1e-4;
constexpr int64_t kMinElementsForOutliers = 100;

// Floating inputs move, constants too (a kernel must not assume a weight of ones); labels
// (`choice`) and integers keep their declared values.
bool moves(const TensorDecl& t) { return is_floating(t.dtype) && t.init.dist != "choice"; }

// The declared distribution's spread (what a shift is measured in; 0: no shift) and whether it is
// nonnegative (then a perturbation keeps it so: an input of log or sqrt stays in its domain).
struct Spread {
  double width = 1;
  bool nonnegative = false;
};

Spread spread_of(const InitSpec& in) {
  if (in.dist == "uniform") return {in.high - in.low, in.low >= 0};
  if (in.dist == "normal") return {in.std, false};
  if (in.dist == "ones") return {1, true};
  if (in.dist == "zeros") return {1, false};
  if (in.dist == "constant") return {std::max(std::fabs(in.value), 1.0), in.value >= 0};
  return {0, false};  // kaiming_uniform, fan_in_uniform: weights stay centred; their scale moves
}

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g%%", 100 * f);
  return buf;
}

}  // namespace

std::string Perturbation::describe() const {
  std::string out;
  for (const InputPerturbation& p : inputs) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s scaled %.3gx, shifted %+.3g", p.input.c_str(), p.scale, p.shift);
    out += (out.empty() ? "" : "; ") + std::string(buf);
    if (p.outliers > 0) out += ", " + percent(p.outliers) + " outliers x" + std::to_string(static_cast<int>(p.outlier_factor));
  }
  return out.empty() ? "none" : out;
}

Perturbation perturbation_for(const Task& task, uint64_t seed, bool with_outliers) {
  Perturbation p;
  std::mt19937_64 rng(splitmix(seed ^ 0x7065727475726245ULL));
  std::uniform_real_distribution<double> unit(0, 1);
  for (const TensorDecl& t : task.inputs) {
    if (!moves(t)) continue;
    InputPerturbation q;
    q.input = t.name;
    q.scale = std::exp(std::log(kMinScale) + unit(rng) * (std::log(kMaxScale) - std::log(kMinScale)));
    const Spread s = spread_of(t.init);
    const double u = unit(rng);
    q.shift = kMaxShift * s.width * (s.nonnegative ? u : 2 * u - 1);
    q.outliers = with_outliers ? kOutlierFraction : 0;
    p.inputs.push_back(q);
  }
  return p;
}

void perturb(const Task& task, const Perturbation& p, uint64_t seed, std::vector<torch::Tensor>& inputs) {
  for (size_t i = 0; i < task.inputs.size() && i < inputs.size(); ++i) {
    const TensorDecl& decl = task.inputs[i];
    auto it = std::find_if(p.inputs.begin(), p.inputs.end(), [&](const InputPerturbation& q) { return q.input == decl.name; });
    if (it == p.inputs.end()) continue;
    torch::Tensor& x = inputs[i];
    // In place on the fresh draw (a float32 input is its own float32 view): no temporaries the size
    // of an input, which may be 16 GiB (KernelBench's avg_pool2d; `x * scale + shift` held three
    // such tensors at once and ran an 80 GB H100 out of memory). The same two roundings as before.
    torch::Tensor v = x.to(torch::kFloat32);
    v.mul_(it->scale).add_(it->shift);
    const int64_t n = v.numel();
    if (it->outliers > 0 && n >= kMinElementsForOutliers) {
      const int64_t count = std::max<int64_t>(1, static_cast<int64_t>(std::llround(it->outliers * static_cast<double>(n))));
      // The places from our own generator: the same with every LibTorch and on every device.
      std::mt19937_64 rng(splitmix(seed ^ static_cast<uint64_t>(i + 1) * 0x9e3779b97f4a7c15ULL));
      std::uniform_int_distribution<int64_t> place(0, n - 1);
      std::vector<int64_t> at(static_cast<size_t>(count));
      for (int64_t& a : at) a = place(rng);
      torch::Tensor where = torch::tensor(at, torch::kInt64).to(v.device());
      torch::Tensor flat = v.view({-1});
      flat.index_put_({where}, flat.index_select(0, where) * it->outlier_factor);
    }
    if (decl.domain.min) v.clamp_min_(*decl.domain.min);
    if (decl.domain.max) v.clamp_max_(*decl.domain.max);
    x = v.to(x.scalar_type());
  }
}

}  // namespace kevo::eval
