// The engine's side of evaluation: per GPU a slot with its worker, its buffer arena shared with
// that worker through CUDA IPC, its oracle cache and its eager baselines. Sections: the oracle
// cache, the slot (one evaluation), the Runner. The arena's layout and the output checks are
// eval/output_checks.h's.
#include "eval/runner.h"

#include <c10/core/DeviceGuard.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "core/base64.h"
#include "core/error.h"
#include "core/json_doc.h"
#include "core/plan_json.h"
#include "eval/compile_pool.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/gpu_timer.h"
#include "eval/inputs.h"
#include "eval/output_checks.h"
#include "eval/torch_graph.h"
#include "eval/worker_pool.h"

namespace kevo::eval {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string axes_text(const Task& task, const Workload& w) {
  std::string s;
  for (const auto& [name, value] : w.axes) s += (s.empty() ? "" : " ") + name + "=" + std::to_string(value);
  (void)task;
  return s;
}

uint64_t trial_seed(uint64_t base, int workload, int trial) {
  uint64_t x = base ^ (static_cast<uint64_t>(workload) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(trial + 1));
  x ^= x >> 30, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 27, x *= 0x94D049BB133111EBull, x ^= x >> 31;
  return x >> 1;  // torch seeds are taken as signed
}

// ---------------------------------------------------------------------------------- oracle cache

struct OracleEntry {
  std::vector<torch::Tensor> inputs, outputs;  // on the slot's GPU; never shared with a worker
  int64_t bytes = 0;
};

class OracleCache {
 public:
  explicit OracleCache(int64_t capacity) : capacity_(capacity) {}
  std::shared_ptr<OracleEntry> get(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  void put(const std::string& key, std::shared_ptr<OracleEntry> e) {
    held_ += e->bytes;
    order_.emplace_front(key, std::move(e));
    index_[key] = order_.begin();
    while (held_ > capacity_ && order_.size() > 1) {
      held_ -= order_.back().second->bytes;
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

 private:
  int64_t capacity_, held_ = 0;
  std::list<std::pair<std::string, std::shared_ptr<OracleEntry>>> order_;
  std::map<std::string, std::list<std::pair<std::string, std::shared_ptr<OracleEntry>>>::iterator> index_;
};

// ------------------------------------------------------------------------------------- the slot

TimingFigures figures_of(const Json& t) {
  TimingFigures f;
  f.median_ms = t.at("median_ms").get<double>();
  f.p20_ms = t.at("p20_ms").get<double>();
  f.p80_ms = t.at("p80_ms").get<double>();
  f.half_width_ms = t.at("half_width_ms").is_number() ? t.at("half_width_ms").get<double>() : 0.0;
  f.n = t.at("n").get<int>();
  f.converged = t.at("converged").get<bool>();
  f.event_median_ms = t.at("event_median_ms").get<double>();
  f.kernels = t.at("kernels_max").get<int>();
  f.sm_clock_mhz = t.at("sm_clock_mhz").get<unsigned>();
  f.temperature_c = t.at("temperature_c").get<unsigned>();
  return f;
}

TimingFigures figures_of(const Timing& t) {
  TimingFigures f;
  f.median_ms = t.median_ms, f.p20_ms = t.p20_ms, f.p80_ms = t.p80_ms;
  f.half_width_ms = std::isfinite(t.half_width_ms) ? t.half_width_ms : 0.0;
  f.n = t.n, f.converged = t.converged, f.event_median_ms = t.event_median_ms, f.kernels = t.kernels_max;
  f.sm_clock_mhz = t.sm_clock_mhz, f.temperature_c = t.temperature_c;
  return f;
}

// Why a job did not give a usable answer: the status it earns and its text.
struct Failure {
  EvalStatus status;
  std::string error;
};

class Slot {
 public:
  Slot(int device, const EvalOptions& opts) : device_(device), opts_(opts), cache_(0) {
    const CudaApi& api = *cuda_api();
    use_primary_context(device);
    size_t free_bytes = 0, total = 0;
    check_cuda(api.cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
    cache_ = OracleCache(static_cast<int64_t>(opts.oracle_cache_fraction * static_cast<double>(total)));
    char name[256] = {};
    api.cuDeviceGetName(name, sizeof name, device);
    name_ = name;
    arch_ = device_arch(device);

    WorkerPoolConfig cfg;
    WorkerSpec spec;
    spec.name = "gpu" + std::to_string(device);
    spec.argv = {opts.kevo_binary.empty() ? self_executable() : opts.kevo_binary, "worker"};
    spec.env = {{"CUDA_VISIBLE_DEVICES", visible_device(device)}};
    cfg.workers = {spec};
    cfg.max_message_bytes = uint64_t{16} << 20;
    cfg.respawn_after = [](const std::string& answer) {
      try {
        return Json::parse(answer).value("sticky", false);
      } catch (...) {
        return true;
      }
    };
    pool_ = std::make_unique<WorkerPool>(std::move(cfg));
  }

  ~Slot() {
    pool_.reset();  // the worker unmaps the arena before it is freed
    if (arena_) cuda_api()->cuMemFree(arena_);
  }

  const std::string& name() const { return name_; }
  DeviceLimits limits_of() const;
  const std::string& arch() const { return arch_; }
  int replaced() const { return replaced_; }

  int device() const { return device_; }

  Measurement evaluate(const EvalJob& job);

 private:
  // The device by UUID for the worker's CUDA_VISIBLE_DEVICES: immune to ordering and to the
  // engine's own restriction of the visible devices.
  static std::string visible_device(int device) {
    const CudaApi& api = *cuda_api();
    CUdevice dev;
    CUuuid id;
    check_cuda(api.cuDeviceGet(&dev, device), "cuDeviceGet");
    check_cuda(api.cuDeviceGetUuid(&id, dev), "cuDeviceGetUuid");
    std::string s = "GPU-";
    const char* hex = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
      auto b = static_cast<unsigned char>(id.bytes[i]);
      s += hex[b >> 4];
      s += hex[b & 15];
    }
    return s;
  }

  std::shared_ptr<OracleEntry> oracle(const Task& task, int w, uint64_t seed, bool cache = true) {
    std::string key = task.file + "|" + task.name + "|" + std::to_string(w) + "|" + std::to_string(seed);
    if (auto hit = cache ? cache_.get(key) : nullptr) return hit;
    auto e = std::make_shared<OracleEntry>();
    const Workload& wl = task.workloads[static_cast<size_t>(w)];
    e->inputs = make_inputs(task, wl, seed, torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device_)));
    e->outputs = run_graph(graph(task, w), e->inputs);
    for (auto& t : e->inputs) e->bytes += static_cast<int64_t>(t.nbytes());
    for (auto& t : e->outputs) {
      t = t.contiguous();
      e->bytes += static_cast<int64_t>(t.nbytes());
    }
    if (cache) cache_.put(key, e);
    return e;
  }

  const Graph& graph(const Task& task, int w) {
    std::string key = task.file + "|" + task.name + "|" + std::to_string(w);
    auto it = graphs_.find(key);
    if (it == graphs_.end()) it = graphs_.emplace(key, task.graph(task.workloads[static_cast<size_t>(w)])).first;
    return it->second;
  }

  TimingConfig timing_config() const {
    TimingConfig c;
    c.warmup = opts_.warmup, c.min_reps = opts_.min_reps, c.max_reps = opts_.max_reps;
    c.max_seconds = opts_.max_seconds, c.target_half_width = opts_.target_half_width;
    return c;
  }

  // The reference on LibTorch, timed with the candidates' protocol; once per task and workload.
  TimingFigures eager(const Task& task, int w) {
    std::string key = task.file + "|" + task.name + "|" + std::to_string(w);
    auto it = eager_.find(key);
    if (it != eager_.end()) return it->second;
    auto e = oracle(task, w, trial_seed(opts_.seed, w, 0));
    const Graph& g = graph(task, w);
    Timing t = time_on_gpu([&](CUstream) { run_graph(g, e->inputs); }, nullptr, timing_config());
    if (!(t.median_ms > 0)) throw std::runtime_error("the eager baseline timed at 0 ms");
    return eager_[key] = figures_of(t);
  }

  // Device copy bandwidth (bytes read plus written per second), measured once: the DRAM floor.
  double copy_bandwidth() {
    if (bandwidth_ > 0) return bandwidth_;
    const int64_t n = int64_t{256} << 20;
    auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA, static_cast<c10::DeviceIndex>(device_));
    torch::Tensor a = torch::rand({n}, opts), b = torch::empty({n}, opts);
    TimingConfig c = timing_config();
    // A kernel, not copy_: that would be a cudaMemcpy, which is not what candidates run.
    Timing t = time_on_gpu([&](CUstream) { torch::neg_out(b, a); }, nullptr, c);
    bandwidth_ = 2.0 * 4.0 * static_cast<double>(n) / (t.median_ms * 1e-3);
    return bandwidth_;
  }

