// A GPU's slot: its worker, arena, oracle cache, baselines and measured peaks.
#include "eval/slot.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/base64.h"
#include "core/plan_json.h"
#include "eval/compile_pool.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/draws.h"
#include "eval/torch_graph.h"
#include "eval/worker_pool.h"

#ifdef KEVO_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace kevo::eval {

namespace {

using Json = nlohmann::json;

// The device by UUID for the worker's CUDA_VISIBLE_DEVICES: immune to ordering and to the
// engine's own restriction of the visible devices.
std::string visible_device(int device) {
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

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// LibTorch keeps the GPU memory its tensors freed for reuse; the arena is the driver's, so it
// gets that memory only once LibTorch hands it back.
void release_torch_cache() {
#ifdef KEVO_TORCH_CUDA
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

TimingFigures figures_of(const Timing& t) {
  TimingFigures f;
  f.median_ms = t.median_ms, f.p20_ms = t.p20_ms, f.p80_ms = t.p80_ms;
  f.half_width_ms = std::isfinite(t.half_width_ms) ? t.half_width_ms : 0.0;
  f.n = t.n, f.converged = t.converged, f.event_median_ms = t.event_median_ms, f.kernels = t.kernels_max;
  f.sm_clock_mhz = t.sm_clock_mhz, f.temperature_c = t.temperature_c;
  return f;
}

}  // namespace

uint64_t trial_seed(uint64_t base, int workload, int draw) {
  uint64_t x = base ^ (static_cast<uint64_t>(workload) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(draw + 1));
  x ^= x >> 30, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 27, x *= 0x94D049BB133111EBull, x ^= x >> 31;
  return x >> 1;  // torch seeds are taken as signed
}

// Least recently used references, up to a share of the GPU's memory.
class Slot::OracleCache {
 public:
  explicit OracleCache(int64_t capacity) : capacity_(capacity) {}
  int64_t capacity() const { return capacity_; }
  std::shared_ptr<OracleEntry> get(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  // Drops every reference no caller holds now (a trial's perturbed draw once the timed runs need
  // their two declared ones).
  void shed() {
    for (auto it = order_.begin(); it != order_.end();) {
      if (it->second.use_count() > 1) {
        ++it;
        continue;
      }
      held_ -= it->second->bytes;
      index_.erase(it->first);
      it = order_.erase(it);
    }
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

Slot::Slot(int device, const EvalOptions& opts) : device_(device), opts_(opts) {
  const CudaApi& api = *cuda_api();
  use_primary_context(device);
  size_t free_bytes = 0, total = 0;
  check_cuda(api.cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
  cache_ = std::make_unique<OracleCache>(static_cast<int64_t>(opts.oracle_cache_fraction * static_cast<double>(total)));
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

Slot::~Slot() {
  pool_.reset();  // the worker unmaps the arena before it is freed
  if (arena_) cuda_api()->cuMemFree(arena_);
}

DeviceLimits Slot::limits() const {
  const CudaApi& api = *cuda_api();
  CUdevice dev;
  check_cuda(api.cuDeviceGet(&dev, device_), "cuDeviceGet");
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
  l.arch = arch_;
  return l;
}

// ---- the oracle and the baselines ----------------------------------------------------------------

std::string Slot::key(const Task& task, int w) const { return task.file + "|" + task.name + "|" + std::to_string(w); }

const Graph& Slot::graph(const Task& task, int w) {
  auto it = graphs_.find(key(task, w));
  if (it == graphs_.end()) it = graphs_.emplace(key(task, w), task.graph(task.workloads[static_cast<size_t>(w)])).first;
  return it->second;
}

std::shared_ptr<OracleEntry> Slot::oracle(const Task& task, int w, uint64_t seed, bool perturbed, bool cache) {
  const std::string k = key(task, w) + "|" + std::to_string(seed) + (perturbed ? "|perturbed" : "");
  if (auto hit = cache ? cache_->get(k) : nullptr) return hit;
  auto draw = [&] {
    return draw_with_reference(task, graph(task, w), task.workloads[static_cast<size_t>(w)], seed, perturbed,
                               torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device_)));
  };
  ReferenceDraw d;
  try {
    d = draw();
  } catch (const std::exception& e) {
    // Out of memory: the cached references no run holds go back (KernelBench's 16 GB inputs beside
    // an arena of two sets leave room for two draws, not a third), then once more.
    if (std::string(e.what()).find("out of memory") == std::string::npos) throw;
    cache_->shed();
    release_torch_cache();
    d = draw();
  }
  auto e = std::make_shared<OracleEntry>();
  e->inputs = std::move(d.inputs);
  e->outputs = std::move(d.outputs);
  e->perturbation = std::move(d.perturbation);
  for (const auto* list : {&e->inputs, &e->outputs})
    for (const torch::Tensor& t : *list) e->bytes += static_cast<int64_t>(t.nbytes());
  if (cache) cache_->put(k, e);
  return e;
}

TimingConfig Slot::timing_config() const {
  TimingConfig c;
  c.warmup = opts_.warmup, c.min_reps = opts_.min_reps, c.max_reps = opts_.max_reps;
  c.max_seconds = opts_.max_seconds, c.target_half_width = opts_.target_half_width;
  return c;
}

double Slot::launch_allowance_s(double eager_ms) const { return std::max(0.5, opts_.slowdown_limit * eager_ms * 1e-3); }

TimingFigures Slot::eager(const Task& task, int w) {
  auto it = eager_.find(key(task, w));
  if (it != eager_.end()) return it->second;
  // The declared distributions' first draw: the inputs the first trial and the timed runs use.
  auto e = oracle(task, w, trial_seed(opts_.seed, w, 0), false);
  const Graph& g = graph(task, w);
  Timing t = time_on_gpu([&](CUstream) { run_graph(g, e->inputs); }, nullptr, timing_config());
  if (!(t.median_ms > 0)) throw std::runtime_error("the eager baseline timed at 0 ms");
  return eager_[key(task, w)] = figures_of(t);
}

// Device copy bandwidth (bytes read plus written per second), measured once: the DRAM floor.
double Slot::copy_bandwidth() {
  if (bandwidth_ > 0) return bandwidth_;
  const int64_t n = int64_t{256} << 20;
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA, static_cast<c10::DeviceIndex>(device_));
  torch::Tensor a = torch::rand({n}, opts), b = torch::empty({n}, opts);
  // A kernel, not copy_: that would be a cudaMemcpy, which is not what candidates run.
  Timing t = time_on_gpu([&](CUstream) { torch::neg_out(b, a); }, nullptr, timing_config());
  bandwidth_ = 2.0 * 4.0 * static_cast<double>(n) / (t.median_ms * 1e-3);
  return bandwidth_;
}

// Dense bf16 tensor-core FLOP/s (an 8192^3 matmul through LibTorch's cuBLAS), measured once: the
// compute floor. fp8 would double it; the runner's margin for the speed of light allows for that.
double Slot::tensor_peak_flops() {
  if (peak_flops_ > 0) return peak_flops_;
  const int64_t n = 8192;
  auto opts = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA, static_cast<c10::DeviceIndex>(device_));
  torch::Tensor a = torch::rand({n, n}, opts), b = torch::rand({n, n}, opts), c = torch::empty({n, n}, opts);
  Timing t = time_on_gpu([&](CUstream) { torch::matmul_out(c, a, b); }, nullptr, timing_config());
  peak_flops_ = 2.0 * static_cast<double>(n) * n * n / (t.median_ms * 1e-3);
  return peak_flops_;
}

SpeedOfLight Slot::speed_of_light(const Task& task, int w) {
  const Workload& wl = task.workloads[static_cast<size_t>(w)];
  SpeedOfLight s;
  s.bytes = static_cast<double>(task.bytes_moved(wl));
  s.bandwidth = copy_bandwidth();
  s.dram_ms = s.bytes / s.bandwidth * 1e3;
  s.flops = static_cast<double>(graph(task, w).matmul_conv_flops());
  if (s.flops > 0) {
    s.peak = tensor_peak_flops();
    s.compute_ms = s.flops / s.peak * 1e3;
  }
  return s;
}

const Discrimination& Slot::discrimination(const Task& task, int w) {
  auto it = discrimination_.find(key(task, w));
  if (it != discrimination_.end()) return it->second;
  const uint64_t base = opts_.seed;
  const DiscriminationSeeds seeds{trial_seed(base, w, 0), trial_seed(base, w, kTimingDraw), trial_seed(base, w, 1),
                                  trial_seed(base, w, 2)};
  Discrimination d = discriminate_on(task, graph(task, w), task.workloads[static_cast<size_t>(w)], seeds,
                                     torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device_)));
  release_torch_cache();  // its four draws' outputs are gone now
  return discrimination_.emplace(key(task, w), std::move(d)).first->second;
}

// ---- the arena -----------------------------------------------------------------------------------

// The worker unmaps the arena before it is freed: while a process maps it, cuMemFree releases
// nothing, and the larger arena that replaces it would be allocated beside it.
void Slot::free_arena() {
  if (!arena_) return;
  Job job;
  job.id = ++job_id_;
  job.payload = Json{{"op", "unmap"}}.dump();
  job.timeout = std::chrono::seconds(30);
  pool_->submit(std::move(job));
  if (pool_->next_outcome().worker_replaced) ++replaced_;  // a new worker maps nothing
  check_cuda(cuda_api()->cuMemFree(arena_), "cuMemFree(arena)");
  arena_ = 0;
  arena_handle_.clear();
}

void Slot::release_memory() {
  cache_ = std::make_unique<OracleCache>(cache_->capacity());
  free_arena();
  arena_bytes_ = 0;  // the next arena is the size asked, not half as large again as this one
  release_torch_cache();
}

void Slot::ensure_arena(uint64_t bytes) {
  const CudaApi& api = *cuda_api();
  if (arena_ && arena_bytes_ >= bytes) return;
  free_arena();
  uint64_t want = std::max<uint64_t>(align_up(bytes, uint64_t{2} << 20), arena_bytes_ + arena_bytes_ / 2);
  CUresult r = api.cuMemAlloc(&arena_, want);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {  // the oracle's cached references first, then LibTorch's cache
    release_memory();
    r = api.cuMemAlloc(&arena_, want);
  }
  if (r == CUDA_ERROR_OUT_OF_MEMORY && want > bytes) {  // then no room to grow into
    want = align_up(bytes, uint64_t{2} << 20);
    r = api.cuMemAlloc(&arena_, want);
  }
  check_cuda(r, "cuMemAlloc(arena)");
  arena_bytes_ = want;
  CUipcMemHandle h;
  check_cuda(api.cuIpcGetMemHandle(&h, arena_), "cuIpcGetMemHandle");
  arena_handle_ = base64_encode(std::string_view(reinterpret_cast<const char*>(&h), sizeof h));
}

void Slot::prepare(const ResolvedPlan& plan, const Layout& l, const std::vector<const OracleEntry*>& inputs_of) {
  const CudaApi& api = *cuda_api();
  check_cuda(api.cuCtxSynchronize(), "cuCtxSynchronize");
  check_cuda(api.cuMemsetD8Async(arena_, kCanary, l.bytes, nullptr), "cuMemsetD8Async(canary)");
  for (size_t set = 0; set < l.sets.size(); ++set) {
    size_t input = 0;
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      const ResolvedBuffer& b = plan.buffers[i];
      CUdeviceptr at = arena_ + l.sets[set][i];
      if (b.role == ResolvedBuffer::Input) {
        if (set >= inputs_of.size()) continue;  // a set no run uses keeps its canaries
        const torch::Tensor& src = inputs_of[set]->inputs[input++];
        check_cuda(api.cuMemcpyDtoDAsync(at, reinterpret_cast<CUdeviceptr>(src.data_ptr()),
                                         static_cast<size_t>(b.bytes), nullptr),
                   "cuMemcpyDtoDAsync(input)");
      } else {
        Poison p = poison_of(b.dtype);
        fill_pattern(at, static_cast<size_t>(b.bytes), p.word, p.width, nullptr);
      }
    }
  }
  check_cuda(api.cuCtxSynchronize(), "cuCtxSynchronize");
}

