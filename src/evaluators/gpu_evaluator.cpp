// The GPU evaluator: the batch pipeline (evaluators/batch_pipeline.h: candidates parsed and compiled by
// the NVRTC compile pool while earlier batches are measured, each job queued for the first free GPU)
// in front of the runner's sandboxed workers; Measurements become the campaign file's records.
#include <chrono>
#include <future>
#include <map>
#include <stdexcept>

#include "eval/cuda_driver.h"
#include "eval/runner.h"
#include "evaluators/batch_pipeline.h"
#include "evaluators/evaluator.h"
#include "evaluators/occupancy.h"

namespace kevo::evaluators {

namespace {

store::MeasurementRecord to_record(const eval::Measurement& m) {
  store::MeasurementRecord r;
  r.status = eval::to_string(m.status);
  r.error = m.error;
  // A screened-out candidate keeps the fitness its short timing gave: the policy may learn from it,
  // but only "ok" makes an elite, a best or an export.
  r.fitness = m.ok() || m.status == eval::EvalStatus::Screened ? m.fitness : 0;
  r.speedup_vs_compile = m.ok() ? m.speedup_vs_compile : 0;
  r.wall_seconds = m.wall_seconds;
  r.gpu_seconds = m.gpu_seconds;
  r.gpu = m.gpu;
  for (const eval::WorkloadMeasurement& w : m.workloads) {
    store::WorkloadRecord wr;
    wr.workload = w.workload;
    wr.status = eval::to_string(w.status);
    wr.median_ms = w.candidate.median_ms;
    wr.eager_ms = w.eager.median_ms;
    wr.compile_ms = w.compile_ms;
    wr.floor_ms = w.floor_ms;
    wr.speedup = w.speedup;
    wr.max_error_ratio = w.max_error_ratio;
    r.workloads.push_back(wr);
  }
  return r;
}

class GpuEvaluator : public VariantEvaluator, private MeasuringBackend {
 public:
  explicit GpuEvaluator(const GpuEvaluatorConfig& c) : config_(c) {
    if (!eval::cuda_driver_status().available)
      throw std::runtime_error("needs a CUDA GPU: " + eval::cuda_driver_status().error);
    eval::EvalOptions eo;
    eo.trials = c.trials;
    eo.seed = c.seed;
    eo.max_seconds = c.max_seconds;
    eo.gpus = c.gpus;
    runner_ = std::make_unique<eval::Runner>(eo);
    limits_ = runner_->limits();
    pipeline_ = std::make_unique<BatchPipeline>(static_cast<MeasuringBackend&>(*this), c.compile_workers, c.cache_dir);
  }

  EvaluatorInfo info() const override {
    EvaluatorInfo i;
    i.gpu_name = runner_->device_name() + " (" + runner_->arch() + ")";
    i.description = std::to_string(runner_->gpus()) + " x " + i.gpu_name;
    i.gpus = runner_->gpus();
    i.target_arch = runner_->arch();
    return i;
  }
  EngineFigures figures() const override {
    EngineFigures f = pipeline_->figures();
    eval::EvalStats s = runner_->stats();
    f.busy_seconds = s.busy_seconds;
    f.jobs = s.jobs;
    f.phase_seconds = s.phase_seconds;
    f.screened = s.screened;
    f.promoted = s.promoted;
    f.promoted_log_ratio = s.promoted_log_ratio;
    return f;
  }

  void submit(std::vector<EvalRequest> batch) override { pipeline_->submit(std::move(batch)); }
  std::vector<store::MeasurementRecord> collect(size_t n = kAll) override { return pipeline_->collect(n); }
  bool ready(size_t n = kAll, double seconds = 0) override { return pipeline_->ready(n, seconds); }
  std::vector<store::MeasurementRecord> measure(const std::vector<EvalRequest>& batch) override {
    submit(batch);
    return collect();
  }

 private:
  // ---- MeasuringBackend ----
  std::string arch() const override { return runner_->arch(); }
  DeviceLimits limits() const override { return limits_; }

  PendingRecord start(const EvalRequest& request, std::shared_ptr<const BuiltCandidate> built) override {
    eval::EvalJob job;
    job.task = request.task;
    job.candidate = built->candidate;
    job.build = built->build;
    job.compile_ms = compile_medians(*request.task);
    store::MeasurementRecord resources;
    fill_resources(*built, *request.task, resources);
    job.admit_fitness = request.bar.admit(resources.occupancy);
    auto measuring = std::make_shared<std::future<eval::Measurement>>(runner_->submit(std::move(job)));
    PendingRecord p;
    p.wait = [measuring](double seconds) {
      return measuring->wait_for(std::chrono::duration<double>(seconds)) == std::future_status::ready;
    };
    p.get = [this, measuring, built, task = request.task] {
      store::MeasurementRecord r = to_record(measuring->get());
      fill_resources(*built, *task, r);
      return r;
    };
    return p;
  }

  store::MeasurementRecord failed(const EvalRequest& request, const std::string& status,
                                  const std::string& error) override {
    store::MeasurementRecord r;
    r.variant = request.variant;
    r.status = status;
    r.error = error;
    return r;
  }

  void fill_resources(const BuiltCandidate& p, const Task& task, store::MeasurementRecord& r) const {
    for (const PlanResources& k : plan_resources(p.candidate, task, limits_, [&](const std::string& name) {
           const eval::KernelResources* kr = p.build.kernel(name);
           KernelFootprint f;
           if (kr) {
             f.registers = kr->registers;
             f.static_shared = kr->shared_bytes;
             f.spill_bytes = kr->spill_store_bytes + kr->spill_load_bytes;
           }
           return f;
         })) {
      r.registers = k.registers;
      r.shared_bytes = static_cast<int32_t>(k.shared_bytes);
      r.spill_bytes = static_cast<int32_t>(k.spill_bytes);
      r.occupancy = k.occupancy;
      break;  // the plan's first kernel
    }
  }

  // From the pipeline's thread only.
  std::map<int, double> compile_medians(const Task& task) {
    if (config_.torch_baseline.empty()) return {};
    auto it = compile_ms_.find(task.name);
    if (it == compile_ms_.end()) it = compile_ms_.emplace(task.name, eval::torch_compile_medians(config_.torch_baseline, task.name)).first;
    return it->second;
  }

  GpuEvaluatorConfig config_;
  std::unique_ptr<eval::Runner> runner_;      // destroyed after the pipeline that feeds it
  DeviceLimits limits_;
  std::map<std::string, std::map<int, double>> compile_ms_;
  std::unique_ptr<BatchPipeline> pipeline_;
};

}  // namespace

std::unique_ptr<VariantEvaluator> make_gpu_evaluator(const GpuEvaluatorConfig& config) {
  return std::make_unique<GpuEvaluator>(config);
}

}  // namespace kevo::evaluators
