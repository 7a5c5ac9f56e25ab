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

// NVRTC's version as "major.minor" (NVRTC needs no driver).
std::string nvrtc_version();

}  // namespace kevo::eval
