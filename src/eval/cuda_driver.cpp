// Run-time loading of libcuda: CPU machines have no driver, and kevo must still start there.
#include "eval/cuda_driver.h"

#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdlib>
#include <stdexcept>

#include "eval/cuda_api.h"

namespace kevo::eval {

namespace {

void* libcuda() {
  static void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return lib;
}

template <typename Fn>
bool resolve(Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(libcuda(), name));
  return fn != nullptr;
}

// Every entry point, or false. Symbols that cuda.h maps to _v2 forms are asked for by those names.
bool resolve_all(CudaApi& a) {
  return resolve(a.cuInit, "cuInit") && resolve(a.cuDeviceGet, "cuDeviceGet") &&
         resolve(a.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
         resolve(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
         resolve(a.cuCtxSetCurrent, "cuCtxSetCurrent") && resolve(a.cuCtxSynchronize, "cuCtxSynchronize") &&
         resolve(a.cuModuleLoadData, "cuModuleLoadData") && resolve(a.cuModuleUnload, "cuModuleUnload") &&
         resolve(a.cuModuleGetFunction, "cuModuleGetFunction") &&
         resolve(a.cuModuleGetGlobal, "cuModuleGetGlobal_v2") &&
         resolve(a.cuFuncSetAttribute, "cuFuncSetAttribute") && resolve(a.cuLaunchKernel, "cuLaunchKernel") &&
         resolve(a.cuGetErrorName, "cuGetErrorName") &&
         resolve(a.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled") && resolve(a.cuGetErrorString, "cuGetErrorString") &&
         resolve(a.cuMemAlloc, "cuMemAlloc_v2") && resolve(a.cuMemFree, "cuMemFree_v2") &&
         resolve(a.cuMemsetD8Async, "cuMemsetD8Async") && resolve(a.cuStreamSynchronize, "cuStreamSynchronize") &&
         resolve(a.cuEventCreate, "cuEventCreate") && resolve(a.cuEventDestroy, "cuEventDestroy_v2") &&
         resolve(a.cuEventRecord, "cuEventRecord") &&
         resolve(a.cuMemHostAlloc, "cuMemHostAlloc") && resolve(a.cuMemFreeHost, "cuMemFreeHost") &&
         resolve(a.cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2") &&
         resolve(a.cuStreamWaitValue32, "cuStreamWaitValue32_v2") && resolve(a.cuStreamCreate, "cuStreamCreate") &&
         resolve(a.cuStreamDestroy, "cuStreamDestroy_v2") && resolve(a.cuIpcGetMemHandle, "cuIpcGetMemHandle") &&
         resolve(a.cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2") &&
         resolve(a.cuIpcCloseMemHandle, "cuIpcCloseMemHandle") &&
         resolve(a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2") && resolve(a.cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
         resolve(a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2") &&
         resolve(a.cuMemsetD32Async, "cuMemsetD32Async") && resolve(a.cuMemsetD16Async, "cuMemsetD16Async") && resolve(a.cuMemGetInfo, "cuMemGetInfo_v2") &&
         resolve(a.cuCtxGetDevice, "cuCtxGetDevice") && resolve(a.cuCtxGetCurrent, "cuCtxGetCurrent") &&
         resolve(a.cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId") && resolve(a.cuDeviceGetName, "cuDeviceGetName") && resolve(a.cuDeviceGetUuid, "cuDeviceGetUuid_v2") &&
         (resolve(a.cuEventElapsedTime, "cuEventElapsedTime_v2") || resolve(a.cuEventElapsedTime, "cuEventElapsedTime"));
}

DriverStatus probe() {
  keep_nvrtc_cache_off();  // the driver reads it at initialisation
  DriverStatus s;
  if (!libcuda()) {
    const char* why = dlerror();
    s.error = std::string("no CUDA driver: cannot load libcuda.so.1 (") + (why ? why : "unknown reason") + ")";
    return s;
  }
  using VersionFn = CUresult (*)(int*);
  using CountFn = CUresult (*)(int*);
  VersionFn version = nullptr;
  CountFn count = nullptr;
  CudaApi api{};
  if (!resolve(version, "cuDriverGetVersion") || !resolve(count, "cuDeviceGetCount") || !resolve_all(api)) {
    s.error = "libcuda.so.1 lacks the driver entry points kevo needs";
    return s;
  }
  if (version(&s.version) != CUDA_SUCCESS) s.version = 0;
  CUresult r = api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    s.error = "the CUDA driver failed to initialise (CUresult " + std::to_string(static_cast<int>(r)) + ")";
    return s;
  }
  if (count(&s.device_count) != CUDA_SUCCESS || s.device_count == 0) {
    s.error = "the CUDA driver sees no GPU";
    return s;
  }
  s.available = true;
  return s;
}

}  // namespace

const DriverStatus& cuda_driver_status() {
  static const DriverStatus status = probe();
  return status;
}

void keep_nvrtc_cache_off() {
  static const bool done = ::setenv("CUDA_CACHE_DISABLE", "1", 1) == 0;
  (void)done;
}

const CudaApi* cuda_api() {
  static const CudaApi api = [] {
    CudaApi a{};
    if (cuda_driver_status().available) resolve_all(a);
    return a;
  }();
  return cuda_driver_status().available ? &api : nullptr;
}

std::string cuda_error_text(CUresult r) {
  const CudaApi* api = cuda_api();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api) {
    api->cuGetErrorName(r, &name);
    api->cuGetErrorString(r, &text);
  }
  return std::string(name ? name : "CUDA error " + std::to_string(static_cast<int>(r))) + ": " +
         (text ? text : "unknown");
}

void check_cuda(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw CudaError(std::string(what) + ": " + cuda_error_text(r), r);
}

void use_primary_context(int device) {
  const CudaApi* api = cuda_api();
  if (!api) throw std::runtime_error(cuda_driver_status().error);
  CUdevice dev;
  CUcontext ctx;
  check_cuda(api->cuDeviceGet(&dev, device), "cuDeviceGet");
  check_cuda(api->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check_cuda(api->cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

std::string device_arch(int device) {
  const CudaApi* api = cuda_api();
  if (!api) throw std::runtime_error(cuda_driver_status().error);
  CUdevice dev;
  int major = 0, minor = 0;
  check_cuda(api->cuDeviceGet(&dev, device), "cuDeviceGet");
  check_cuda(api->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
  check_cuda(api->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  // The arch-specific targets unlock wgmma, setmaxnreg and tcgen05 on the chips kevo serves.
  if ((major == 9 && minor == 0) || (major == 10 && (minor == 0 || minor == 3))) arch += "a";
  return arch;
}

void fill_pattern(CUdeviceptr at, size_t bytes, uint32_t word, int width, CUstream stream) {
  const CudaApi* api = cuda_api();
  if (!api) throw std::runtime_error(cuda_driver_status().error);
  if (width == 4 && bytes % 4 == 0)
    check_cuda(api->cuMemsetD32Async(at, word, bytes / 4, stream), "cuMemsetD32Async(pattern)");
  else if (width == 2 && bytes % 2 == 0)
    check_cuda(api->cuMemsetD16Async(at, static_cast<unsigned short>(word), bytes / 2, stream), "cuMemsetD16Async(pattern)");
  else
    check_cuda(api->cuMemsetD8Async(at, static_cast<unsigned char>(word), bytes, stream), "cuMemsetD8Async(pattern)");
}

int current_device() {
  const CudaApi* api = cuda_api();
  if (!api) throw std::runtime_error(cuda_driver_status().error);
  CUdevice dev = 0;
  check_cuda(api->cuCtxGetDevice(&dev), "cuCtxGetDevice");
  return static_cast<int>(dev);
}

bool is_sticky_error(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace kevo::eval
