// The export runtime as exported headers carry it: the blocks of src/runtime/kevo_export/,
// embedded at build time (cmake/embed_runtime.cmake), where they are headers compiled and tested.
#pragma once

#include <string>

namespace kevo::store {

// The block of "runtime.h", "cublaslt.h" or "cudnn.h" from its "// ---- kevo export runtime" line
// to its closing #endif, with the planner it includes inlined. Throws std::logic_error for
// another name.
const std::string& export_runtime_block(const std::string& file);

}  // namespace kevo::store
