// The pipeline behind the GPU and simulated evaluators. A thread of its own takes the submitted
// batches in order: each batch's distinct candidate texts are parsed for the GPUs' limits and built
// by the compile pool (cache hits without a worker), and each job goes to the GPUs as soon as its
// build is there, behind every job of the batches before it, so compiling overlaps measuring and no
// GPU waits for a batch's last compile or its slowest job. collect() gives the oldest batch's
// records in request order, a part at a time if asked (each record as soon as it and those before
// it are measured, while the batch's later candidates still compile): what the search sees does
// not depend on which job finished first.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "eval/builder.h"
#include "evaluators/evaluator.h"

namespace kevo::evaluators {

// A candidate ready for a GPU: parsed for the GPUs' limits and built for their architecture.
struct BuiltCandidate {
  Candidate candidate;
  eval::BuildResult build;
};

// A measurement under way: wait(seconds) waits at most that long and says whether it is done;
// get() waits for it and gives its record (once).
struct PendingRecord {
  std::function<bool(double seconds)> wait;
  std::function<store::MeasurementRecord()> get;
};

// What measures built candidates: the GPUs (the Runner) or simulated ones.
class MeasuringBackend {
 public:
  virtual ~MeasuringBackend() = default;
  virtual std::string arch() const = 0;      // what candidates are built for
  virtual DeviceLimits limits() const = 0;   // what their plans are checked against
  // A built candidate onto the GPUs, behind every job handed over before it. Called from the
  // pipeline's thread; the record may be waited for from another.
  virtual PendingRecord start(const EvalRequest& request, std::shared_ptr<const BuiltCandidate> built) = 0;
  // The record of a candidate that never reached a GPU: status "bad_plan" (its text) or
  // "compile_error" (its build), with the error's line.
  virtual store::MeasurementRecord failed(const EvalRequest& request, const std::string& status,
                                          const std::string& error) = 0;
};

class BatchPipeline {
 public:
  // `backend` must outlive the pipeline.
  BatchPipeline(MeasuringBackend& backend, int compile_workers, std::string cache_dir);
  // Finishes the batch being prepared (its jobs are the backend's then), drops the others.
  ~BatchPipeline();
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  void submit(std::vector<EvalRequest> batch);
  // The oldest batch's next n records (VariantEvaluator::collect). Throws what preparing or
  // measuring the batch threw (a broken engine, never a candidate's fault); the batch is then taken.
  std::vector<store::MeasurementRecord> collect(size_t n = VariantEvaluator::kAll);
  // Whether those records are measured, waiting at most `seconds` (VariantEvaluator::ready).
  bool ready(size_t n, double seconds) const;
  bool idle() const;  // nothing submitted and not collected

  // Its counters (EngineFigures without the GPUs' part).
  EngineFigures figures() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kevo::evaluators