  void ensure_arena(uint64_t bytes) {
    const CudaApi& api = *cuda_api();
    if (arena_ && arena_bytes_ >= bytes) return;
    if (arena_) check_cuda(api.cuMemFree(arena_), "cuMemFree(arena)");
    arena_ = 0;
    uint64_t want = std::max<uint64_t>(align_up(bytes, uint64_t{2} << 20), arena_bytes_ + arena_bytes_ / 2);
    check_cuda(api.cuMemAlloc(&arena_, want), "cuMemAlloc(arena)");
    arena_bytes_ = want;
    CUipcMemHandle h;
    check_cuda(api.cuIpcGetMemHandle(&h, arena_), "cuIpcGetMemHandle");
    arena_handle_ = base64_encode(std::string_view(reinterpret_cast<const char*>(&h), sizeof h));
  }

  // Canaries everywhere, the inputs copied in, outputs and scratch poisoned; the GPU idle after.
  void prepare(const ResolvedPlan& plan, const Layout& l, const OracleEntry& e) {
    const CudaApi& api = *cuda_api();
    check_cuda(api.cuCtxSynchronize(), "cuCtxSynchronize");
    check_cuda(api.cuMemsetD8Async(arena_, kCanary, l.bytes, nullptr), "cuMemsetD8Async(canary)");
    size_t input = 0;
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      const ResolvedBuffer& b = plan.buffers[i];
      CUdeviceptr at = arena_ + l.offsets[i];
      if (b.role == ResolvedBuffer::Input) {
        const torch::Tensor& src = e.inputs[input++];
        check_cuda(api.cuMemcpyDtoDAsync(at, reinterpret_cast<CUdeviceptr>(src.data_ptr()),
                                         static_cast<size_t>(b.bytes), nullptr),
                   "cuMemcpyDtoDAsync(input)");
      } else {
        Poison p = poison_of(b.dtype);
        fill_pattern(at, static_cast<size_t>(b.bytes), p.word, p.width, nullptr);
      }
    }
    check_cuda(api.cuCtxSynchronize(), "cuCtxSynchronize");
  }