Json Slot::poison_list(const ResolvedPlan& plan, const Layout& l, int set) const {
  Json list = Json::array();
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const ResolvedBuffer& b = plan.buffers[i];
    if (b.role == ResolvedBuffer::Input) continue;
    Poison p = poison_of(b.dtype);
    list.push_back({{"offset", l.offsets(set)[i]}, {"bytes", b.bytes}, {"word", p.word}, {"width", p.width}});
  }
  return list;
}

// The worker is another process: the blocks LibTorch keeps cached here are not free to it. Its
// timings allocate an L2 flush buffer, its library steps workspaces; with less than this free,
// the engine hands its cached blocks back to the driver before asking (an H100 with KernelBench's
// 6.4 GB tensors: an arena and two draws leave it a few hundred MB).
constexpr size_t kWorkerHeadroomBytes = size_t{1} << 30;

void Slot::leave_worker_headroom() {
  size_t free_bytes = 0, total = 0;
  if (cuda_api()->cuMemGetInfo(&free_bytes, &total) == CUDA_SUCCESS && free_bytes < kWorkerHeadroomBytes)
    release_torch_cache();
}

std::optional<Failure> Slot::ask(const Json& request, double timeout_s, Json& answer, Measurement& m) {
  leave_worker_headroom();
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
  if (status == "stateful") return Failure{EvalStatus::Stateful, error};
  return Failure{EvalStatus::InternalError, "the GPU worker refused a request: " + error};
}

