// SM clock and temperature from NVML, loaded at run time (libnvidia-ml.so.1 comes with the
// driver). Recorded with every measurement: a throttled GPU explains a slow median.
#pragma once

#include <string>

namespace kevo::eval {

struct GpuState {
  unsigned sm_clock_mhz = 0;   // 0 where NVML is missing
  unsigned temperature_c = 0;
};

// The state of the GPU with this PCI bus id ("0000:3B:00.0"); zeros when NVML cannot say.
GpuState gpu_state(const std::string& pci_bus_id);

// The PCI bus id of the current context's device; empty without a driver.
std::string current_pci_bus_id();

}  // namespace kevo::eval