  Json poison_list(const ResolvedPlan& plan, const Layout& l) {
    Json list = Json::array();
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      const ResolvedBuffer& b = plan.buffers[i];
      if (b.role != ResolvedBuffer::Output) continue;
      Poison p = poison_of(b.dtype);
      list.push_back({{"offset", l.offsets[i]}, {"bytes", b.bytes}, {"word", p.word}, {"width", p.width}});
    }
    return list;
  }

  // Sends one request to the worker; the answer, or the failure it amounts to.
  std::optional<Failure> ask(const Json& request, double timeout_s, Json& answer, Measurement& m) {
    Job job;
    job.id = ++job_id_;
    job.payload = request.dump();
    job.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::min(timeout_s, opts_.deadline_cap_s) * 1000));
    pool_->submit(std::move(job));
    JobOutcome out = pool_->next_outcome();
    if (out.worker_replaced) ++replaced_, m.worker_replaced = true;
    switch (out.status) {
      case JobStatus::Ok: break;
      case JobStatus::Timeout:
        return Failure{EvalStatus::Timeout, "no answer within " + std::to_string(job.timeout.count() / 1000.0).substr(0, 6) +
                                                " s: the worker was killed and replaced"};
      case JobStatus::Crashed:
      case JobStatus::ProtocolError:
        return Failure{EvalStatus::WorkerCrashed, "the GPU worker " + first_line(out.error)};
      case JobStatus::Unavailable:
        return Failure{EvalStatus::InternalError, "no GPU worker: " + first_line(out.error)};
    }
    try {
      answer = Json::parse(out.answer);
    } catch (const Json::exception&) {
      return Failure{EvalStatus::WorkerCrashed, "the GPU worker answered with malformed JSON"};
    }
    std::string status = answer.value("status", "");
    if (status == "ok") return std::nullopt;
    std::string error = answer.value("error", "no error text");
    if (status == "cuda_error") return Failure{EvalStatus::CudaError, error};
    if (status == "launch_error") return Failure{EvalStatus::LaunchError, error};
    return Failure{EvalStatus::InternalError, "the GPU worker refused a request: " + error};
  }

  static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

  double launch_allowance_s(double eager_ms) const {
    return std::max(0.5, opts_.slowdown_limit * eager_ms * 1e-3);
  }

  Json request(const char* op, const Json& module, const ResolvedPlan& plan, const Layout& l) const {
    return {{"op", op},
            {"module", module},
            {"arena", {{"handle_base64", arena_handle_}, {"bytes", arena_bytes_}}},
            {"plan", resolved_plan_to_json(plan)},
            {"offsets", l.offsets}};
  }

  // Outputs against the reference, inputs against their pristine copies, canaries intact.
  std::optional<Failure> check(const ResolvedPlan& plan, const Layout& l, const OracleEntry& e, const Task& task,
                               WorkloadMeasurement& wm, const char* when) {
    size_t in = 0, out = 0;
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      const ResolvedBuffer& b = plan.buffers[i];
      CUdeviceptr at = arena_ + l.offsets[i];
      if (b.role == ResolvedBuffer::Input) {
        const torch::Tensor& src = e.inputs[in++];
        auto pristine = bytes_of(reinterpret_cast<CUdeviceptr>(src.data_ptr()), static_cast<uint64_t>(b.bytes), device_);
        if (!torch::equal(bytes_of(at, static_cast<uint64_t>(b.bytes), device_), pristine))
          return Failure{EvalStatus::InputModified, std::string("input '") + b.name + "' was modified " + when};
      } else if (b.role == ResolvedBuffer::Output) {
        OutputCheck c = check_output(at, b, e.outputs[out++], task.tolerance, device_);
        wm.max_abs_error = std::max(wm.max_abs_error, c.max_abs);
        wm.max_error_ratio = std::max(wm.max_error_ratio, c.max_ratio);
        if (c.status != EvalStatus::Ok) {
          wm.worst = c.worst;
          return Failure{c.status, format_violation(c.worst) + " " + when};
        }
      }
    }
    for (const auto& [begin, end] : l.guards) {
      if (end <= begin) continue;
      torch::Tensor g = bytes_of(arena_ + begin, end - begin, device_);
      torch::Tensor changed = g.ne(kCanary);
      if (changed.any().item<bool>()) {
        int64_t first = changed.to(torch::kUInt8).argmax().item<int64_t>();
        return Failure{EvalStatus::OutOfBounds, "a write landed " + std::to_string(static_cast<uint64_t>(first) + begin) +
                                                    " bytes into the buffer arena, outside every buffer " + when};
      }
    }
    return std::nullopt;
  }

  int device_;
  const EvalOptions& opts_;
  OracleCache cache_;
  std::string name_, arch_;
  std::unique_ptr<WorkerPool> pool_;
  std::map<std::string, Graph> graphs_;
  std::map<std::string, TimingFigures> eager_;
  double bandwidth_ = 0;
  CUdeviceptr arena_ = 0;
  uint64_t arena_bytes_ = 0;
  std::string arena_handle_;
  uint64_t job_id_ = 0;
  int replaced_ = 0;

  friend class EvaluationRun;
};

