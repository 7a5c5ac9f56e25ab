// Tensor-map plan arguments (TMA descriptors): the limits cuTensorMapEncodeTiled sets, shared by
// the plan reader (what the plan fixes: rank, box, swizzle) and resolution (what a workload
// fixes: sizes, strides, and that the described extent lies inside the buffer).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/candidate.h"

namespace kevo {

inline constexpr int kMaxTensorMapRank = 5;
inline constexpr int64_t kMaxTensorMapBox = 256;        // elements per dim of one copy
inline constexpr int64_t kMaxTensorMapDim = int64_t{1} << 32;
inline constexpr int64_t kMaxTensorMapStride = int64_t{1} << 40;  // bytes

// The element types TMA moves that kevo's buffers hold (not bool).
bool tensor_map_dtype_supported(DType t);

// The values for one workload: dims (innermost first) and strides (elements, of dims 1..) already
// evaluated; an empty `strides` means packed. Throws std::invalid_argument with one line saying
// what is wrong: a size out of range, a stride that is not a multiple of 16 bytes, or an extent
// reaching past the buffer's `buffer_elements` (TMA would read or write outside it).
ResolvedTensorMap resolve_tensor_map(const TensorMapArg& t, DType dtype, const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& strides, int64_t buffer_elements);

// "cuTensorMapEncodeTiled" enum values of CUtensorMapDataType for kevo's dtypes (no CUDA headers here).
int tensor_map_data_type(DType t);

}  // namespace kevo
