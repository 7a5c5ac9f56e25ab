// Names and sizes of kevo's element types.
#include "core/dtype.h"

namespace kevo {

std::string dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& name) {
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                  DType::Int32, DType::Bool})
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

std::optional<DType> parse_torch_dtype(const std::string& attr) {
  static const std::pair<const char*, DType> aliases[] = {
      {"float", DType::Float32}, {"double", DType::Float64}, {"half", DType::Float16},
      {"long", DType::Int64},    {"int", DType::Int32}};
  for (const auto& [name, t] : aliases)
    if (attr == name) return t;
  return parse_dtype(attr);
}

int64_t dtype_size(DType t) {
  switch (t) {
    case DType::Float64:
    case DType::Int64: return 8;
    case DType::Float32:
    case DType::Int32: return 4;
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Bool: return 1;
  }
  return 0;
}

bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}

bool is_integral(DType t) { return t == DType::Int64 || t == DType::Int32; }

const char* cuda_type_name(DType t) {
  switch (t) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "__half";
    case DType::BFloat16: return "__nv_bfloat16";
    case DType::Int64: return "int64_t";
    case DType::Int32: return "int32_t";
    case DType::Bool: return "bool";
  }
  return "void";
}

}  // namespace kevo
