// Tensor-map plan arguments: the per-workload checks that keep a TMA descriptor inside its buffer.
#include "core/tensor_map.h"

#include <string>

namespace kevo {

bool tensor_map_dtype_supported(DType t) { return t != DType::Bool; }

int tensor_map_data_type(DType t) {
  // CUtensorMapDataType: UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4, INT64 5, FLOAT16 6,
  // FLOAT32 7, FLOAT64 8, BFLOAT16 9 (cuda.h, CUDA 12.0 and later).
  switch (t) {
    case DType::Float32: return 7;
    case DType::Float64: return 8;
    case DType::Float16: return 6;
    case DType::BFloat16: return 9;
    case DType::Int64: return 5;
    case DType::Int32: return 3;
    case DType::Bool: break;
  }
  throw std::invalid_argument("a tensor map cannot hold bool elements");
}

ResolvedTensorMap resolve_tensor_map(const TensorMapArg& t, DType dtype, const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& strides, int64_t buffer_elements) {
  ResolvedTensorMap r;
  r.dtype = dtype;
  r.rank = static_cast<int>(dims.size());
  r.swizzle = t.swizzle;
  const int64_t elem = dtype_size(dtype);
  // The farthest element the map can address, as an index into the buffer; 128 bits so that huge
  // sizes cannot wrap into a plausible extent.
  __int128 last = 0, packed = 1;
  for (int i = 0; i < r.rank; ++i) {
    const int64_t n = dims[static_cast<size_t>(i)];
    if (n < 1 || n > kMaxTensorMapDim)
      throw std::invalid_argument("dims[" + std::to_string(i) + "] = " + std::to_string(n) + ": a tensor map's sizes are 1 to 2^32");
    r.dims[static_cast<size_t>(i)] = static_cast<uint64_t>(n);
    r.box[static_cast<size_t>(i)] = static_cast<uint32_t>(t.box[static_cast<size_t>(i)]);
    __int128 stride = packed;
    if (i > 0) {
      if (!strides.empty()) stride = strides[static_cast<size_t>(i - 1)];
      const __int128 bytes = stride * elem;
      if (stride < 1 || bytes >= kMaxTensorMapStride || bytes % 16 != 0)
        throw std::invalid_argument("the stride of dims[" + std::to_string(i) + "] is " + std::to_string(int64_t(stride)) +
                                    " elements (" + std::to_string(int64_t(bytes)) +
                                    " bytes): TMA needs a positive multiple of 16 bytes below 2^40");
      r.stride_bytes[static_cast<size_t>(i - 1)] = static_cast<uint64_t>(bytes);
    }
    last += (n - 1) * stride;
    packed *= n;
  }
  if (last >= buffer_elements)
    throw std::invalid_argument("the tensor map reaches element " + std::to_string(int64_t(last)) + " of '" + t.buffer +
                                "', which holds " + std::to_string(buffer_elements));
  return r;
}

}  // namespace kevo
