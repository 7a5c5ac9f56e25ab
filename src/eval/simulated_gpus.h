// Simulated GPUs, to measure the engine without one (`kevo run --simulate-gpus N`,
// bench/engine_sim.sh): a `kevo sim-worker` process per simulated GPU, supervised as the GPU worker
// is (eval/worker_pool.h) and fed by the Runner's slot queue (eval/slot_queue.h). Per job the
// engine does the CPU side of the protocol the Runner does (the module's inspection and encoding;
// per workload the plan, its layout and one request per correctness trial, timed run and probe of
// state, each a round trip to the worker) and the worker holds each request for its share of the
// time the evaluation would hold its GPU. Nothing is measured: the caller knows the answer (a
// recording) and learns what the engine costs around it.
#pragma once

#include <future>
#include <memory>
#include <string>

#include "core/candidate.h"
#include "eval/runner.h"

namespace kevo::eval {

struct SimulationOptions {
  int gpus = 1;
  int trials = 2;                        // correctness trials per workload: requests the protocol sends
  std::string kevo_binary;               // the worker executable; empty: this process's own
  std::string arch = "sm_90a";           // what candidates are built for
  std::string device_name = "simulated GPU";
  DeviceLimits limits;                   // an H200's by default
};

class SimulatedGpus {
 public:
  // Starts one worker per simulated GPU. Throws std::runtime_error when gpus is not 1 to 64.
  explicit SimulatedGpus(SimulationOptions options);
  ~SimulatedGpus();
  SimulatedGpus(const SimulatedGpus&) = delete;
  SimulatedGpus& operator=(const SimulatedGpus&) = delete;

  // One job, behind every job submitted before it, holding the first free simulated GPU for
  // `hold_seconds` in all. The Measurement says what the CPU side found (ok; bad_plan where a
  // workload's plan does not resolve, which holds no GPU; worker_crashed); its wall_seconds is the
  // time the job held its slot. Thread-safe; the task must outlive the job.
  std::future<Measurement> submit(EvalJob job, double hold_seconds);

  int gpus() const;
  const std::string& arch() const;
  const std::string& device_name() const;
  DeviceLimits limits() const;
  EvalStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The `kevo sim-worker` process: serve_worker's protocol; each request (the GPU worker's JSON with
// a `hold_seconds`) is parsed, held that long and answered {"status": "ok"}. Returns 0 on EOF.
int simulated_worker_main();

}  // namespace kevo::eval
