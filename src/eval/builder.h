// The Builder: candidate device source to a CUBIN with NVRTC, its resource report and an on-disk
// content-addressed cache (build_cache.h). The wire format is build_wire.h; the compile worker
// that runs untrusted source under limits, compile_pool.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/ptxas_report.h"

namespace kevo::eval {

struct BuildRequest {
  std::string source;                         // CUDA C++ device code; untrusted
  std::vector<std::string> name_expressions;  // the plan's kernels: "softmax_rows<256, 4>", "k"
  std::string arch = "sm_90a";                // a real architecture: sm_80, sm_90a, sm_100a, ...
  bool fast_math = false;
  std::vector<std::string> extra_options;     // checked against an allow-list (see builder.cpp)
  std::string cache_dir;                      // empty: default_cache_dir()
  bool use_cache = true;
  // Enforced by compile_worker_main only; build() in the caller's process cannot stop NVRTC.
  double time_limit_s = 0;                    // 0: none
  uint64_t memory_limit_bytes = 0;            // address space NVRTC may add; 0: none
};

enum class BuildStatus { Ok, CompileError, Timeout, OutOfMemory, Crashed, BadRequest };
const char* to_string(BuildStatus status);  // "ok", "compile_error", ...

struct BuildResult {
  BuildStatus status = BuildStatus::BadRequest;
  std::string error;                    // one line saying what went wrong; empty when Ok
  std::string arch;
  std::vector<std::string> options;     // exactly what NVRTC was given
  std::string nvrtc_version;            // "13.0"
  std::string cubin;                    // bytes; empty unless Ok
  std::map<std::string, std::string> lowered_names;  // name expression -> mangled kernel name
  PtxasReport resources;                // per kernel, keyed by the lowered names
  std::string log;                      // NVRTC's log, verbatim, cut to 64 KiB
  double seconds = 0;                   // this call, wall clock
  double compile_seconds = 0;           // NVRTC's time when the CUBIN was made (kept in the cache)
  bool cache_hit = false;
  std::string cache_key;                // hex SHA-256; empty when the request never got that far

  // The resources of the kernel a name expression resolved to; null when it did not.
  const KernelResources* kernel(const std::string& name_expression) const;
};

// Compiles in this process, through the cache. For trusted source and tests: a hang or crash in
// NVRTC takes the caller with it. Never throws for bad input; that is status BadRequest.
BuildResult build(const BuildRequest& request);

// The cached result of `request`, without compiling; nullopt on a miss or a bad request.
std::optional<BuildResult> find_cached(const BuildRequest& request);

// $KEVO_CACHE_DIR, else $XDG_CACHE_HOME/kevo/cubin, else ~/.cache/kevo/cubin.
std::string default_cache_dir();

// Whether untrusted source may `#include <name>`: headers of the toolkit served from memory
// (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h, cooperative_groups.h, cuda/std/*, ...; not CUB).
bool is_allowed_header(std::string_view name);

}  // namespace kevo::eval
