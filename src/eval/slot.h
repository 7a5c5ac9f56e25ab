// One GPU's side of evaluation in the engine (eval/ only: LibTorch and cuda.h): its `kevo worker`,
// the buffer arena it shares with that worker through CUDA IPC, the oracle (references for
// declared and perturbed draws, cached), the eager baselines, the GPU's measured peaks (the speed
// of light) and each task's discrimination analysis. EvaluationRun drives one candidate through it.
#pragma once

#include <cuda.h>
#include "eval/torch_tensors.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/criterion.h"
#include "eval/discrimination.h"
#include "eval/gpu_timer.h"
#include "eval/measurement.h"
#include "eval/output_checks.h"
#include "eval/perturbation.h"
#include "eval/runner.h"

namespace kevo {
class WorkerPool;
}

namespace kevo::eval {

// The seed of draw `draw` of workload `w`'s inputs: trial t is draw t; kTimingDraw is the second
// declared draw, which the timed runs alternate with the first.
uint64_t trial_seed(uint64_t base, int workload, int draw);
constexpr int kTimingDraw = 1000;

// A reference run: inputs and outputs on the slot's GPU; never shared with a worker.
struct OracleEntry {
  std::vector<torch::Tensor> inputs, outputs;
  Perturbation perturbation;  // empty: the declared distributions
  int64_t bytes = 0;
};

// Why a job did not give a usable answer: the status it earns and its text.
struct Failure {
  EvalStatus status;
  std::string error;
};

// The least time a workload can take on this GPU.
struct SpeedOfLight {
  double bytes = 0, bandwidth = 0;  // bytes that must move; the measured copy bandwidth, bytes/s
  double flops = 0, peak = 0;       // matmul/conv FLOPs; the measured bf16 tensor-core peak, FLOP/s
  double dram_ms = 0;               // bytes / bandwidth
  double compute_ms = 0;            // flops / peak
  double ms() const { return std::max(dram_ms, compute_ms); }
};

class Slot {
 public:
  Slot(int device, const EvalOptions& opts);
  ~Slot();

  int device() const { return device_; }
  const std::string& name() const { return name_; }
  const std::string& arch() const { return arch_; }
  int replaced() const { return replaced_; }
  const EvalOptions& options() const { return opts_; }
  DeviceLimits limits() const;

  // ---- the oracle and the baselines ----
  // The reference for the draw `seed` (perturbed or declared); cached unless `cache` is false.
  std::shared_ptr<OracleEntry> oracle(const Task& task, int w, uint64_t seed, bool perturbed, bool cache = true);
  // The reference on LibTorch, timed with the candidates' protocol; once per task and workload.
  TimingFigures eager(const Task& task, int w);
  SpeedOfLight speed_of_light(const Task& task, int w);
  // What the task's check accepts that ignores the inputs (eval/discrimination.h); once per task
  // and workload, on the draws of the trials and the timed runs.
  const Discrimination& discrimination(const Task& task, int w);
  TimingConfig timing_config() const;
  double launch_allowance_s(double eager_ms) const;

  // ---- the arena ----
  void ensure_arena(uint64_t bytes);
  // After running out of GPU memory: the oracle's cached references, LibTorch's cached blocks and
  // the arena (unmapped by the worker first) go back to the driver.
  void release_memory();
  // Canaries everywhere, set i's inputs copied from `inputs_of[i]`, every output and scratch
  // buffer poisoned; the GPU idle after.
  void prepare(const ResolvedPlan& plan, const Layout& l, const std::vector<const OracleEntry*>& inputs_of);
  // The poison the worker writes before each timed run of buffer set `set`: outputs and scratch.
  nlohmann::json poison_list(const ResolvedPlan& plan, const Layout& l, int set) const;
  nlohmann::json request(const char* op, const nlohmann::json& module, const ResolvedPlan& plan, const Layout& l) const;
  // Sends one request to the worker; the answer, or the failure it amounts to.
  std::optional<Failure> ask(const nlohmann::json& request, double timeout_s, nlohmann::json& answer, Measurement& m);
  // Buffer set `set`'s outputs against `e`'s reference by `criteria`, its inputs against e's, and
  // every canary of the arena.
  std::optional<Failure> check(const ResolvedPlan& plan, const Layout& l, int set, const OracleEntry& e,
                               const std::vector<Criterion>& criteria, WorkloadMeasurement& wm, const std::string& when);

 private:
  const Graph& graph(const Task& task, int w);
  double copy_bandwidth();
  double tensor_peak_flops();
  std::string key(const Task& task, int w) const;
  void free_arena();
  void leave_worker_headroom();

  class OracleCache;
  int device_;
  const EvalOptions& opts_;
  std::unique_ptr<OracleCache> cache_;
  std::string name_, arch_;
  std::unique_ptr<WorkerPool> pool_;
  std::map<std::string, Graph> graphs_;
  std::map<std::string, TimingFigures> eager_;
  std::map<std::string, Discrimination> discrimination_;
  double bandwidth_ = 0, peak_flops_ = 0;
  CUdeviceptr arena_ = 0;
  uint64_t arena_bytes_ = 0;
  std::string arena_handle_;
  uint64_t job_id_ = 0;
  std::atomic<int> replaced_{0};  // read by the Runner's stats from other threads
};

}  // namespace kevo::eval
