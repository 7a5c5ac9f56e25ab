// CUPTI activity records (concurrent-kernel kind) for per-run GPU time, CUDA events beside them.
#include "eval/gpu_timer.h"

#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <condition_variable>
#include <string>
#include <thread>

#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/nvml.h"

namespace kevo::eval {

namespace {

void check_cupti(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  throw std::runtime_error(std::string(what) + ": " + (text ? text : "CUPTI error"));
}


// Kernel records CUPTI has delivered and no run has taken yet.
struct KernelRecord {
  uint64_t start, end;
  uint32_t device, stream;
  bool kernel;  // else a copy (LibTorch's reference copies tensors with cudaMemcpyAsync)
};
struct KernelLog {
  std::mutex mu;
  std::vector<KernelRecord> records;
};

KernelLog& kernel_log() {
  static KernelLog log;
  return log;
}

constexpr size_t kBufferBytes = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  KernelLog& log = kernel_log();
  CUpti_Activity* record = nullptr;
  {
    std::lock_guard<std::mutex> lock(log.mu);
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      // A forced flush hands over records of work still running with zero timestamps: those
      // are not measurements (another thread's device may have been busy).
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        if (k->start == 0 || k->end < k->start) continue;
        log.records.push_back({k->start, k->end, k->deviceId, k->streamId, true});
      } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        if (c->start == 0 || c->end < c->start) continue;
        log.records.push_back({c->start, c->end, c->deviceId, c->streamId, false});
      }
    }
  }
  std::free(buffer);
}

// Enables kernel records once per process.
void start_cupti() {
  static const bool started = [] {
    check_cupti(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
    check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(kernels)");
    check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(copies)");
    return true;
  }();
  (void)started;
}

struct RunKernels {
  double span_ms = 0;  // first start to last end, kernels and copies
  int count = 0;       // kernels
  int copies = 0;
  int foreign = 0;     // kernels or copies on a stream other than the expected one
};

// The kernels of `device` recorded since the last call for it; other devices' records stay.
RunKernels take_kernels(uint32_t device, int64_t stream_id) {
  check_cupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  KernelLog& log = kernel_log();
  std::lock_guard<std::mutex> lock(log.mu);
  RunKernels run;
  uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0;
  std::vector<KernelRecord> others;
  for (const KernelRecord& r : log.records) {
    if (r.device != device) {
      others.push_back(r);
      continue;
    }
    first = std::min(first, r.start);
    last = std::max(last, r.end);
    ++(r.kernel ? run.count : run.copies);
    if (stream_id >= 0 && r.stream != static_cast<uint32_t>(stream_id)) ++run.foreign;
  }
  log.records.swap(others);
  if (run.count) run.span_ms = static_cast<double>(last - first) * 1e-6;
  return run;
}

size_t l2_bytes() {
  const CudaApi& api = *cuda_api();
  CUdevice dev;
  int l2 = 0;
  check_cuda(api.cuCtxGetDevice(&dev), "cuCtxGetDevice");
  check_cuda(api.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev), "cuDeviceGetAttribute(L2)");
  return l2 > 0 ? static_cast<size_t>(l2) : size_t{128} << 20;
}

// A flag in mapped host memory that the stream waits on: work queued behind it starts only when
// open() runs, or when the watchdog opens it because the enqueue blocked for 2 s (a synchronising
// call inside the enqueue would otherwise wait forever on the closed gate).
class Gate {
 public:
  explicit Gate(const CudaApi& api) : api_(api) {
    void* host = nullptr;
    if (api.cuMemHostAlloc(&host, sizeof(uint32_t), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) !=
        CUDA_SUCCESS)
      return;
    flag_ = static_cast<uint32_t*>(host);
    __atomic_store_n(flag_, 0u, __ATOMIC_SEQ_CST);
    if (api.cuMemHostGetDevicePointer(&device_flag_, flag_, 0) != CUDA_SUCCESS) return;
    watchdog_ = std::thread([this] { watch(); });
  }
  ~Gate() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    if (flag_) api_.cuMemFreeHost(flag_);
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Queues the wait; false when the driver refuses it (the run then goes ungated).
  bool close(CUstream stream) {
    if (!watchdog_.joinable()) return false;
    uint32_t next = generation_ + 1;
    if (api_.cuStreamWaitValue32(stream, device_flag_, next, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) return false;
    std::lock_guard<std::mutex> lock(mu_);
    generation_ = next;
    armed_ = true;
    armed_at_ = std::chrono::steady_clock::now();
    cv_.notify_all();
    return true;
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    __atomic_store_n(flag_, generation_, __ATOMIC_SEQ_CST);
    armed_ = false;
  }
  bool forced() const { return forced_; }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!quit_) {
      if (!armed_) {
        cv_.wait(lock);
        continue;
      }
      if (cv_.wait_until(lock, armed_at_ + std::chrono::seconds(2)) == std::cv_status::timeout && armed_) {
        __atomic_store_n(flag_, generation_, __ATOMIC_SEQ_CST);
        armed_ = false;
        forced_ = true;
      }
    }
  }

  const CudaApi& api_;
  uint32_t* flag_ = nullptr;
  CUdeviceptr device_flag_ = 0;
  uint32_t generation_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, quit_ = false;
  std::atomic<bool> forced_{false};
  std::chrono::steady_clock::time_point armed_at_;
  std::thread watchdog_;
};

}  // namespace

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}


