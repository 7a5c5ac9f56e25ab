// The elementwise check of outputs against the reference.
#include "eval/criterion.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kevo::eval {

namespace {

constexpr int64_t kChunk = int64_t{1} << 27;  // elements per float64 temporary (1 GiB)

double chunked_mean(const torch::Tensor& t, bool absolute) {
  const torch::Tensor flat = t.reshape(-1);
  const int64_t n = flat.numel();
  double sum = 0;
  for (int64_t s = 0; s < n; s += kChunk) {
    torch::Tensor c = flat.slice(0, s, std::min(n, s + kChunk)).to(torch::kFloat64);
    sum += (absolute ? c.abs() : c).sum().item<double>();
  }
  return n ? sum / static_cast<double>(n) : std::nan("");
}

}  // namespace

double mean_of(const torch::Tensor& t) { return chunked_mean(t, false); }
double mean_abs_of(const torch::Tensor& t) { return chunked_mean(t, true); }

double Criterion::atol_for(const torch::Tensor& ref) const {
  if ((!scaled && noise_floor <= 0) || !ref.is_floating_point() || ref.numel() == 0) return tolerance.atol;
  const double magnitude = mean_abs_of(ref);
  const double atol = scaled ? std::min(tolerance.atol, tolerance.rtol * magnitude) : tolerance.atol;
  return std::max(atol, noise_floor * magnitude);
}

ValueCheck check_values(const torch::Tensor& out_any, const torch::Tensor& ref_any, const Criterion& crit) {
  ValueCheck c;
  const torch::Tensor out = out_any.reshape(-1), r = ref_any.reshape(-1);
  const int64_t n = r.numel(), chunk = kChunk;
  const bool is_float = r.is_floating_point();
  const auto compute = r.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  const double big = std::numeric_limits<double>::max();
  c.atol = crit.atol_for(r);
  double worst_score = -1;
  for (int64_t s = 0; s < n; s += chunk) {
    const int64_t e = std::min(n, s + chunk);
    torch::Tensor oc = out.slice(0, s, e), rc = r.slice(0, s, e), bad, score;
    if (is_float) {
      torch::Tensor of = oc.to(compute), rf = rc.to(compute);
      torch::Tensor diff = (of - rf).abs(), allowed = rf.abs() * crit.tolerance.rtol + c.atol;
      bad = ~((diff <= allowed) | (of == rf));
      torch::Tensor ratio = diff / allowed;
      torch::Tensor finite = torch::isfinite(ratio);
      if (finite.any().item<bool>()) {
        c.max_ratio = std::max(c.max_ratio, ratio.masked_select(finite).max().item<double>());
        c.max_abs = std::max(c.max_abs, diff.masked_select(torch::isfinite(diff)).max().item<double>());
      }
      c.non_finite += (bad & ~torch::isfinite(of) & torch::isfinite(rf)).sum().item<int64_t>();
      score = torch::nan_to_num(ratio.to(torch::kFloat64), big, big, big);
    } else {
      bad = oc.to(rc.scalar_type()) != rc;
      score = (oc.to(torch::kFloat64) - rc.to(torch::kFloat64)).abs();
      if (bad.any().item<bool>()) c.max_abs = std::max(c.max_abs, score.max().item<double>());
    }
    const int64_t nb = bad.sum().item<int64_t>();
    if (!nb) continue;
    c.bad += nb;
    torch::Tensor masked = torch::where(bad, score, torch::full_like(score, -1.0));
    const int64_t k = masked.argmax().item<int64_t>();
    const double v = masked[k].item<double>();
    if (v > worst_score) worst_score = v, c.worst_at = s + k;
  }
  return c;
}

}  // namespace kevo::eval