// One candidate on one slot: trials and timing per workload, then the held-back check.
class EvaluationRun {
 public:
  EvaluationRun(Slot& slot, const EvalJob& job) : s_(slot), job_(job), task_(*job.task) {}

  Measurement run() {
    auto start = Clock::now();
    m_.task = task_.name;
    m_.candidate = job_.candidate.name;
    m_.gpu = s_.name_ + " (gpu" + std::to_string(s_.device_) + ")";
    m_.arch = job_.build.arch;
    try {
      evaluate();
    } catch (const std::exception& e) {
      fail({EvalStatus::InternalError, std::string("kevo: ") + e.what()});
    }
    m_.wall_seconds = seconds_since(start);
    return m_;
  }

 private:
  void fail(const Failure& f, int workload = -1) {
    m_.status = f.status;
    m_.error = (workload >= 0 ? "workload " + std::to_string(workload) + ": " : std::string()) + f.error;
  }

  std::vector<int> fitness_workloads() const {
    const EvalOptions& o = s_.opts_;
    if (!o.workloads.empty()) return o.workloads;
    std::vector<int> all;
    for (int i = 0; i < static_cast<int>(task_.workloads.size()); ++i)
      if (i != o.held_back || task_.workloads.size() == 1) all.push_back(i);
    return all;
  }

