// A loaded module's writable memory in the GPU worker (eval/ only: cuda.h): every variable the
// CUBIN places there (eval/module_state.h), found where the driver put it and written back to its
// load-time value before every launch, so that no launch sees what an earlier one left there.
#pragma once

#include <cuda.h>

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "eval/module_state.h"

namespace kevo::eval {

class ModuleMemory {
 public:
  // Throws std::runtime_error (one line) when a symbol does not resolve in `module` or is not the
  // size the CUBIN says, or when a section has bytes that no symbol covers (where a kernel could
  // keep state past the end of a variable).
  ModuleMemory(CUmodule module, const std::vector<WritableSection>& sections);

  // Queues the writes on `stream` (memsets for zeroed sections, copies for initialised ones).
  void reset(CUstream stream) const;
  bool empty() const { return regions_.empty(); }

 private:
  struct Region {
    CUdeviceptr at = 0;
    uint64_t bytes = 0;
    std::string image;  // empty: zeros
  };
  std::vector<Region> regions_;
};

// The sections as the engine sends them to the worker, and back.
nlohmann::json writable_to_json(const std::vector<WritableSection>& sections);
std::vector<WritableSection> writable_from_json(const nlohmann::json& j);

}  // namespace kevo::eval
