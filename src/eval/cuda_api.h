// The CUDA driver entry points kevo calls, resolved from libcuda at run time (eval/ only:
// this header brings in cuda.h).
#pragma once

#include <cuda.h>

#include <stdexcept>
#include <string>

namespace kevo::eval {

struct CudaApi {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr*, size_t*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
  // Memory, streams and events for timing. (cuda.h renames some of these to their _v2 forms;
  // the members follow, and cuda_driver.cpp resolves the _v2 symbols.)
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned int);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  // Timing gate, worker buffers shared with the engine (IPC), copies, streams.
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned int);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr*, void*, unsigned int);
  CUresult (*cuStreamWaitValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  CUresult (*cuStreamCreate)(CUstream*, unsigned int);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuIpcGetMemHandle)(CUipcMemHandle*, CUdeviceptr);
  CUresult (*cuIpcOpenMemHandle)(CUdeviceptr*, CUipcMemHandle, unsigned int);
  CUresult (*cuIpcCloseMemHandle)(CUdeviceptr);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*cuMemGetInfo)(size_t*, size_t*);
  CUresult (*cuCtxGetDevice)(CUdevice*);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuDeviceGetPCIBusId)(char*, int, CUdevice);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetUuid)(CUuuid*, CUdevice);
  // TMA descriptors for tensor-map plan arguments (driver 12.0 and later).
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                     const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                     CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

// The driver's functions, or null where libcuda or a GPU is missing (cuda_driver_status() says why).
const CudaApi* cuda_api();

// "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered".
std::string cuda_error_text(CUresult r);

// A failed driver call: the text names the call and the driver's error; code keeps the CUresult.
class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, CUresult code) : std::runtime_error(what), code_(code) {}
  CUresult code() const { return code_; }

 private:
  CUresult code_;
};

// Throws CudaError with the call's text and the driver's error when r is not CUDA_SUCCESS.
void check_cuda(CUresult r, const char* what);

// Makes the device's primary context (the one LibTorch and the runtime API use) current on this
// thread, retaining it for the life of the process.
void use_primary_context(int device);

// The architecture NVRTC should target for a device: "sm_90a" for compute capability 9.0,
// "sm_100a" for 10.0, "sm_103a" for 10.3; "sm_XY" for others.
std::string device_arch(int device);

// Queues `bytes` at `at` filled with `word` repeated at its width (4, 2 or 1 bytes); a size that
// is not a multiple of the width gets the word's low byte. The runner's poison, in both processes.
void fill_pattern(CUdeviceptr at, size_t bytes, uint32_t word, int width, CUstream stream);

// The device of the current context (its ordinal in this process).
int current_device();

// Errors after which a context is unusable: illegal address or instruction, misaligned
// address, launch failure, trap, hardware stack error and the like.
bool is_sticky_error(CUresult r);

}  // namespace kevo::eval
