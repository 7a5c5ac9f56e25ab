// The resource report of ptxas (`--ptxas-options=-v` in the NVRTC log), parsed per kernel.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kevo::eval {

// What ptxas says one entry function (__global__ kernel) uses. Byte counts are per thread
// except shared_bytes (per block) and constant_bytes (per kernel).
struct KernelResources {
  std::string name;  // lowered (mangled) name, as ptxas prints it
  int registers = 0;
  int barriers = 0;
  int64_t shared_bytes = 0;    // static __shared__ only; dynamic shared memory is a launch parameter
  int64_t constant_bytes = 0;  // the kernel's own constant banks (parameters, compiler constants)
  int64_t stack_frame_bytes = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
};

struct PtxasReport {
  std::vector<KernelResources> kernels;  // in the order ptxas compiled them
  int64_t global_bytes = 0;              // __device__ variables
  int64_t module_constant_bytes = 0;     // __constant__ variables, shared by all kernels

  const KernelResources* find(std::string_view name) const;  // null when absent
};

// Reads the lines ptxas prints (CUDA 11 to 13 layouts); other lines of the log are ignored.
PtxasReport parse_ptxas_report(std::string_view log);

// A section of a CUBIN (ELF64): its name and size, and its bytes where the file holds them.
struct CubinSection {
  std::string name;        // ".text.kevo_gemm", ".nv.constant0.kevo_gemm", ...
  uint64_t size = 0;
  std::string_view bytes;  // into the CUBIN; empty for a section without contents (.nv.shared.*) or past its end
};
// The sections of a CUBIN in file order; empty for a buffer that is not a well-formed ELF64 file.
std::vector<CubinSection> cubin_sections(std::string_view cubin);

// ptxas of CUDA 13 no longer prints constant banks for sm_90 and newer; this takes them from
// the CUBIN's `.nv.constant<bank>[.<kernel>]` sections where the log left them at zero.
// A buffer that is not a well-formed ELF64 file is left unread.
void add_constant_banks_from_cubin(PtxasReport& report, std::string_view cubin);

}  // namespace kevo::eval
