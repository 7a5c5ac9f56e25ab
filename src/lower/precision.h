// The tensor-core families' precision gates (gemm and conv, docs/templates.md): which reduced-
// precision products a task's tolerance admits at a contraction length K.
#pragma once

#include <cstdint>
#include <string>

#include "core/task.h"

namespace kevo::lower {

// Plain TF32 where
// rtol >= 2^-11 * sqrt(K) at this K, 3xTF32 accumulated on the tensor cores where
// rtol >= 3 * 2^-27 * K, 3xbf16 (also accumulated there, in k steps twice as long) where
// rtol >= 3 * 2^-28 * K and rtol >= 2^-16.
bool tf32_admitted(const Task& task, int64_t k);
bool tf32x3_admitted(const Task& task, int64_t k);
bool bf16x3_admitted(const Task& task, int64_t k);
// The same as expressions over the axes, for a shape-general export's conditions: 1 or 0.
std::string tf32_admitted_expr(const Task& task, bool fp32, const std::string& k);
std::string tf32x3_admitted_expr(const Task& task, bool fp32, const std::string& k);
std::string bf16x3_admitted_expr(const Task& task, bool fp32, const std::string& k);

}  // namespace kevo::lower
