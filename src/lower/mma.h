// What the tensor-core lowerings (gemm, conv) share: the templates' element types and the plan's
// scratch names.
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/task.h"

namespace kevo::lower::mma {

const char* element_type(DType d);  // "float", "kevo::bf16", "kevo::fp16"
int element_bytes(DType d);         // 4 or 2
bool is_float(DType d);             // fp32, bf16 or fp16
// The kernel's own names never collide with the contract's: a scratch buffer gets a name no
// contract input or output has.
std::string scratch_name(const Task& task, std::string name);

}  // namespace kevo::lower::mma
