// The simulated evaluator: the GPU evaluator's pipeline in front of simulated GPUs
// (eval/simulated_gpus.h), each variant answered with its recording after holding a GPU as long as
// its evaluation would (--sim-eval-seconds, or what the recording took).
#include <chrono>
#include <future>
#include <stdexcept>

#include "core/error.h"
#include "eval/simulated_gpus.h"
#include "evaluators/batch_pipeline.h"
#include "evaluators/evaluator.h"
#include "evaluators/recorded_measurements.h"

namespace kevo::evaluators {

namespace {

class SimulatedEvaluator : public VariantEvaluator, private MeasuringBackend {
 public:
  explicit SimulatedEvaluator(const SimulationConfig& c)
      : recorded_(c.replay), eval_seconds_(c.eval_seconds), fixed_(c.eval_seconds > 0) {
    if (eval_seconds_ <= 0) eval_seconds_ = recorded_.median_wall_seconds();
    if (!(eval_seconds_ > 0))
      throw InputError(Location{}, "--sim-eval-seconds",
                       "the recordings keep no evaluation times: give how long an evaluation holds its GPU");
    eval::SimulationOptions o;
    o.gpus = c.gpus;
    o.trials = c.trials;
    gpus_ = std::make_unique<eval::SimulatedGpus>(o);
    pipeline_ = std::make_unique<BatchPipeline>(static_cast<MeasuringBackend&>(*this), c.compile_workers, c.cache_dir);
  }

  EvaluatorInfo info() const override {
    EvaluatorInfo i;
    i.description = std::to_string(gpus_->gpus()) + " x " + gpus_->device_name() + " (" + gpus_->arch() + "), " +
                    (fixed_ ? std::to_string(eval_seconds_).substr(0, 5) + " s per evaluation"
                            : "the recorded time per evaluation") +
                    ", answering from";
    for (const std::string& f : recorded_.files()) i.description += " " + f;
    i.gpus = gpus_->gpus();
    // The replay's: a search on the recordings sees the same target whether simulated or not.
    i.gpu_name = replayed_gpu_name(recorded_.gpu());
    return i;
  }
  EngineFigures figures() const override {
    EngineFigures f = pipeline_->figures();
    eval::EvalStats s = gpus_->stats();
    f.busy_seconds = s.busy_seconds;
    f.jobs = s.jobs;
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
  std::string arch() const override { return gpus_->arch(); }
  DeviceLimits limits() const override { return gpus_->limits(); }

  PendingRecord start(const EvalRequest& request, std::shared_ptr<const BuiltCandidate> built) override {
    store::MeasurementRecord answer = recorded_.answer(request);
    const double hold = fixed_ || !(answer.wall_seconds > 0) ? eval_seconds_ : answer.wall_seconds;
    eval::EvalJob job;
    job.task = request.task;
    job.candidate = built->candidate;
    job.build = built->build;
    auto holding = std::make_shared<std::future<eval::Measurement>>(gpus_->submit(std::move(job), hold));
    PendingRecord p;
    p.wait = [holding](double seconds) {
      return holding->wait_for(std::chrono::duration<double>(seconds)) == std::future_status::ready;
    };
    p.get = [holding, answer = std::move(answer)]() mutable {
      const eval::Measurement m = holding->get();
      if (m.status == eval::EvalStatus::WorkerCrashed || m.status == eval::EvalStatus::InternalError)
        throw std::runtime_error("simulated GPU: " + m.error);  // the engine broke, not the candidate
      answer.wall_seconds = m.wall_seconds;
      answer.gpu = m.gpu + ", " + answer.gpu;
      return answer;
    };
    return p;
  }

  // What the recording says (the search sees what replay would show it), without holding a GPU.
  store::MeasurementRecord failed(const EvalRequest& request, const std::string&, const std::string&) override {
    return recorded_.answer(request);
  }

  RecordedMeasurements recorded_;
  double eval_seconds_ = 0;
  bool fixed_ = false;
  std::unique_ptr<eval::SimulatedGpus> gpus_;   // destroyed after the pipeline that feeds them
  std::unique_ptr<BatchPipeline> pipeline_;
};

}  // namespace

std::unique_ptr<VariantEvaluator> make_simulated_evaluator(const SimulationConfig& config) {
  if (config.gpus < 1 || config.gpus > 64) throw InputError(Location{}, "--simulate-gpus", "give 1 to 64 GPUs");
  if (config.replay.empty())
    throw InputError(Location{}, "--replay", "simulated GPUs answer from recordings: give --replay FILE|FOLDER");
  if (config.eval_seconds < 0 || config.eval_seconds > 3600)
    throw InputError(Location{}, "--sim-eval-seconds", "give 0 (the recorded times) to 3600 seconds");
  return std::make_unique<SimulatedEvaluator>(config);
}

}  // namespace kevo::evaluators
