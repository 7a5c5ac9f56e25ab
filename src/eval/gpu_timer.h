// Cold-cache GPU timing: L2 flushed before every repetition, per-kernel GPU time from CUPTI
// activity records, CUDA events as a cross-check, repetitions until the median is stable
// (eval/ only: brings in cuda.h).
#pragma once

#include <cuda.h>

#include <functional>
#include <vector>

namespace kevo::eval {

struct TimingConfig {
  int warmup = 3;                    // runs before the timed ones, at most; more than one only while
  double warmup_seconds = 0.025;     // the warm-ups so far took less than this (Triton's do_bench warms up for 25 ms)
  int min_reps = 10;
  int max_reps = 500;
  double target_half_width = 0.01;  // stop once the median's 95% interval is within ±1% of it
  double max_seconds = 20;          // of repetitions, flushes included
  size_t flush_bytes = 0;           // 0: twice the device's L2
  // Queued before each repetition's flush, outside the timed span and out of the records (the
  // runner poisons the outputs and scratch here and the worker writes module memory back, so
  // that the last repetition's outputs can be checked afterwards and nothing carries over).
  std::function<void(CUstream)> before_each;
};

struct Timing {
  double median_ms = 0, p20_ms = 0, p80_ms = 0;  // CUPTI: first kernel (or copy) start to last end
  double half_width_ms = 0;                       // of the median's 95% interval
  int n = 0;
  bool converged = false;
  double event_median_ms = 0;                     // CUDA events around the same runs
  bool gated = false;                             // the work was queued before the GPU started it
  int kernels_min = 0, kernels_max = 0;           // per repetition, as CUPTI saw them
  int copies_max = 0;                             // device copies per repetition (counted in the span)
  int foreign_stream_kernels = 0;                 // kernels or copies on a stream other than `stream` (all reps)
  unsigned sm_clock_mhz = 0, temperature_c = 0;   // NVML, right after the last repetition
  std::vector<double> cupti_ms, event_ms;         // every repetition
};

// Times `enqueue`, which must queue the work under test on `stream`, in the current context.
// Each repetition: before_each, the L2 flush, then a gate (a stream wait on a host flag) so
// that the work is queued whole before the GPU starts it: neither the events nor the CUPTI span
// then include host launch latency. Only kernels of the current device count; timings in one
// process run one at a time (CUPTI's buffers are process-wide). Throws
// std::runtime_error when CUPTI or the driver fails, or when a repetition records no kernel.
Timing time_on_gpu(const std::function<void(CUstream)>& enqueue, CUstream stream, const TimingConfig& config = {});

// The 95% confidence half-width of the median of `samples` from order statistics
// (ranks n/2 ± 0.98·√n), in the samples' unit; infinite below 5 samples.
double median_half_width(std::vector<double> samples);

// Quantile q in [0, 1] of `samples` by linear interpolation; 0 for none.
double quantile(std::vector<double> samples, double q);

}  // namespace kevo::eval
