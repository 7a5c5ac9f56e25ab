// `kevo export --torch`: beside a task's header, a PyTorch extension (a C++ op registered with
// TORCH_LIBRARY that runs the header's launcher) and a small Python loader.
#pragma once

#include <string>

#include "core/candidate.h"
#include "core/task.h"

namespace kevo::store {

// The op's name under torch.ops.kevo: the task's name made an identifier ("softmax").
std::string torch_op_name(const Task& task);
// "softmax_torch.cu" and "softmax_torch.py": the files export_torch_* are meant to be saved under.
std::string torch_source_file_name(const Task& task);
std::string torch_loader_file_name(const Task& task);

// The extension's source: includes `header_file` (export_file_name(task), beside it), checks
// every input's dtype, rank, sizes, device and contiguity with TORCH_CHECK, allocates the outputs
// and the workspace with PyTorch's allocator and runs the launcher on the current stream. Throws
// InputError (one line) when a var axis cannot be read off an input's shape (it appears in no
// input as a dimension of its own). `general`: the header is shape-general (ExportShapes), so the
// op checks its supported_shape() rather than its validated workloads.
std::string export_torch_source(const Task& task, const Candidate& candidate, const std::string& header_file,
                                bool general = false);

// The loader: builds the extension with torch.utils.cpp_extension.load for the GPU it runs on
// and returns torch.ops.kevo.<op>.
std::string export_torch_loader(const Task& task, const Candidate& candidate);

}  // namespace kevo::store
