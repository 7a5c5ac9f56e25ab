// What a compiled module keeps between launches, read from its CUBIN (an ELF file): writable
// module-scope memory (`__device__` and `__managed__` variables, and the static constexpr members
// the compiler places beside them, live in the sections .nv.global and .nv.global.init) and calls
// into the device heap (malloc and free, whose blocks outlive the launch that made them). A kernel
// that keeps state there could remember an answer and copy it on a repeated input instead of
// computing it. The worker therefore writes every writable section back to its load-time image
// before every launch, and the runner refuses modules that use the device heap (status
// `stateful`), which nothing can reset. Free of CUDA headers: the ELF layout is read by hand.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kevo::eval {

// A variable in a writable section.
struct ModuleSymbol {
  std::string name;
  uint64_t offset = 0, bytes = 0;  // where it lies in its section
};

// A writable section: its bytes at load time and the symbols in it. The driver places each symbol
// on its own, so the worker finds and resets them one by one.
struct WritableSection {
  std::string name;                   // ".nv.global" or ".nv.global.init"
  uint64_t bytes = 0;
  std::string image;                  // its initial bytes; empty for .nv.global (zeros)
  std::vector<ModuleSymbol> symbols;
};

struct ModuleState {
  std::vector<WritableSection> writable;  // the non-empty ones
  uint64_t writable_bytes = 0;         // the sizes of .nv.global and .nv.global.init
  std::vector<std::string> variables;  // the symbols that live there ("cache", "counter")
  std::vector<std::string> heap_calls; // device-heap functions the module calls ("malloc", "free")

  // Whether it keeps anything between launches (before the worker's reset).
  bool stateful() const { return writable_bytes > 0 || !heap_calls.empty(); }
  // One line for a status text: "writable module memory (4100 bytes: cache, counter) and the
  // device heap (malloc, free)"; empty when not stateful.
  std::string describe() const;
};

// Throws std::invalid_argument (one line) when `cubin` is not a 64-bit little-endian ELF whose
// section and symbol tables lie inside it.
ModuleState inspect_module_state(std::string_view cubin);

}  // namespace kevo::eval
