// The arena's layout and the checks of a run's outputs: poison, tolerance, the worst element.
#include "eval/output_checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "eval/torch_graph.h"

namespace kevo::eval {

Layout layout_of(const ResolvedPlan& plan) {
  Layout l;
  uint64_t off = kGuardBytes;
  l.guards.push_back({0, off});
  for (const ResolvedBuffer& b : plan.buffers) {
    l.offsets.push_back(off);
    uint64_t end = off + static_cast<uint64_t>(b.bytes);
    off = align_up(end, 256) + kGuardBytes;
    l.guards.push_back({end, off});
  }
  l.bytes = off;
  return l;
}

Poison poison_of(DType t) {
  switch (t) {
    case DType::Float32: return {0x7FC0BAD5u, 4};
    case DType::Float64: return {0x7FF8BAD5u, 4};  // 0x7FF8BAD57FF8BAD5: a NaN
    case DType::Float16: return {0x7E5Bu, 2};
    case DType::BFloat16: return {0x7FDBu, 2};
    case DType::Int32:
    case DType::Int64: return {0x7FBADBADu, 4};
    case DType::Bool: return {0xBDu, 1};
  }
  return {0xBDu, 1};
}

namespace {

torch::Tensor view_of(CUdeviceptr p, const ResolvedBuffer& b, int device) {
  return torch::from_blob(reinterpret_cast<void*>(p), b.shape,
                          torch::TensorOptions().dtype(to_torch(b.dtype)).device(torch::kCUDA, device));
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    int64_t d = std::max<int64_t>(shape[i], 1);
    idx[i] = flat % d;
    flat /= d;
  }
  return idx;
}

}  // namespace

torch::Tensor bytes_of(CUdeviceptr p, uint64_t n, int device) {
  return torch::from_blob(reinterpret_cast<void*>(p), {static_cast<int64_t>(n)},
                          torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA, device));
}

OutputCheck check_output(CUdeviceptr p, const ResolvedBuffer& b, const torch::Tensor& ref, const Tolerance& tol,
                         int device) {
  OutputCheck c;
  torch::Tensor out = view_of(p, b, device).reshape(-1), r = ref.reshape(-1);
  const int64_t n = r.numel(), chunk = int64_t{1} << 27;
  const bool is_float = r.is_floating_point();
  const auto compute = r.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  const double big = std::numeric_limits<double>::max();
  int64_t bad_total = 0, non_finite = 0, worst_at = -1;
  double worst_score = -1;
  for (int64_t s = 0; s < n; s += chunk) {
    int64_t e = std::min(n, s + chunk);
    torch::Tensor oc = out.slice(0, s, e), rc = r.slice(0, s, e), bad, score;
    if (is_float) {
      torch::Tensor of = oc.to(compute), rf = rc.to(compute);
      torch::Tensor diff = (of - rf).abs(), allowed = rf.abs() * tol.rtol + tol.atol;
      bad = ~((diff <= allowed) | (of == rf));
      torch::Tensor ratio = diff / allowed;
      torch::Tensor finite = torch::isfinite(ratio);
      if (finite.any().item<bool>()) {
        c.max_ratio = std::max(c.max_ratio, ratio.masked_select(finite).max().item<double>());
        c.max_abs = std::max(c.max_abs, diff.masked_select(torch::isfinite(diff)).max().item<double>());
      }
      non_finite += (bad & ~torch::isfinite(of) & torch::isfinite(rf)).sum().item<int64_t>();
      score = torch::nan_to_num(ratio.to(torch::kFloat64), big, big, big);
    } else {
      bad = oc != rc;
      score = (oc.to(torch::kFloat64) - rc.to(torch::kFloat64)).abs();
      if (bad.any().item<bool>()) c.max_abs = std::max(c.max_abs, score.max().item<double>());
    }
    int64_t nb = bad.sum().item<int64_t>();
    if (!nb) continue;
    bad_total += nb;
    torch::Tensor masked = torch::where(bad, score, torch::full_like(score, -1.0));
    int64_t k = masked.argmax().item<int64_t>();
    double v = masked[k].item<double>();
    if (v > worst_score) worst_score = v, worst_at = s + k;
  }
  if (!bad_total) return c;
  c.worst.output = b.name;
  c.worst.count = bad_total;
  c.worst.index = unravel(worst_at, b.shape);
  c.worst.got = out[worst_at].item<double>();
  c.worst.expected = r[worst_at].item<double>();
  c.worst.allowed = is_float ? tol.atol + tol.rtol * std::fabs(c.worst.expected) : 0.0;
  // Poison bits still there: the kernel never wrote those elements.
  Poison poison = poison_of(b.dtype);
  torch::ScalarType word = poison.width == 4 ? torch::kInt32 : poison.width == 2 ? torch::kInt16 : torch::kUInt8;
  torch::Tensor bits = torch::from_blob(reinterpret_cast<void*>(p), {b.bytes / poison.width},
                                        torch::TensorOptions().dtype(word).device(torch::kCUDA, device));
  int64_t pattern = poison.width == 4   ? static_cast<int32_t>(poison.word)
                    : poison.width == 2 ? static_cast<int16_t>(poison.word)
                                        : static_cast<int64_t>(poison.word);
  if ((bits == pattern).any().item<bool>())
    c.status = EvalStatus::Unwritten;
  else if (non_finite > 0)
    c.status = EvalStatus::NotFinite;
  else
    c.status = EvalStatus::WrongResult;
  return c;
}

std::string format_violation(const Violation& v) {
  std::ostringstream s;
  s << v.count << " element" << (v.count == 1 ? "" : "s") << " of '" << v.output << "' outside the tolerance; worst at [";
  for (size_t i = 0; i < v.index.size(); ++i) s << (i ? "," : "") << v.index[i];
  s << "]: got " << v.got << ", expected " << v.expected << " (allowed error " << v.allowed << ")";
  return s.str();
}

}  // namespace kevo::eval
