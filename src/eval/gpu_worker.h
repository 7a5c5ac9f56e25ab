// `kevo worker`: the long-lived process that runs candidates on one GPU for the engine. It sees
// one device (the engine sets CUDA_VISIBLE_DEVICES), maps the engine's buffer arena through CUDA
// IPC, loads CUBINs, launches plans and times them. It never holds a reference output: the
// engine compares outputs in its own process.
#pragma once

namespace kevo::eval {

// Request frames (JSON):
//   {"op": "run" | "time",
//    "module": {"key": hex, "cubin_base64": ..., "lowered": {expr: mangled}},
//    "arena": {"handle_base64": 64-byte cudaIpcMemHandle, "bytes": N},
//    "plan": resolved plan (core/plan_json.h), "offsets": [arena offset per plan buffer],
//    "poison": [{"offset", "bytes", "word", "width"}]   // "time": written before every repetition
//    "timing": {"warmup", "min_reps", "max_reps", "max_seconds", "target_half_width"}}
//   {"op": "unmap"}: close the arena's mapping (the engine is about to free it, and its memory is
//   released only once no process maps it).
// Answers: {"status": "ok" | "launch_error" | "cuda_error" | "bad_request", "sticky": bool,
//           "error": one line, "timing": {...} for "time"}.
// A sticky error leaves the context unusable: the engine replaces the worker after reading it.
// Returns 0 on EOF, 1 on a broken protocol or when no GPU can be used.
int gpu_worker_main();

}  // namespace kevo::eval
