// What the campaign asks of an evaluator: measure a batch of variants, with a chance to prepare
// (compile) the next batch while the current one is being measured. Two implementations: the GPU
// (NVRTC compile pool plus the sandboxed runner) and replay (answers from recorded measurements).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/task.h"
#include "store/records.h"

namespace kevo::search {

struct EvalRequest {
  const Task* task = nullptr;
  int64_t variant = 0;
  std::string space;              // empty for a free-form variant
  std::vector<int64_t> genome;
  std::string source;             // the candidate text (.cu with its kevo-plan block)
  std::string source_hash;
};

class VariantEvaluator {
 public:
  virtual ~VariantEvaluator() = default;
  // Work that can overlap the measurement of the previous batch (compiling). Optional.
  virtual void prepare(const std::vector<EvalRequest>& batch) {}
  // One record per request, in order. A candidate's failure is a status, never an exception.
  virtual std::vector<store::MeasurementRecord> measure(const std::vector<EvalRequest>& batch) = 0;
  virtual std::string describe() const = 0;   // "1 x NVIDIA H200 (sm_90a)", "replay: results/spaces/relu.h5"
  virtual int gpus() const { return 0; }
  virtual double gpu_busy_seconds() const { return 0; }  // summed over GPUs, since construction
  virtual std::string gpu_name() const { return {}; }
};

// Answers from the measurements recorded in campaign or sweep files (keyed by task, space and
// genome; free-form variants by source hash). A variant never recorded is "unmeasured".
// Throws InputError when a file cannot be read.
std::unique_ptr<VariantEvaluator> make_replay_evaluator(const std::vector<std::string>& files);

struct GpuEvaluatorConfig {
  int trials = 2;                  // correctness trials per workload
  uint64_t seed = 1;
  double max_seconds = 2;          // timing repetitions per workload, at most
  std::vector<int> gpus;           // empty: all
  int compile_workers = 0;         // 0: one per core
  std::string cache_dir;           // CUBIN cache; empty: the default
  std::string torch_baseline;      // tools/torch_baseline.py report, for torch.compile figures
};

// The real thing. Throws std::runtime_error (one line) when there is no GPU.
std::unique_ptr<VariantEvaluator> make_gpu_evaluator(const GpuEvaluatorConfig& config);

}  // namespace kevo::search
