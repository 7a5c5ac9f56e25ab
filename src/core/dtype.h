// Element types kevo knows, with their names as contracts and torch spell them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kevo {

enum class DType { Float32, Float64, Float16, BFloat16, Int64, Int32, Bool };

// "float32", "float64", "float16", "bfloat16", "int64", "int32", "bool".
std::string dtype_name(DType t);
// Accepts the names above; nullopt for anything else.
std::optional<DType> parse_dtype(const std::string& name);
// The dtype that torch.<attr> names: "float32" and its alias "float", "half", "double", "long",
// "int", "bool", ...; nullopt for anything else (torch.int8 included: kevo has no such type).
std::optional<DType> parse_torch_dtype(const std::string& attr);
int64_t dtype_size(DType t);
bool is_floating(DType t);
bool is_integral(DType t);  // false for Bool
// The CUDA C++ element type: "float", "double", "__half", "__nv_bfloat16", "int64_t", "int32_t", "bool".
const char* cuda_type_name(DType t);

}  // namespace kevo