  void evaluate() {
    if (job_.build.status != BuildStatus::Ok) return fail({EvalStatus::CompileError, job_.build.error});
    if (job_.build.arch != s_.arch_)
      return fail({EvalStatus::BadPlan, "built for " + job_.build.arch + ", the GPU is " + s_.arch_});
    module_ = {{"key", job_.build.cache_key.empty() ? std::to_string(std::hash<std::string>{}(job_.build.cubin))
                                                     : job_.build.cache_key},
               {"cubin_base64", base64_encode(job_.build.cubin)},
               {"lowered", job_.build.lowered_names}};
    std::vector<int> ws = fitness_workloads();
    double log_speedup = 0, log_vs_compile = 0, max_speedup = 0;
    int with_compile = 0;
    for (int w : ws) {
      WorkloadMeasurement wm;
      if (!measure_workload(w, wm)) return;
      log_speedup += std::log(wm.speedup);
      max_speedup = std::max(max_speedup, wm.speedup);
      if (wm.compile_ms > 0) log_vs_compile += std::log(wm.compile_ms / wm.candidate.median_ms), ++with_compile;
    }
    m_.speedup = std::exp(log_speedup / static_cast<double>(ws.size()));
    if (with_compile == static_cast<int>(ws.size())) m_.speedup_vs_compile = std::exp(log_vs_compile / with_compile);
    if (max_speedup > s_.opts_.reverify_above && !held_back_check(ws)) return;
    m_.status = EvalStatus::Ok;
  }

