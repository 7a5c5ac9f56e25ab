// What the tensor-core lowerings (gemm, conv) share (mma_lowering.h).
#include "lower/mma.h"

namespace kevo::lower::mma {

const char* element_type(DType d) {
  return d == DType::BFloat16 ? "kevo::bf16" : d == DType::Float16 ? "kevo::fp16" : "float";
}

int element_bytes(DType d) { return d == DType::Float32 ? 4 : 2; }

bool is_float(DType d) { return d == DType::Float32 || d == DType::BFloat16 || d == DType::Float16; }

std::string scratch_name(const Task& task, std::string name) {
  auto taken = [&](const std::string& n) {
    for (const auto& t : task.inputs)
      if (t.name == n) return true;
    for (const auto& t : task.outputs)
      if (t.name == n) return true;
    return false;
  };
  while (taken(name)) name += "_";
  return name;
}

}  // namespace kevo::lower::mma
