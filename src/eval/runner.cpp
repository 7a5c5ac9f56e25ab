// The Runner: one slot per GPU (eval/slot.h), each driven by a thread of the slot queue that takes
// the oldest waiting job and runs it through the protocol (eval/evaluation_run.h); the
// torch.compile figures' reader.
#include "eval/runner.h"

#include <cmath>

#include <c10/core/DeviceGuard.h>
#include <nlohmann/json.hpp>
#include "eval/torch_tensors.h"

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "core/json_doc.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/evaluation_run.h"
#include "eval/slot.h"
#include "eval/slot_queue.h"

namespace kevo::eval {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

// ------------------------------------------------------------------------------------ Runner

class Runner::Impl {
 public:
  explicit Impl(EvalOptions o) : opts(std::move(o)) {
    if (!cuda_api()) throw std::runtime_error("kevo eval needs a CUDA GPU: " + cuda_driver_status().error);
    if (!torch::cuda::is_available()) throw std::runtime_error("LibTorch was built without CUDA or sees no GPU");
    int count = cuda_driver_status().device_count;
    if (opts.gpus.empty())
      for (int d = 0; d < count; ++d) opts.gpus.push_back(d);
    for (int d : opts.gpus) {
      if (d < 0 || d >= count)
        throw std::runtime_error("no GPU " + std::to_string(d) + " (" + std::to_string(count) + " visible)");
      slots.push_back(std::make_unique<Slot>(d, opts));
    }
    queue = std::make_unique<SlotQueue>(slots.size());
  }
  ~Impl() { queue.reset(); }  // the slots' threads end before the slots do

  // One job on slot k, from that slot's thread: the driver's context and LibTorch's current device.
  Measurement run(size_t k, const EvalJob& job) {
    Slot& slot = *slots[k];
    use_primary_context(slot.device());
    c10::DeviceGuard device(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(slot.device())));
    torch::NoGradGuard no_grad;
    Measurement m = EvaluationRun(slot, job).run();
    std::lock_guard<std::mutex> lock(stats_mu);
    ++evaluations;
    screened += m.status == EvalStatus::Screened;
    if (m.ok() && m.screen_fitness > 0 && m.fitness > 0) {
      ++promoted;
      promoted_log_ratio += std::log(m.fitness / m.screen_fitness);
    }
    candidate_gpu_seconds += m.gpu_seconds;
    for (const auto& [phase, seconds] : m.phase_seconds) phase_seconds[phase] += seconds;
    return m;
  }

  EvalOptions opts;
  std::vector<std::unique_ptr<Slot>> slots;
  std::unique_ptr<SlotQueue> queue;
  mutable std::mutex stats_mu;
  int evaluations = 0, screened = 0, promoted = 0;
  double promoted_log_ratio = 0;
  double wall_seconds = 0, candidate_gpu_seconds = 0;
  std::map<std::string, double> phase_seconds;
};

Runner::Runner(EvalOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Runner::~Runner() = default;

int Runner::gpus() const { return static_cast<int>(impl_->slots.size()); }
std::string Runner::device_name() const { return impl_->slots.front()->name(); }
std::string Runner::arch() const { return impl_->slots.front()->arch(); }
DeviceLimits Runner::limits() const { return impl_->slots.front()->limits(); }

EvalStats Runner::stats() const {
  EvalStats s;
  s.busy_seconds = impl_->queue->busy_seconds();
  s.jobs = impl_->queue->jobs_taken();
  for (auto& slot : impl_->slots) s.workers_replaced += slot->replaced();
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  s.evaluations = impl_->evaluations;
  s.wall_seconds = impl_->wall_seconds;
  s.candidate_gpu_seconds = impl_->candidate_gpu_seconds;
  s.phase_seconds = impl_->phase_seconds;
  s.screened = impl_->screened;
  s.promoted = impl_->promoted;
  s.promoted_log_ratio = impl_->promoted_log_ratio;
  return s;
}

std::future<Measurement> Runner::submit(EvalJob job) {
  auto done = std::make_shared<std::promise<Measurement>>();
  std::future<Measurement> out = done->get_future();
  auto held = std::make_shared<EvalJob>(std::move(job));
  impl_->queue->push([impl = impl_.get(), done, held](size_t k) {
    try {
      done->set_value(impl->run(k, *held));
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  return out;
}

std::vector<Measurement> Runner::evaluate(const std::vector<EvalJob>& jobs) {
  auto start = Clock::now();
  std::vector<std::future<Measurement>> pending;
  for (const EvalJob& job : jobs) pending.push_back(submit(job));
  std::vector<Measurement> out;
  std::string engine_error;
  for (auto& p : pending) {
    try {
      out.push_back(p.get());
    } catch (const std::exception& e) {
      engine_error = e.what();
      out.emplace_back();
    }
  }
  if (!engine_error.empty()) throw std::runtime_error(engine_error);
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  impl_->wall_seconds += seconds_since(start);
  return out;
}

std::map<int, double> torch_compile_medians(const std::string& path, const std::string& task_name) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(Location{path, 0, 0}, "", "cannot read the torch baseline report");
  std::stringstream text;
  text << f.rdbuf();
  Doc doc(path, text.str());
  json root = doc.parse();
  Path top;
  if (!root.is_object() || !root.contains("tasks") || !root.at("tasks").is_array())
    doc.fail(top, "not a tools/torch_baseline.py report (no 'tasks' list)");
  std::map<int, double> out;
  for (const json& t : root.at("tasks")) {
    if (!t.is_object() || t.value("name", "") != task_name || !t.contains("workloads")) continue;
    for (const json& w : t.at("workloads")) {
      if (!w.is_object() || !w.contains("index") || !w.contains("compile") || !w.at("index").is_number_integer()) continue;
      const json& c = w.at("compile");
      if (c.is_object() && c.value("status", "") == "ok" && c.contains("median_ms") && c.at("median_ms").is_number())
        out[w.at("index").get<int>()] = c.at("median_ms").get<double>();
    }
  }
  return out;
}

}  // namespace kevo::eval