  // Correctness trials and timing of one workload; false (with the status set) on a failure.
  bool measure_workload(int w, WorkloadMeasurement& wm) {
    const Workload& wl = task_.workloads[static_cast<size_t>(w)];
    wm.workload = w;
    wm.axes = axes_text(task_, wl);
    auto record = [&](const Failure& f) {
      wm.status = f.status;
      m_.workloads.push_back(wm);
      fail(f, w);
      return false;
    };
    ResolvedPlan plan;
    try {
      plan = resolve_plan(job_.candidate, task_, wl, s_.limits_of());
    } catch (const InputError& e) {
      return record({EvalStatus::BadPlan, e.what()});
    }
    wm.eager = s_.eager(task_, w);
    if (auto it = job_.compile_ms.find(w); it != job_.compile_ms.end()) wm.compile_ms = it->second;
    wm.floor_ms = static_cast<double>(task_.bytes_moved(wl)) / s_.copy_bandwidth() * 1e3;
    const double allowance = s_.launch_allowance_s(wm.eager.median_ms);
    Layout l = layout_of(plan);
    s_.ensure_arena(l.bytes);

    std::shared_ptr<OracleEntry> e;
    for (int t = 0; t < s_.opts_.trials; ++t) {
      e = s_.oracle(task_, w, trial_seed(s_.opts_.seed, w, t));
      if (auto f = trial(plan, l, *e, wm, allowance, false, "in trial " + std::to_string(t + 1))) return record(*f);
      ++wm.trials;
    }
    // Timing on the last trial's inputs; the outputs of the last timed run are checked after.
    Json req = s_.request("time", module_, plan, l);
    req["poison"] = s_.poison_list(plan, l);
    TimingConfig tc = s_.timing_config();
    req["timing"] = {{"warmup", tc.warmup}, {"min_reps", tc.min_reps}, {"max_reps", tc.max_reps},
                     {"max_seconds", tc.max_seconds}, {"target_half_width", tc.target_half_width}};
    Json answer;
    double deadline = s_.opts_.deadline_floor_s + tc.max_seconds * 2 + (tc.warmup + tc.min_reps + 1) * allowance;
    if (auto f = s_.ask(req, deadline, answer, m_)) return record(*f);
    const Json& timing = answer.at("timing");
    wm.candidate = figures_of(timing);
    m_.gpu_seconds += timing.value("gpu_ms_total", 0.0) * 1e-3;
    if (auto f = expected_kernels(plan, timing)) return record(*f);
    if (auto f = s_.check(plan, l, *e, task_, wm, "in the timed runs"))
      return record(f->status == EvalStatus::InputModified || f->status == EvalStatus::OutOfBounds
                        ? *f
                        : Failure{EvalStatus::TimedRunWrong, "right when checked, wrong while timed: " + f->error});
    wm.speedup = wm.eager.median_ms / std::max(wm.candidate.median_ms, 1e-9);
    m_.workloads.push_back(wm);
    return true;
  }

  std::optional<Failure> trial(const ResolvedPlan& plan, const Layout& l, const OracleEntry& e, WorkloadMeasurement& wm,
                               double allowance, bool reload, const std::string& when) {
    s_.prepare(plan, l, e);
    Json req = s_.request("run", module_, plan, l);
    if (reload) req["reload"] = true;
    Json answer;
    if (auto f = s_.ask(req, s_.opts_.deadline_floor_s + allowance, answer, m_)) return f;
    return s_.check(plan, l, e, task_, wm, when.c_str());
  }

  // Every kernel the plan launches and nothing else, on the plan's stream.
  static std::optional<Failure> expected_kernels(const ResolvedPlan& plan, const Json& timing) {
    int kernels = 0, library = 0;
    for (const ResolvedStep& s : plan.steps) (std::holds_alternative<ResolvedKernel>(s) ? kernels : library)++;
    int lo = timing.at("kernels_min").get<int>(), hi = timing.at("kernels_max").get<int>();
    int foreign = timing.at("foreign_stream_kernels").get<int>();
    if (timing.value("copies_max", 0) > 0)
      return Failure{EvalStatus::UnexpectedKernels, "CUPTI saw device copies the plan did not ask for"};
    if (foreign > 0)
      return Failure{EvalStatus::UnexpectedKernels, std::to_string(foreign) + " kernels ran on a stream the plan did not use"};
    bool ok = library == 0 ? (lo == kernels && hi == kernels) : lo >= kernels + library;
    if (!ok)
      return Failure{EvalStatus::UnexpectedKernels,
                     "CUPTI saw " + std::to_string(lo) + (lo == hi ? "" : "-" + std::to_string(hi)) +
                         " kernels per run; the plan launches " + std::to_string(kernels) +
                         (library ? " plus " + std::to_string(library) + " library calls" : "")};
    return std::nullopt;
  }

