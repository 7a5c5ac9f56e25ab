// CUPTI activity records (concurrent-kernel kind) for per-run GPU time, CUDA events beside them.
#include "eval/gpu_timer.h"

#include <cupti.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"

namespace kevo::eval {

namespace {

void check_cupti(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  throw std::runtime_error(std::string(what) + ": " + (text ? text : "CUPTI error"));
}

// Kernel [start, end) intervals CUPTI has delivered since the last take().
struct KernelLog {
  std::mutex mu;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
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
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      log.spans.emplace_back(k->start, k->end);
    }
  }
  std::free(buffer);
}

// Enables kernel records once per process.
void start_cupti() {
  static const bool started = [] {
    check_cupti(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
    check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
    return true;
  }();
  (void)started;
}

// The kernels recorded since the last call: (span from first start to last end in ms, count).
std::pair<double, int> take_kernels() {
  check_cupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  KernelLog& log = kernel_log();
  std::lock_guard<std::mutex> lock(log.mu);
  if (log.spans.empty()) return {0.0, 0};
  uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0;
  for (const auto& [s, e] : log.spans) {
    first = std::min(first, s);
    last = std::max(last, e);
  }
  int count = static_cast<int>(log.spans.size());
  log.spans.clear();
  return {static_cast<double>(last - first) * 1e-6, count};
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

size_t l2_bytes() {
  const CudaApi& api = *cuda_api();
  CUdevice dev;
  int l2 = 0;
  check_cuda(api.cuDeviceGet(&dev, 0), "cuDeviceGet");
  check_cuda(api.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev), "cuDeviceGetAttribute(L2)");
  return l2 > 0 ? static_cast<size_t>(l2) : size_t{128} << 20;
}

}  // namespace

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
  const CudaApi* api_ptr = cuda_api();
  if (!api_ptr) throw std::runtime_error(cuda_driver_status().error);
  const CudaApi& api = *api_ptr;
  start_cupti();

  size_t flush_bytes = cfg.flush_bytes ? cfg.flush_bytes : 2 * l2_bytes();
  CUdeviceptr flush = 0;
  check_cuda(api.cuMemAlloc(&flush, flush_bytes), "cuMemAlloc(L2 flush buffer)");
  CUevent begin = nullptr, end = nullptr;
  check_cuda(api.cuEventCreate(&begin, CU_EVENT_DEFAULT), "cuEventCreate");
  check_cuda(api.cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate");

  Timing t;
  auto release = [&] {
    api.cuEventDestroy(begin);
    api.cuEventDestroy(end);
    api.cuMemFree(flush);
  };
  try {
    uint8_t pattern = 0;
    auto one_run = [&](bool record) {
      // Writing more than the L2 holds evicts whatever the previous run left there.
      check_cuda(api.cuMemsetD8Async(flush, ++pattern, flush_bytes, stream), "cuMemsetD8Async(L2 flush)");
      check_cuda(api.cuStreamSynchronize(stream), "cuStreamSynchronize(after the flush)");
      take_kernels();  // drop anything recorded before this run
      check_cuda(api.cuEventRecord(begin, stream), "cuEventRecord");
      enqueue(stream);
      check_cuda(api.cuEventRecord(end, stream), "cuEventRecord");
      check_cuda(api.cuStreamSynchronize(stream), "the timed work");
      auto [span_ms, kernels] = take_kernels();
      if (kernels == 0) throw std::runtime_error("CUPTI recorded no kernel in a timed run");
      float event_ms = 0;
      check_cuda(api.cuEventElapsedTime(&event_ms, begin, end), "cuEventElapsedTime");
      if (!record) return;
      t.cupti_ms.push_back(span_ms);
      t.event_ms.push_back(event_ms);
      t.kernels_per_run = kernels;
    };
    for (int i = 0; i < cfg.warmup; ++i) one_run(false);
    auto start = std::chrono::steady_clock::now();
    while (static_cast<int>(t.cupti_ms.size()) < cfg.max_reps) {
      one_run(true);
      if (static_cast<int>(t.cupti_ms.size()) < cfg.min_reps) continue;
      double median = quantile(t.cupti_ms, 0.5);
      if (median_half_width(t.cupti_ms) <= cfg.target_half_width * median) {
        t.converged = true;
        break;
      }
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > cfg.max_seconds) break;
    }
  } catch (...) {
    release();
    throw;
  }
  release();
  t.n = static_cast<int>(t.cupti_ms.size());
  t.median_ms = quantile(t.cupti_ms, 0.5);
  t.p20_ms = quantile(t.cupti_ms, 0.2);
  t.p80_ms = quantile(t.cupti_ms, 0.8);
  t.half_width_ms = median_half_width(t.cupti_ms);
  t.event_median_ms = quantile(t.event_ms, 0.5);
  return t;
}

}  // namespace kevo::eval
