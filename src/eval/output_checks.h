// The candidate's buffers in the worker's arena, as the engine checks them (eval/ only: torch and
// cuda.h): their layout between canary guards, the poison written before each run, and each
// output against the reference.
#pragma once

#include <cuda.h>
#include "eval/torch_tensors.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/criterion.h"
#include "eval/measurement.h"

namespace kevo::eval {

constexpr uint64_t kGuardBytes = 64 << 10;  // canary bytes before, between and after the buffers
constexpr uint8_t kCanary = 0xA5;

inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

struct Layout {
  std::vector<std::vector<uint64_t>> sets;  // per buffer set, per plan buffer: its offset
  uint64_t bytes = 0;
  std::vector<std::pair<uint64_t, uint64_t>> guards;  // [begin, end) of every canary region
  const std::vector<uint64_t>& offsets(int set = 0) const { return sets[static_cast<size_t>(set)]; }
};

// `sets` copies of the plan's buffers (timed runs alternate between them), each buffer at a
// 256-byte aligned offset, a guard region before, between and after them.
Layout layout_of(const ResolvedPlan& plan, int sets = 1);

// A NaN (or, for integers, an implausible value) that a computation does not produce by
// accident, repeated over the buffer: elements still holding it were never written.
struct Poison {
  uint32_t word;
  int width;
};
Poison poison_of(DType t);

// `n` bytes at `p` on `device`, as a torch tensor (no copy).
torch::Tensor bytes_of(CUdeviceptr p, uint64_t n, int device);

struct OutputCheck {
  EvalStatus status = EvalStatus::Ok;
  Violation worst;
  double max_abs = 0, max_ratio = 0;
};

// The output at `p` against the reference by `criterion` (eval/criterion.h). A failure is
// Unwritten where poison is left, InputIndependent where only a scaled criterion rejects it (the
// contract's tolerance accepts outputs that ignore the inputs), NotFinite for non-finite
// results, else WrongResult.
OutputCheck check_output(CUdeviceptr p, const ResolvedBuffer& b, const torch::Tensor& ref, const Criterion& criterion,
                         int device);

// "3 elements of 'y' outside the tolerance; worst at [0,5]: got 1, expected 2 (allowed error 0.0002)"
std::string format_violation(const Violation& v);

}  // namespace kevo::eval
