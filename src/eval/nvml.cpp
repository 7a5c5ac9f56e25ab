// NVML through dlopen: a few stable C entry points declared here, so no header is needed.
#include "eval/nvml.h"

#include <dlfcn.h>


#include "eval/cuda_api.h"

namespace kevo::eval {

namespace {

using NvmlDevice = void*;
struct Nvml {
  int (*init)() = nullptr;
  int (*by_pci)(const char*, NvmlDevice*) = nullptr;
  int (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  int (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  bool ok = false;
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml m;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return m;
    m.init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    m.by_pci = reinterpret_cast<int (*)(const char*, NvmlDevice*)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    m.clock = reinterpret_cast<int (*)(NvmlDevice, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    m.temperature = reinterpret_cast<int (*)(NvmlDevice, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetTemperature"));
    m.ok = m.init && m.by_pci && m.clock && m.temperature && m.init() == 0;
    return m;
  }();
  return n;
}

constexpr int kClockSm = 1;        // NVML_CLOCK_SM
constexpr int kTemperatureGpu = 0; // NVML_TEMPERATURE_GPU

}  // namespace

GpuState gpu_state(const std::string& pci_bus_id) {
  GpuState s;
  const Nvml& n = nvml();
  NvmlDevice dev = nullptr;
  if (!n.ok || pci_bus_id.empty() || n.by_pci(pci_bus_id.c_str(), &dev) != 0) return s;
  if (n.clock(dev, kClockSm, &s.sm_clock_mhz) != 0) s.sm_clock_mhz = 0;
  if (n.temperature(dev, kTemperatureGpu, &s.temperature_c) != 0) s.temperature_c = 0;
  return s;
}

std::string current_pci_bus_id() {
  const CudaApi* api = cuda_api();
  if (!api) return {};
  CUdevice dev = 0;
  char id[32] = {};
  if (api->cuCtxGetDevice(&dev) != CUDA_SUCCESS || api->cuDeviceGetPCIBusId(id, sizeof id, dev) != CUDA_SUCCESS) return {};
  return id;
}

}  // namespace kevo::eval
