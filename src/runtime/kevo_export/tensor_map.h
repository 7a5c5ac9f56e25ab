// The export runtime's tensor maps (TMA descriptors), header-only on the CUDA runtime: the driver's
// cuTensorMapEncodeTiled reached through cudaGetDriverEntryPoint(ByVersion), so that a header whose
// plan passes tensor maps needs no -lcuda. kevo export copies the block below (from its
// "// ---- kevo export runtime" line) into every header whose plan has a tensor-map argument; the
// includes above it make this file compile on its own.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// ---- kevo export runtime: tensor-map kernel arguments (TMA descriptors, no -lcuda)
#ifndef KEVO_EXPORT_TENSOR_MAP_V1
#define KEVO_EXPORT_TENSOR_MAP_V1
namespace kevo_export {
inline namespace tensor_map_v1 {

// A kernel's `const __grid_constant__` tensor-map parameter: 128 bytes, 64-byte aligned (CUtensorMap).
using TensorMap = CUtensorMap;

namespace detail {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's cuTensorMapEncodeTiled (its CUDA 12.0 form), looked up once; null where the driver lacks it.
inline EncodeTiled encode_tiled() {
  static const EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found);
#else
    const cudaError_t err = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &found);
#endif
    return err == cudaSuccess && found == cudaDriverEntryPointSuccess ? reinterpret_cast<EncodeTiled>(p) : nullptr;
  }();
  return fn;
}

}  // namespace detail

// The descriptor of a tiled view of `base` as kevo's evaluation builds it: `rank` dims (innermost
// first, elements), the byte strides of dims 1.., the box one copy moves, a swizzle of 0, 32, 64 or
// 128 bytes; zero fill past the edges, no interleave, 256-byte L2 promotion. `data_type` is a
// CUtensorMapDataType. cudaErrorInvalidValue where the driver refuses the values or lacks the call.
inline cudaError_t encode_tensor_map(TensorMap* out, int data_type, unsigned rank, const void* base,
                                     const uint64_t* dims, const uint64_t* stride_bytes, const uint32_t* box,
                                     int swizzle_bytes) {
  const detail::EncodeTiled encode = detail::encode_tiled();
  if (!encode || rank < 1 || rank > 5) return cudaErrorInvalidValue;
  const CUtensorMapSwizzle swizzle = swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                     : swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                           : CU_TENSOR_MAP_SWIZZLE_NONE;
  cuuint64_t d[5], s[4];
  cuuint32_t b[5], e[5];
  for (unsigned i = 0; i < rank; ++i) {
    d[i] = dims[i];
    b[i] = box[i];
    e[i] = 1;
    if (i > 0) s[i - 1] = stride_bytes[i - 1];
  }
  const CUresult r = encode(out, static_cast<CUtensorMapDataType>(data_type), rank, const_cast<void*>(base), d, s, b, e,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

}  // namespace tensor_map_v1
}  // namespace kevo_export
#endif  // KEVO_EXPORT_TENSOR_MAP_V1