double median_half_width(std::vector<double> s) {
  if (s.size() < 5) return std::numeric_limits<double>::infinity();
  std::sort(s.begin(), s.end());
  double n = static_cast<double>(s.size());
  double spread = 0.98 * std::sqrt(n);
  auto at = [&](double rank) {
    long r = std::lround(rank);
    r = std::max(0L, std::min(r, static_cast<long>(s.size()) - 1));
    return s[static_cast<size_t>(r)];
  };
  return (at(n / 2 + spread) - at(n / 2 - spread - 1)) / 2;
}

Timing time_on_gpu(const std::function<void(CUstream)>& enqueue, CUstream stream, const TimingConfig& cfg) {
  // One timing at a time per process: CUPTI's flush is process-wide, and a flush while another
  // device's timed work runs would hand that work's records over incomplete.
  static std::mutex one_at_a_time;
  std::lock_guard<std::mutex> timing_lock(one_at_a_time);
  const CudaApi* api_ptr = cuda_api();
  if (!api_ptr) throw std::runtime_error(cuda_driver_status().error);
  const CudaApi& api = *api_ptr;
  start_cupti();
  const uint32_t device = static_cast<uint32_t>(current_device());
  int64_t stream_id = -1;
  {
    CUcontext ctx = nullptr;
    uint32_t id = 0;
    if (api.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && cuptiGetStreamIdEx(ctx, stream, 0, &id) == CUPTI_SUCCESS)
      stream_id = id;
  }

  size_t flush_bytes = cfg.flush_bytes ? cfg.flush_bytes : 2 * l2_bytes();
  CUdeviceptr flush = 0;
  check_cuda(api.cuMemAlloc(&flush, flush_bytes), "cuMemAlloc(L2 flush buffer)");
  CUevent begin = nullptr, end = nullptr;
  check_cuda(api.cuEventCreate(&begin, CU_EVENT_DEFAULT), "cuEventCreate");
  check_cuda(api.cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate");

  Timing t;
  t.gated = true;
  t.kernels_min = std::numeric_limits<int>::max();
  auto release = [&] {
    api.cuEventDestroy(begin);
    api.cuEventDestroy(end);
    api.cuMemFree(flush);
  };
  try {
    Gate gate(api);
    uint8_t pattern = 0;
    take_kernels(device, stream_id);  // drop anything recorded before
    auto one_run = [&](bool record) {
      if (cfg.before_each) {
        // Its copies (module memory written back) are not the work under test: finished and
        // taken out of the records before the span opens.
        cfg.before_each(stream);
        check_cuda(api.cuStreamSynchronize(stream), "the work before a run");
        take_kernels(device, stream_id);
      }
      // Writing more than the L2 holds evicts whatever the previous run left there.
      check_cuda(api.cuMemsetD8Async(flush, ++pattern, flush_bytes, stream), "cuMemsetD8Async(L2 flush)");
      bool gated = gate.close(stream);
      t.gated = t.gated && gated;
      try {
        check_cuda(api.cuEventRecord(begin, stream), "cuEventRecord");
        enqueue(stream);
        check_cuda(api.cuEventRecord(end, stream), "cuEventRecord");
      } catch (...) {
        if (gated) gate.open();
        api.cuStreamSynchronize(stream);
        throw;
      }
      if (gated) gate.open();
      check_cuda(api.cuStreamSynchronize(stream), "the timed work");
      // A library may fork work onto streams of its own (cuDNN's grouped convolutions do); the
      // whole context is idle before the records are read, so the span covers that work too.
      check_cuda(api.cuCtxSynchronize(), "the timed work on every stream");
      RunKernels run = take_kernels(device, stream_id);
      if (run.count + run.copies == 0) throw std::runtime_error("CUPTI recorded no kernel or copy in a timed run");
      float event_ms = 0;
      check_cuda(api.cuEventElapsedTime(&event_ms, begin, end), "cuEventElapsedTime");
      t.foreign_stream_kernels += run.foreign;
      if (!record) return;
      t.cupti_ms.push_back(run.span_ms);
      t.event_ms.push_back(event_ms);
      t.kernels_min = std::min(t.kernels_min, run.count);
      t.kernels_max = std::max(t.kernels_max, run.count);
      t.copies_max = std::max(t.copies_max, run.copies);
    };
    // A kernel of tens of milliseconds is warm after one run; a short one gets all of `warmup`.
    const auto warming = std::chrono::steady_clock::now();
    for (int i = 0; i < cfg.warmup; ++i) {
      one_run(false);
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - warming).count() >= cfg.warmup_seconds) break;
    }
    auto start = std::chrono::steady_clock::now();
    while (static_cast<int>(t.cupti_ms.size()) < std::max(cfg.max_reps, 1)) {
      one_run(true);
      if (static_cast<int>(t.cupti_ms.size()) < cfg.min_reps) continue;
      double median = quantile(t.cupti_ms, 0.5);
      if (median_half_width(t.cupti_ms) <= cfg.target_half_width * median) {
        t.converged = true;
        break;
      }
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > cfg.max_seconds) break;
    }
    t.gated = t.gated && !gate.forced();
  } catch (...) {
    release();
    throw;
  }
  release();
  GpuState state = gpu_state(current_pci_bus_id());
  t.sm_clock_mhz = state.sm_clock_mhz;
  t.temperature_c = state.temperature_c;
  t.n = static_cast<int>(t.cupti_ms.size());
  t.median_ms = quantile(t.cupti_ms, 0.5);
  t.p20_ms = quantile(t.cupti_ms, 0.2);
  t.p80_ms = quantile(t.cupti_ms, 0.8);
  t.half_width_ms = median_half_width(t.cupti_ms);
  t.event_median_ms = quantile(t.event_ms, 0.5);
  if (t.kernels_min == std::numeric_limits<int>::max()) t.kernels_min = 0;
  return t;
}

}  // namespace kevo::eval
