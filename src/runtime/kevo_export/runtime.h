// The export runtime's base, header-only on the CUDA runtime: Python's // and % for plan
// expressions, scratch alignment, the SM count and kernel launches. kevo export copies the block
// below (from its "// ---- kevo export runtime" line) into every header it writes; the includes
// above it make this file a header that compiles on its own.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// ---- kevo export runtime: helpers shared by every header kevo exports (defined once per translation unit)
#ifndef KEVO_EXPORT_RUNTIME_V1
#define KEVO_EXPORT_RUNTIME_V1
namespace kevo_export {
inline namespace v1 {

// Python's floor division and modulo: what `//` and `%` mean in kevo's plan expressions.
constexpr int64_t floordiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0 && ((a % b < 0) != (b < 0))) ? 1 : 0);
}
constexpr int64_t mod(int64_t a, int64_t b) {
  return a % b + ((a % b != 0 && ((a % b < 0) != (b < 0))) ? b : 0);
}

// Scratch buffers start at multiples of 256 bytes of the caller's workspace.
constexpr size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// The workspace cuBLASLt and cuDNN steps share, as in kevo's evaluation (algorithms needing more
// are passed over).
constexpr size_t kLibraryWorkspaceBytes = size_t{32} << 20;

// The current device's SM count: `num_sms` in plan expressions.
inline cudaError_t num_sms(int64_t* out) {
  int device = 0, count = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
  *out = count;
  return err;
}

// One kernel launch. The arguments are packed by the plan's declared types (as kevo's evaluation
// packs them for cuLaunchKernel), not converted to the kernel's parameter types; kernels asking for
// more than 48 KiB of dynamic shared memory are opted in first. __cluster_dims__ in the kernel's
// source sets its thread-block cluster shape.
inline cudaError_t launch(const void* kernel, dim3 grid, dim3 block, size_t shared_bytes, void** args,
                          cudaStream_t stream) {
  if (shared_bytes > 48 * 1024) {
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(shared_bytes));
    if (err != cudaSuccess) return err;
  }
  return cudaLaunchKernel(kernel, grid, block, args, shared_bytes, stream);
}

}  // namespace v1
}  // namespace kevo_export
#endif  // KEVO_EXPORT_RUNTIME_V1
