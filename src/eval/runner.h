// The Runner: the engine's side of evaluation. It owns one `kevo worker` per GPU, the oracle
// (inputs and reference outputs on LibTorch CUDA, in this process only), the eager baseline, and
// the checks that make a Measurement trustworthy. This header stays free of torch and CUDA types.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/builder.h"
#include "eval/measurement.h"

namespace kevo::eval {

struct EvalOptions {
  int trials = 3;                 // correctness trials per workload, each on fresh inputs
  uint64_t seed = 1;              // the trials' input seeds derive from it
  std::vector<int> workloads;     // the workloads measured; empty: all but the held-back one
  int held_back = -1;             // kept out of fitness for re-verification; -1: the largest, with a fresh seed
  double reverify_above = 10;     // a speedup over eager above this is re-verified before it counts
  // Timing (candidates and the eager baseline alike).
  // The timer stops once the median's 95% interval is within target_half_width of it, after
  // min_reps: with five runs that interval is their range, so five that agree within 2% suffice.
  int warmup = 3, min_reps = 5, max_reps = 300;
  double max_seconds = 5;         // of repetitions per workload
  double target_half_width = 0.01;
  // Deadlines: a launch may take `slowdown_limit` times the eager time (at least 0.5 s), plus
  // `deadline_floor_s` per job for loading; never more than `deadline_cap_s`.
  double slowdown_limit = 100, deadline_floor_s = 10, deadline_cap_s = 600;
  std::vector<int> gpus;          // device ordinals; empty: every GPU
  std::string kevo_binary;        // the worker executable; empty: this process's own
  double oracle_cache_fraction = 0.25;  // of each GPU's memory, for cached inputs and references
};

struct EvalJob {
  const Task* task = nullptr;
  Candidate candidate;
  BuildResult build;                 // for the GPUs' architecture
  std::map<int, double> compile_ms;  // torch.compile's median per workload index, where known
  // Screening (core/screening.h): above 0, the fitness this candidate must reach to enter the
  // archive. It is measured cheaply first and verified fully only where that could reach it.
  double admit_fitness = 0;
};

// Throughput figures since the Runner started.
struct EvalStats {
  int evaluations = 0;
  double wall_seconds = 0;           // inside evaluate()
  double candidate_gpu_seconds = 0;  // the candidates' timed kernel time
  int workers_replaced = 0;
  std::vector<double> busy_seconds;  // per GPU: time its slot spent evaluating jobs (oracle, trials, timing)
  std::vector<long> jobs;            // per GPU: jobs it took (the running one included)
  std::map<std::string, double> phase_seconds;  // the evaluations' wall time by phase, summed
  int screened = 0;                  // evaluations screened out (not verified fully)
  // Of the screened candidates verified fully and ok: how many, and the sum of log(full fitness /
  // the screen's estimate), which says how far the screen's short timing is from the protocol's.
  int promoted = 0;
  double promoted_log_ratio = 0;
};

class Runner {
 public:
  // Starts one worker per GPU. Throws std::runtime_error (one line) when there is no GPU.
  explicit Runner(EvalOptions options);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Every job gets a Measurement, in order; jobs run in parallel across GPUs, one timed job per
  // GPU at a time. A candidate's failure never throws; only a broken engine does.
  std::vector<Measurement> evaluate(const std::vector<EvalJob>& jobs);
  // One job behind every job submitted before it (eval/slot_queue.h): the first GPU free takes it.
  // The future throws only for a broken engine. Thread-safe; the task must outlive the job.
  std::future<Measurement> submit(EvalJob job);

  int gpus() const;
  std::string device_name() const;   // "NVIDIA H200"
  std::string arch() const;          // the architecture candidates must be built for
  EvalStats stats() const;           // thread-safe
  DeviceLimits limits() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// torch.compile medians from tools/torch_baseline.py's JSON: workload index -> ms for the task
// of this name. Throws InputError when the file is not such a report.
std::map<int, double> torch_compile_medians(const std::string& report_path, const std::string& task_name);

}  // namespace kevo::eval
