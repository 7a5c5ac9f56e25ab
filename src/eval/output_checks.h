// The candidate's buffers in the worker's arena, as the engine checks them (eval/ only: torch and
// cuda.h): their layout between canary guards, the poison written before each run, and each
// output against the reference.
#pragma once

#include <cuda.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/measurement.h"

namespace kevo::eval {

constexpr uint64_t kGuardBytes = 64 << 10;  // canary bytes before, between and after the buffers
constexpr uint8_t kCanary = 0xA5;

inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

struct Layout {
  std::vector<uint64_t> offsets;  // per plan buffer
  uint64_t bytes = 0;
  std::vector<std::pair<uint64_t, uint64_t>> guards;  // [begin, end) of every canary region
};

// The plan's buffers at 256-byte aligned offsets, a guard region before, between and after them.
Layout layout_of(const ResolvedPlan& plan);

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

// Elementwise |out - ref| <= atol + rtol |ref| (or equal), NaN never passing; integers exact.
// A failure is Unwritten where poison is left, NotFinite for non-finite results, else WrongResult.
OutputCheck check_output(CUdeviceptr p, const ResolvedBuffer& b, const torch::Tensor& ref, const Tolerance& tol,
                         int device);

// "3 elements of 'y' outside the tolerance; worst at [0,5]: got 1, expected 2 (allowed error 0.0002)"
std::string format_violation(const Violation& v);

}  // namespace kevo::eval
