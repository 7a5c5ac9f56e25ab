// The CUDA driver API, loaded at run time so kevo builds, links and tests on machines without it.
#pragma once

#include <string>

namespace kevo::eval {

struct DriverStatus {
  bool available = false;
  std::string error;   // why not, in one line ("libcuda.so.1 not found: ...")
  int version = 0;     // e.g. 13000 for CUDA 13.0
  int device_count = 0;
};

// Loads libcuda.so.1 once and initialises it; never throws.
const DriverStatus& cuda_driver_status();

// NVRTC 12.9+ keeps its own cache in the driver's compute cache when a driver is present; a hit
// skips ptxas, so the log loses the resource report kevo reads. kevo's own cache serves the
// purpose, so both the Builder and the driver probe turn it off (CUDA_CACHE_DISABLE=1) before
// the driver or NVRTC first reads the environment.
void keep_nvrtc_cache_off();

// NVRTC's version as "major.minor" (NVRTC needs no driver).
std::string nvrtc_version();

}  // namespace kevo::eval
