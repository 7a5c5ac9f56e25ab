// Argument checks the nn op families share (norms, matmul, convolution, pooling, losses).
#pragma once

#include <string>
#include <vector>

#include "core/ops.h"

namespace kevo::nn {

inline Value out(int id) { return Value::of_tensor(id); }
inline std::string str(int64_t v) { return std::to_string(v); }

int float_tensor(const Lowering& L, const Args& a, const std::string& name);
// A tensor operand that must share `like`'s dtype: these ops do not promote in torch.
int typed(const Lowering& L, const Args& a, const std::string& name, int like, bool optional = false);
// An optional weight or bias of an exact shape (-1 when None).
int affine(const Lowering& L, const Args& a, const std::string& name, int like, const Shape& shape);
void require_rank(const Lowering& L, const Args& a, const std::string& name, int t, int64_t rank,
                  const std::string& what);
// Type-checks a flag torch accepts but that does not change the result (e.g. cudnn_enabled).
void ignored_flag(const Args& a, const std::string& name);
// An int or a tuple of `n` ints (a 1-tuple repeats), each at least `min`.
std::vector<int64_t> int_tuple(const Args& a, const std::string& name, size_t n, int64_t min);
bool broadcasts_to(const Shape& from, const Shape& to);
// Binds the lowering of an op whose torch.nn.functional spelling checks more than its torch. one.
LowerFn spelled(Value (*lower)(Lowering&, const Args&, bool), bool is_functional);
int64_t floor_div(int64_t a, int64_t b);
// The reduction= of a loss ('mean', 'sum', 'none'; 'batchmean' where allowed); the legacy
// size_average and reduce must be None.
std::string reduction_arg(const Args& a, bool batchmean = false);

}  // namespace kevo::nn
