// The outcome of evaluating one candidate: a status every later stage (search, rewards, reports)
// can rely on, the error text, and per workload the correctness and timing figures.
// Free of torch and CUDA headers.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kevo::eval {

enum class EvalStatus {
  Ok,
  CompileError,       // NVRTC or ptxas refused the source (or the compile hit its limits)
  BadPlan,            // the plan does not resolve for this workload or device
  LaunchError,        // a launch was refused without harm: out of resources, invalid argument
  CudaError,          // a sticky error (illegal address, misaligned, trap, ...): worker replaced
  Timeout,            // past the deadline: worker killed and replaced
  WorkerCrashed,      // the worker died or broke the protocol
  WrongResult,        // outputs differ from the reference beyond the tolerance
  NotFinite,          // NaN or infinity where the reference is finite
  Unwritten,          // outputs still hold the poison the runner wrote before the run
  InputModified,      // the candidate wrote to an input
  OutOfBounds,        // the candidate wrote into the guard bytes around its buffers
  UnexpectedKernels,  // CUPTI saw kernels or streams the plan did not launch
  TimedRunWrong,      // right when checked, wrong while timed: it skipped work
  HeldBackFailed,     // a > 10x speedup that did not hold on the held-back workload
  InternalError,      // kevo's own failure (oracle, out of memory on the engine side); not the candidate's
  // Reward integrity (docs/evaluation.md): each names a way to earn speed without doing the work.
  Stateful,           // keeps state between launches: the device heap, or faster when its memory is left alone
  InputIndependent,   // outputs pass the contract's tolerance only because it accepts outputs that ignore the inputs
  DistributionFitted, // right on the declared distributions, wrong on perturbed inputs
  FasterThanLight,    // faster than this GPU can move the task's bytes or do its FLOPs
  Unverifiable,       // the task's check cannot tell outputs that ignore the inputs from real ones
  // Screening (docs/evaluation.md#screening): correct in its one trial, but its short timing could
  // not admit it to the archive, so it was not verified fully. Never an elite, a best or an export.
  Screened,
};
const char* to_string(EvalStatus s);  // "ok", "wrong_result", ...
bool parse_status(const std::string& name, EvalStatus& out);

struct Violation {  // the worst element outside the tolerance
  std::string output;
  std::vector<int64_t> index;
  double got = 0, expected = 0, allowed = 0;
  int64_t count = 0;  // elements outside the tolerance in that output
};

struct TimingFigures {
  double median_ms = 0, p20_ms = 0, p80_ms = 0, half_width_ms = 0;
  int n = 0;
  bool converged = false;
  double event_median_ms = 0;
  int kernels = 0;
  unsigned sm_clock_mhz = 0, temperature_c = 0;
};

struct WorkloadMeasurement {
  int workload = 0;             // index into the task's workloads
  std::string axes;             // "B=16 N=4096"
  bool timed = true;            // false: checked for correctness only (no times, no speedup)
  EvalStatus status = EvalStatus::Ok;
  int trials = 0;               // correctness trials that passed
  double max_abs_error = 0;     // over all trials and outputs
  double max_error_ratio = 0;   // max |out - ref| / (atol + rtol |ref|): under 1 passes
  Violation worst;              // set when the status is a correctness failure
  TimingFigures candidate, eager;
  double compile_ms = 0;        // torch.compile's median from tools/torch_baseline.py; 0 when unknown
  double speedup = 0;           // eager / candidate
  // The speed of light (0: not measured): the larger of the DRAM floor (bytes moved over the
  // measured copy bandwidth) and the compute floor (matmul/conv FLOPs over the measured bf16
  // tensor-core peak).
  double floor_ms = 0;
  double dram_floor_ms = 0, compute_floor_ms = 0;
};

struct Measurement {
  std::string task, candidate;
  EvalStatus status = EvalStatus::InternalError;
  std::string error;            // one line; empty when ok
  std::string gpu;              // "NVIDIA H200 (sm_90a)" and the worker that ran it
  std::string arch;
  std::vector<WorkloadMeasurement> workloads;
  double fitness = 0;           // Σ w·eager / Σ w·candidate over the timed workloads (core/fitness.h)
  double speedup = 0;           // geometric mean over the timed workloads, eager / candidate
  double speedup_vs_compile = 0;  // geometric mean where every timed workload has a torch.compile figure; 0 otherwise
  bool held_back_checked = false;
  double wall_seconds = 0;      // the whole evaluation, oracle included
  double gpu_seconds = 0;       // the candidate's own timed GPU time
  bool worker_replaced = false;
  // Screening: the fitness its short timing gave (0: not screened) and the bar it was held to.
  double screen_fitness = 0, admit_fitness = 0;
  // Where wall_seconds went: "screen", "trials", "timed_runs", "references", ... (eval/phase_clock.h).
  std::map<std::string, double> phase_seconds;

  bool ok() const { return status == EvalStatus::Ok; }
};

nlohmann::json to_json(const Measurement& m);

}  // namespace kevo::eval
