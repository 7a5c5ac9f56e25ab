// The arena's layout and the checks of a run's outputs: poison, tolerance, the worst element.
#include "eval/output_checks.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "eval/torch_graph.h"

namespace kevo::eval {

Layout layout_of(const ResolvedPlan& plan, int sets) {
  Layout l;
  uint64_t off = kGuardBytes;
  l.guards.push_back({0, off});
  for (int s = 0; s < sets; ++s) {
    std::vector<uint64_t> offsets;
    for (const ResolvedBuffer& b : plan.buffers) {
      offsets.push_back(off);
      uint64_t end = off + static_cast<uint64_t>(b.bytes);
      off = align_up(end, 256) + kGuardBytes;
      l.guards.push_back({end, off});
    }
    l.sets.push_back(std::move(offsets));
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

namespace {

// Whether poison is left anywhere in the buffer: elements the kernel never wrote.
bool poison_left(CUdeviceptr p, const ResolvedBuffer& b, int device) {
  const Poison poison = poison_of(b.dtype);
  const torch::ScalarType word = poison.width == 4 ? torch::kInt32 : poison.width == 2 ? torch::kInt16 : torch::kUInt8;
  const torch::Tensor bits = torch::from_blob(reinterpret_cast<void*>(p), {b.bytes / poison.width},
                                              torch::TensorOptions().dtype(word).device(torch::kCUDA, device));
  const int64_t pattern = poison.width == 4   ? static_cast<int32_t>(poison.word)
                          : poison.width == 2 ? static_cast<int16_t>(poison.word)
                                              : static_cast<int64_t>(poison.word);
  return (bits == pattern).any().item<bool>();
}

}  // namespace

OutputCheck check_output(CUdeviceptr p, const ResolvedBuffer& b, const torch::Tensor& ref, const Criterion& criterion,
                         int device) {
  OutputCheck c;
  const torch::Tensor out = view_of(p, b, device).reshape(-1), r = ref.reshape(-1);
  const ValueCheck v = check_values(out, r, criterion);
  c.max_abs = v.max_abs;
  c.max_ratio = v.max_ratio;
  if (v.bad == 0) return c;
  c.worst.output = b.name;
  c.worst.count = v.bad;
  c.worst.index = unravel(v.worst_at, b.shape);
  c.worst.got = out[v.worst_at].item<double>();
  c.worst.expected = r[v.worst_at].item<double>();
  c.worst.allowed = r.is_floating_point() ? criterion.allowed(c.worst.expected, v.atol) : 0.0;
  if (poison_left(p, b, device))
    c.status = EvalStatus::Unwritten;
  else if (criterion.scaled && passes(out, r, {criterion.tolerance, false}))
    c.status = EvalStatus::InputIndependent;
  else if (v.non_finite > 0)
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
