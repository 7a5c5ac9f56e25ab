// Run-time loading of libcuda: CPU machines have no driver, and kevo must still start there.
#include "eval/cuda_driver.h"

#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>

namespace kevo::eval {

namespace {

DriverStatus probe() {
  DriverStatus s;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    s.error = std::string("no CUDA driver: cannot load libcuda.so.1 (") + (why ? why : "unknown reason") + ")";
    return s;
  }
  using InitFn = CUresult (*)(unsigned int);
  using VersionFn = CUresult (*)(int*);
  using CountFn = CUresult (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto version = reinterpret_cast<VersionFn>(dlsym(lib, "cuDriverGetVersion"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  if (!init || !version || !count) {
    s.error = "libcuda.so.1 lacks the driver entry points kevo needs";
    return s;
  }
  if (version(&s.version) != CUDA_SUCCESS) s.version = 0;
  CUresult r = init(0);
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

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace kevo::eval
