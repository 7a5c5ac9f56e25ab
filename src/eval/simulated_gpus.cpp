// Simulated GPUs: the slot queue, a worker per slot that holds requests, and the CPU side of the
// protocol in the engine.
#include "eval/simulated_gpus.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/base64.h"
#include "core/error.h"
#include "core/plan_json.h"
#include "eval/compile_pool.h"
#include "eval/module_memory.h"
#include "eval/module_state.h"
#include "eval/output_checks.h"
#include "eval/slot_queue.h"
#include "eval/worker_pool.h"

namespace kevo::eval {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The requests the Runner sends for one workload: a run per correctness trial, the timed runs and
// the probe of state (reset, then kept); each carries the module and the resolved plan, as the GPU
// worker's do.
void workload_requests(const Json& module, const ResolvedPlan& plan, int trials, std::vector<Json>& out) {
  const Layout l = layout_of(plan, 2);
  const Json plan_json = resolved_plan_to_json(plan);
  for (int r = 0; r < trials + 3; ++r) {
    Json req = {{"op", r < trials ? "run" : "time"}, {"module", module}, {"plan", plan_json}, {"offsets", l.offsets(0)}};
    if (r == trials) req["sets"] = Json::array({Json(l.offsets(0)), Json(l.offsets(1))});
    if (r == trials + 1) req["sets"] = Json::array({Json(l.offsets(0))});
    if (r == trials + 2) req["keep_state"] = true;
    out.push_back(std::move(req));
  }
}

}  // namespace

class SimulatedGpus::Impl {
 public:
  explicit Impl(SimulationOptions o) : opts(std::move(o)) {
    if (opts.gpus < 1 || opts.gpus > 64) throw std::runtime_error("simulated GPUs: give 1 to 64");
    const std::string binary = opts.kevo_binary.empty() ? self_executable() : opts.kevo_binary;
    for (int k = 0; k < opts.gpus; ++k) {
      WorkerPoolConfig cfg;
      cfg.workers = {{"simgpu" + std::to_string(k), {binary, "sim-worker"}, {}}};
      workers.push_back(std::make_unique<WorkerPool>(std::move(cfg)));
    }
    next_id.assign(workers.size(), 0);
    started();
    queue = std::make_unique<SlotQueue>(workers.size());
  }
  ~Impl() { queue.reset(); }  // the slots' threads end before their workers do

  Measurement run(size_t k, const EvalJob& job, double hold_seconds) {
    const auto start = Clock::now();
    Measurement m;
    m.task = job.task->name;
    m.candidate = job.candidate.name;
    m.gpu = opts.device_name + " (gpu" + std::to_string(k) + ")";
    m.arch = job.build.arch;
    try {
      protocol(k, job, hold_seconds, m);
    } catch (const std::exception& e) {
      m.status = EvalStatus::InternalError;
      m.error = std::string("kevo: ") + e.what();
    }
    m.wall_seconds = seconds_since(start);
    std::lock_guard<std::mutex> lock(stats_mu);
    ++evaluations;
    return m;
  }

  SimulationOptions opts;
  std::vector<std::unique_ptr<WorkerPool>> workers;
  std::unique_ptr<SlotQueue> queue;
  mutable std::mutex stats_mu;
  int evaluations = 0;
  std::vector<uint64_t> next_id;  // per slot: its worker's job ids

 private:
  // A first request to every worker, answered once it has started: the figures of a campaign are
  // those of the GPUs at work, not of processes loading (a real campaign runs for hours).
  void started() {
    for (size_t k = 0; k < workers.size(); ++k) workers[k]->submit({++next_id[k], "{}", std::chrono::milliseconds(60000)});
    for (size_t k = 0; k < workers.size(); ++k) {
      JobOutcome out = workers[k]->next_outcome();
      if (out.status != JobStatus::Ok)
        throw std::runtime_error("simulated GPU " + std::to_string(k) + ": " + out.error.substr(0, out.error.find('\n')));
    }
  }

  // What the Runner's protocol costs the engine's CPU, the GPU's part held by the worker.
  void protocol(size_t k, const EvalJob& job, double hold_seconds, Measurement& m) {
    if (job.build.status != BuildStatus::Ok) {
      m.status = EvalStatus::CompileError;
      m.error = job.build.error;
      return;
    }
    const ModuleState state = inspect_module_state(job.build.cubin);
    const Json module = {{"key", job.build.cache_key},
                         {"cubin_base64", base64_encode(job.build.cubin)},
                         {"lowered", job.build.lowered_names},
                         {"writable", writable_to_json(state.writable)}};
    std::vector<Json> requests;
    for (size_t w = 0; w < job.task->workloads.size(); ++w) {
      ResolvedPlan plan;
      try {
        plan = resolve_plan(job.candidate, *job.task, job.task->workloads[w], opts.limits);
      } catch (const InputError& e) {
        m.status = EvalStatus::BadPlan;
        m.error = "workload " + std::to_string(w) + ": " + e.what();
        return;
      }
      workload_requests(module, plan, opts.trials, requests);
    }
    const double share = requests.empty() ? 0 : hold_seconds / static_cast<double>(requests.size());
    for (Json& req : requests) {
      req["hold_seconds"] = share;
      Job j;
      j.id = ++next_id[k];
      j.payload = req.dump();
      j.timeout = std::chrono::milliseconds(static_cast<int64_t>((share + 10) * 1000));
      workers[k]->submit(std::move(j));
      JobOutcome out = workers[k]->next_outcome();
      if (out.worker_replaced) m.worker_replaced = true;
      if (out.status != JobStatus::Ok) {
        m.status = EvalStatus::WorkerCrashed;
        m.error = std::string("the simulated GPU's worker: ") + to_string(out.status) + ": " +
                  out.error.substr(0, out.error.find('\n'));
        return;
      }
    }
    m.status = EvalStatus::Ok;
  }
};

SimulatedGpus::SimulatedGpus(SimulationOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
SimulatedGpus::~SimulatedGpus() = default;

int SimulatedGpus::gpus() const { return impl_->opts.gpus; }
const std::string& SimulatedGpus::arch() const { return impl_->opts.arch; }
const std::string& SimulatedGpus::device_name() const { return impl_->opts.device_name; }
DeviceLimits SimulatedGpus::limits() const { return impl_->opts.limits; }

EvalStats SimulatedGpus::stats() const {
  EvalStats s;
  s.busy_seconds = impl_->queue->busy_seconds();
  s.jobs = impl_->queue->jobs_taken();
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  s.evaluations = impl_->evaluations;
  return s;
}

std::future<Measurement> SimulatedGpus::submit(EvalJob job, double hold_seconds) {
  auto done = std::make_shared<std::promise<Measurement>>();
  std::future<Measurement> out = done->get_future();
  auto held = std::make_shared<EvalJob>(std::move(job));
  impl_->queue->push([impl = impl_.get(), done, held, hold_seconds](size_t k) {
    try {
      done->set_value(impl->run(k, *held, hold_seconds));
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  return out;
}

int simulated_worker_main() {
  return serve_worker_on_stdio([](const std::string& request) {
    const Json req = Json::parse(request, nullptr, /*allow_exceptions=*/false);
    if (req.is_discarded() || !req.is_object()) return std::string(R"({"status":"bad_request"})");
    const double hold = req.value("hold_seconds", 0.0);
    if (hold > 0) std::this_thread::sleep_for(std::chrono::duration<double>(hold));
    return std::string(R"({"status":"ok"})");
  });
}

}  // namespace kevo::eval
