// Argument checks the nn op families share.
#include "core/nn_args.h"

namespace kevo::nn {

int float_tensor(const Lowering& L, const Args& a, const std::string& name) {
  int t = a.tensor(name);
  if (!is_floating(L.dtype(t))) a.fail(name, "must be a floating-point tensor, got " + dtype_name(L.dtype(t)));
  return t;
}

int typed(const Lowering& L, const Args& a, const std::string& name, int like, bool optional) {
  int t = optional ? a.opt_tensor(name) : a.tensor(name);
  if (t >= 0 && L.dtype(t) != L.dtype(like))
    a.fail(name, "must have the input's dtype " + dtype_name(L.dtype(like)) + ", got " + dtype_name(L.dtype(t)));
  return t;
}

int affine(const Lowering& L, const Args& a, const std::string& name, int like, const Shape& shape) {
  int t = typed(L, a, name, like, /*optional=*/true);
  if (t >= 0 && L.shape(t) != shape)
    a.fail(name, "must have shape " + shape_string(shape) + ", got " + shape_string(L.shape(t)));
  return t;
}

void require_rank(const Lowering& L, const Args& a, const std::string& name, int t, int64_t rank,
                  const std::string& what) {
  if (L.rank(t) != rank) a.fail(name, "must be " + what + ", got shape " + shape_string(L.shape(t)));
}

void ignored_flag(const Args& a, const std::string& name) {
  if (a.has(name)) a.boolean(name);
}

std::vector<int64_t> int_tuple(const Args& a, const std::string& name, size_t n, int64_t min) {
  std::vector<int64_t> v = a.ints(name);
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n)
    a.fail(name,
           "must be an int or a tuple of " + std::to_string(n) + " ints, got " + std::to_string(v.size()) + " values");
  for (int64_t x : v)
    if (x < min) a.fail(name, (min > 0 ? "must be positive, got " : "must be non-negative, got ") + shape_string(v));
  return v;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i];
    if (f != 1 && f != to[to.size() - 1 - i]) return false;
  }
  return true;
}

LowerFn spelled(Value (*lower)(Lowering&, const Args&, bool), bool is_functional) {
  return [lower, is_functional](Lowering& L, const Args& a) { return lower(L, a, is_functional); };
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

std::string reduction_arg(const Args& a, bool batchmean) {
  for (const char* legacy : {"size_average", "reduce"})
    if (a.has(legacy) && !a.is_none(legacy)) a.fail(legacy, "is deprecated and not supported: use reduction=");
  std::string r = a.str("reduction");
  if (r == "mean" || r == "sum" || r == "none" || (batchmean && r == "batchmean")) return r;
  std::string allowed = batchmean ? "'mean', 'sum', 'none' or 'batchmean'" : "'mean', 'sum' or 'none'";
  a.fail("reduction", "must be " + allowed + ", got '" + r + "'");
}

}  // namespace kevo::nn
