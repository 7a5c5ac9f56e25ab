// The Runner: one slot per GPU (eval/slot.h), each driven by a thread that takes the next job and
// runs it through the protocol (eval/evaluation_run.h); the torch.compile figures' reader.
#include "eval/runner.h"

#include <c10/core/DeviceGuard.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/json_doc.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/evaluation_run.h"
#include "eval/slot.h"

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
  }

  EvalOptions opts;
  std::vector<std::unique_ptr<Slot>> slots;
  EvalStats stats;
};

Runner::Runner(EvalOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Runner::~Runner() = default;

int Runner::gpus() const { return static_cast<int>(impl_->slots.size()); }
std::string Runner::device_name() const { return impl_->slots.front()->name(); }
std::string Runner::arch() const { return impl_->slots.front()->arch(); }
const EvalStats& Runner::stats() const { return impl_->stats; }
DeviceLimits Runner::limits() const { return impl_->slots.front()->limits(); }

std::vector<Measurement> Runner::evaluate(const std::vector<EvalJob>& jobs) {
  auto start = Clock::now();
  std::vector<Measurement> out(jobs.size());
  std::atomic<size_t> next{0};
  std::mutex error_mu;
  std::string engine_error;
  std::vector<double> busy(impl_->slots.size(), 0.0);
  auto serve = [&](Slot& slot, double& busy_seconds) {
    try {
      // This thread drives the slot's GPU: the driver's context and LibTorch's current device.
      use_primary_context(slot.device());
      c10::DeviceGuard device(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(slot.device())));
      torch::NoGradGuard no_grad;
      for (size_t i; (i = next++) < jobs.size();) {
        auto job_start = Clock::now();
        out[i] = EvaluationRun(slot, jobs[i]).run();
        busy_seconds += seconds_since(job_start);
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(error_mu);
      engine_error = e.what();
    }
  };
  std::vector<std::thread> threads;
  for (size_t k = 0; k < impl_->slots.size(); ++k) threads.emplace_back(serve, std::ref(*impl_->slots[k]), std::ref(busy[k]));
  for (auto& t : threads) t.join();
  if (!engine_error.empty()) throw std::runtime_error(engine_error);
  EvalStats& s = impl_->stats;
  s.evaluations += static_cast<int>(jobs.size());
  s.wall_seconds += seconds_since(start);
  s.busy_seconds.resize(busy.size(), 0.0);
  for (size_t k = 0; k < busy.size(); ++k) s.busy_seconds[k] += busy[k];
  s.workers_replaced = 0;
  for (auto& slot : impl_->slots) s.workers_replaced += slot->replaced();
  for (const Measurement& m : out) s.candidate_gpu_seconds += m.gpu_seconds;
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
