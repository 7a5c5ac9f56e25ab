// The candidate's source made fit for an exported header (store/ only): the edits that let it sit
// in namespaces beside other exported headers, and what they found.
#pragma once

#include <string>
#include <vector>

#include "core/candidate.h"

namespace kevo::store::exporter {

struct PreparedSource {
  std::string text;                 // the source with the edits below applied
  std::vector<std::string> macros;  // names it #defines or #undefs, to save and restore
  int includes = 0;                 // #include lines the namespaces were closed around
  int extern_c = 0;                 // `extern "C"` specifiers and blocks dropped
  bool clusters = false;            // uses __cluster_dims__
};

// Edits the source so that it can sit inside `open` ... `close` (the namespaces) in a header that
// a program includes next to other exported headers:
// - `extern "C"` is dropped from definitions, from __global__ declarations and around blocks: C
//   linkage ignores namespaces, so two headers with a kernel of the same name would clash.
//   (Kernels need no C linkage here: the launcher takes their address by name.) It stays on
//   other declarations without a body, which name functions defined elsewhere.
// - an #include closes the namespaces before it and reopens them after it, so that a toolkit
//   header (cuda_fp16.h) is declared at global scope, under whatever #if surrounds it.
// Throws InputError for an #include inside a block and for unbalanced braces after extern "C" {.
PreparedSource prepare_source(const Candidate& c, const std::string& open, const std::string& close);

// A prefix for the kernel address functions that the source does not use anywhere (outside its
// comments and literals): "kevo_export_kernel_", else with "x_" added until free.
std::string kernel_function_prefix(const Candidate& c);

}  // namespace kevo::store::exporter