  // A speedup too good to take on trust: a fresh module, a fresh seed, the held-back (or the
  // largest) workload, one trial and a short timed run whose outputs are checked too.
  bool held_back_check(const std::vector<int>& ws) {
    m_.held_back_checked = true;
    int w = s_.opts_.held_back;
    if (w < 0) {
      w = ws.front();
      for (int i : ws)
        if (task_.bytes_moved(task_.workloads[static_cast<size_t>(i)]) >
            task_.bytes_moved(task_.workloads[static_cast<size_t>(w)]))
          w = i;
    }
    const Workload& wl = task_.workloads[static_cast<size_t>(w)];
    auto failed = [&](const std::string& why) {
      fail({EvalStatus::HeldBackFailed, "a " + std::to_string(m_.speedup).substr(0, 5) +
                                            "x speedup did not hold up on the held-back workload " +
                                            std::to_string(w) + ": " + why});
      return false;
    };
    ResolvedPlan plan;
    try {
      plan = resolve_plan(job_.candidate, task_, wl, s_.limits_of());
    } catch (const InputError& e) {
      return failed(e.what());
    }
    uint64_t seed = std::random_device{}() | uint64_t{1} << 40;
    auto e = s_.oracle(task_, w, seed, /*cache=*/false);
    Layout l = layout_of(plan);
    s_.ensure_arena(l.bytes);
    WorkloadMeasurement wm;
    double allowance = s_.launch_allowance_s(s_.eager(task_, w).median_ms);
    if (auto f = trial(plan, l, *e, wm, allowance, /*reload=*/true, "(fresh seed)")) return failed(f->error);
    Json req = s_.request("time", module_, plan, l);
    req["poison"] = s_.poison_list(plan, l);
    req["timing"] = {{"warmup", 1}, {"min_reps", 5}, {"max_reps", 5}, {"max_seconds", 5.0}, {"target_half_width", 1.0}};
    Json answer;
    if (auto f = s_.ask(req, s_.opts_.deadline_floor_s + 8 * allowance + 10, answer, m_)) return failed(f->error);
    if (auto f = s_.check(plan, l, *e, task_, wm, "in the timed runs")) return failed(f->error);
    return true;
  }

  Slot& s_;
  const EvalJob& job_;
  const Task& task_;
  Measurement m_;
  Json module_;
};

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

namespace {
DeviceLimits device_limits(int device) {
  const CudaApi& api = *cuda_api();
  CUdevice dev;
  check_cuda(api.cuDeviceGet(&dev, device), "cuDeviceGet");
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    check_cuda(api.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
    return static_cast<int64_t>(v);
  };
  DeviceLimits l;
  l.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  l.max_block = {attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                 attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
  l.max_grid = {attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
  l.max_shared_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  l.num_sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  return l;
}
}  // namespace

DeviceLimits Slot::limits_of() const { return device_limits(device_); }

Runner::Runner(EvalOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Runner::~Runner() = default;

int Runner::gpus() const { return static_cast<int>(impl_->slots.size()); }
std::string Runner::device_name() const { return impl_->slots.front()->name(); }
std::string Runner::arch() const { return impl_->slots.front()->arch(); }
const EvalStats& Runner::stats() const { return impl_->stats; }
DeviceLimits Runner::limits() const { return device_limits(impl_->opts.gpus.front()); }

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
