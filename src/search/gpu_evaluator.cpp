// The GPU evaluator: candidates compiled by the NVRTC compile pool (overlapping the measurement of
// the previous batch), then measured by the runner's sandboxed workers; Measurements become the
// campaign file's records.
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>

#include "core/candidate.h"
#include "core/error.h"
#include "eval/compile_pool.h"
#include "eval/cuda_driver.h"
#include "eval/runner.h"
#include "search/evaluator.h"
#include "search/occupancy.h"

namespace kevo::search {

namespace {

struct Prepared {
  bool parsed = false;
  std::string error;        // parse or build failure, one line
  std::string status;       // "bad_plan" / "compile_error" when it failed before the GPU
  Candidate candidate;
  eval::BuildResult build;
};

store::MeasurementRecord to_record(const eval::Measurement& m) {
  store::MeasurementRecord r;
  r.status = eval::to_string(m.status);
  r.error = m.error;
  r.fitness = m.ok() ? m.speedup : 0;
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

class GpuEvaluator : public VariantEvaluator {
 public:
  explicit GpuEvaluator(const GpuEvaluatorConfig& c) : config_(c) {
    if (!eval::cuda_driver_status().available)
      throw std::runtime_error("needs a CUDA GPU: " + eval::cuda_driver_status().error);
    eval::EvalOptions eo;
    eo.trials = c.trials;
    eo.seed = c.seed;
    eo.max_seconds = c.max_seconds;
    eo.gpus = c.gpus;
    evaluator_ = std::make_unique<eval::Runner>(eo);
    limits_ = evaluator_->limits();
    eval::CompilePoolConfig pc;
    pc.workers = c.compile_workers;
    compiler_ = std::make_unique<eval::CompilePool>(pc);
  }

  std::string describe() const override {
    return std::to_string(evaluator_->gpus()) + " x " + evaluator_->device_name() + " (" + evaluator_->arch() + ")";
  }
  int gpus() const override { return evaluator_->gpus(); }
  std::string gpu_name() const override { return evaluator_->device_name() + " (" + evaluator_->arch() + ")"; }
  double gpu_busy_seconds() const override {
    std::lock_guard<std::mutex> lock(stats_mu_);
    double s = 0;
    for (double b : evaluator_->stats().busy_seconds) s += b;
    return s;
  }

  void prepare(const std::vector<EvalRequest>& batch) override {
    std::vector<const EvalRequest*> todo;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const EvalRequest& r : batch)
        if (!prepared_.count(r.source_hash) &&
            std::none_of(todo.begin(), todo.end(), [&](auto* t) { return t->source_hash == r.source_hash; }))
          todo.push_back(&r);
    }
    std::vector<Prepared> done(todo.size());
    std::vector<eval::BuildRequest> builds;
    std::vector<size_t> build_of;
    for (size_t i = 0; i < todo.size(); ++i) {
      try {
        done[i].candidate = parse_candidate(todo[i]->source, "variant-" + std::to_string(todo[i]->variant) + ".cu",
                                            *todo[i]->task, limits_);
        done[i].parsed = true;
      } catch (const InputError& e) {
        done[i].status = "bad_plan";
        done[i].error = e.what();
        continue;
      }
      eval::BuildRequest req;
      req.source = done[i].candidate.source;
      req.name_expressions = done[i].candidate.kernel_names();
      req.arch = evaluator_->arch();
      req.cache_dir = config_.cache_dir;
      builds.push_back(std::move(req));
      build_of.push_back(i);
    }
    std::vector<eval::BuildResult> results;
    if (!builds.empty()) results = compiler_->build_all(builds);
    for (size_t j = 0; j < results.size(); ++j) {
      Prepared& p = done[build_of[j]];
      p.build = std::move(results[j]);
      if (p.build.status != eval::BuildStatus::Ok) {
        p.status = "compile_error";
        p.error = p.build.error;
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < todo.size(); ++i) prepared_.emplace(todo[i]->source_hash, std::move(done[i]));
  }

  std::vector<store::MeasurementRecord> measure(const std::vector<EvalRequest>& batch) override {
    prepare(batch);  // whatever was not prepared ahead
    std::vector<store::MeasurementRecord> out(batch.size());
    std::vector<eval::EvalJob> jobs;
    std::vector<size_t> job_of;
    std::vector<const Prepared*> prep(batch.size());
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < batch.size(); ++i) prep[i] = &prepared_.at(batch[i].source_hash);
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      const Prepared& p = *prep[i];
      out[i].variant = batch[i].variant;
      if (!p.status.empty()) {
        out[i].status = p.status;
        out[i].error = p.error;
        continue;
      }
      eval::EvalJob job;
      job.task = batch[i].task;
      job.candidate = p.candidate;
      job.build = p.build;
      job.compile_ms = compile_medians(*batch[i].task);
      jobs.push_back(std::move(job));
      job_of.push_back(i);
    }
    std::vector<eval::Measurement> ms;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ms = evaluator_->evaluate(jobs);
    }
    for (size_t j = 0; j < ms.size(); ++j) {
      size_t i = job_of[j];
      store::MeasurementRecord r = to_record(ms[j]);
      r.variant = batch[i].variant;
      fill_resources(*prep[i], *batch[i].task, r);
      out[i] = std::move(r);
    }
    // The CUBINs are not needed once measured: keep only the outcome of a failed build.
    std::lock_guard<std::mutex> lock(mu_);
    for (const EvalRequest& r : batch) {
      auto it = prepared_.find(r.source_hash);
      if (it != prepared_.end() && it->second.status.empty()) prepared_.erase(it);
    }
    return out;
  }

 private:
  void fill_resources(const Prepared& p, const Task& task, store::MeasurementRecord& r) const {
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

  std::map<int, double> compile_medians(const Task& task) {
    if (config_.torch_baseline.empty()) return {};
    auto it = compile_ms_.find(task.name);
    if (it == compile_ms_.end()) it = compile_ms_.emplace(task.name, eval::torch_compile_medians(config_.torch_baseline, task.name)).first;
    return it->second;
  }

  GpuEvaluatorConfig config_;
  std::unique_ptr<eval::Runner> evaluator_;
  std::unique_ptr<eval::CompilePool> compiler_;
  DeviceLimits limits_;
  std::mutex mu_;                  // prepared_: filled by prepare() while measure() reads it
  mutable std::mutex stats_mu_;    // the evaluator's stats are written inside evaluate()
  std::map<std::string, Prepared> prepared_;
  std::map<std::string, std::map<int, double>> compile_ms_;
};

}  // namespace

std::unique_ptr<VariantEvaluator> make_gpu_evaluator(const GpuEvaluatorConfig& config) {
  return std::make_unique<GpuEvaluator>(config);
}

}  // namespace kevo::search