Json Slot::request(const char* op, const Json& module, const ResolvedPlan& plan, const Layout& l) const {
  return {{"op", op},
          {"module", module},
          {"arena", {{"handle_base64", arena_handle_}, {"bytes", arena_bytes_}}},
          {"plan", resolved_plan_to_json(plan)},
          {"offsets", l.offsets(0)}};
}

std::optional<Failure> Slot::check(const ResolvedPlan& plan, const Layout& l, int set, const OracleEntry& e,
                                   const std::vector<Criterion>& criteria, WorkloadMeasurement& wm,
                                   const std::string& when) {
  size_t in = 0, out = 0;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const ResolvedBuffer& b = plan.buffers[i];
    CUdeviceptr at = arena_ + l.offsets(set)[i];
    if (b.role == ResolvedBuffer::Input) {
      const torch::Tensor& src = e.inputs[in++];
      auto pristine = bytes_of(reinterpret_cast<CUdeviceptr>(src.data_ptr()), static_cast<uint64_t>(b.bytes), device_);
      if (!torch::equal(bytes_of(at, static_cast<uint64_t>(b.bytes), device_), pristine))
        return Failure{EvalStatus::InputModified, std::string("input '") + b.name + "' was modified " + when};
    } else if (b.role == ResolvedBuffer::Output) {
      const Criterion& c = criteria.at(out);
      OutputCheck oc = check_output(at, b, e.outputs[out++], c, device_);
      wm.max_abs_error = std::max(wm.max_abs_error, oc.max_abs);
      wm.max_error_ratio = std::max(wm.max_error_ratio, oc.max_ratio);
      if (oc.status == EvalStatus::Ok) continue;
      wm.worst = oc.worst;
      std::string why = format_violation(oc.worst) + " " + when;
      if (oc.status == EvalStatus::InputIndependent)
        why = "its outputs pass the contract's atol of " + std::to_string(c.tolerance.atol).substr(0, 8) +
              " only because that exceeds the outputs themselves (which zeros pass too); judged at the outputs' "
              "scale: " + why;
      return Failure{oc.status, why};
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

}  // namespace kevo::eval
