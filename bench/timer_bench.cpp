// The GPU timer against two independent clocks on a ~1 ms copy: CUPTI kernel spans, CUDA events
// and the host's steady clock around synchronised back-to-back launches. Prints which libcupti
// the process loaded and the rate of CUPTI's clock against the host's. Needs a GPU.
#include <cupti.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "eval/builder.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/gpu_timer.h"
#include "eval/kernel_launch.h"

using namespace kevo::eval;

static const char* kCopy = R"(
extern "C" __global__ void copy4(const float4* __restrict__ x, float4* __restrict__ y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = x[i];
}
)";

int main(int argc, char** argv) {
  if (!cuda_api()) {
    std::printf("timer_bench: no GPU: %s\n", cuda_driver_status().error.c_str());
    return 2;
  }
  long long mfloats = argc > 1 ? std::atoll(argv[1]) : 512;
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info);
  std::printf("libcupti: %s\n", info.dli_fname ? info.dli_fname : "?");
  uint32_t cupti_version = 0;
  cuptiGetVersion(&cupti_version);
  std::printf("CUPTI API version %u\n", cupti_version);

  uint64_t c0 = 0, c1 = 0;
  cuptiGetTimestamp(&c0);
  auto h0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cuptiGetTimestamp(&c1);
  auto h1 = std::chrono::steady_clock::now();
  double host_ms = std::chrono::duration<double, std::milli>(h1 - h0).count();
  std::printf("cuptiGetTimestamp over a %.3f ms host interval: %.3f ms (ratio %.4f)\n", host_ms, (c1 - c0) * 1e-6,
              (c1 - c0) * 1e-6 / host_ms);

  use_primary_context(0);
  BuildRequest req;
  req.source = kCopy;
  req.name_expressions = {"copy4"};
  req.arch = device_arch(0);
  req.use_cache = false;
  BuildResult built = build(req);
  if (built.status != BuildStatus::Ok) {
    std::printf("build failed: %s\n", built.error.c_str());
    return 1;
  }
  LoadedModule module(built);
  CUfunction f = module.function("copy4");
  const CudaApi& api = *cuda_api();
  long long n = mfloats << 20;
  CUdeviceptr x = 0, y = 0;
  check_cuda(api.cuMemAlloc(&x, n * 4), "alloc");
  check_cuda(api.cuMemAlloc(&y, n * 4), "alloc");
  check_cuda(api.cuMemsetD8Async(x, 1, n * 4, nullptr), "memset");
  long long n4 = n / 4;
  int sms = 0;
  CUdevice dev;
  api.cuDeviceGet(&dev, 0);
  api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  auto enqueue = [&](CUstream s) {
    void* params[] = {&x, &y, &n4};
    check_cuda(api.cuLaunchKernel(f, sms * 16, 1, 1, 512, 1, 1, 0, s, params, nullptr), "launch");
  };
  for (int round = 0; round < 2; ++round) {
    Timing t = time_on_gpu(enqueue, nullptr);
    std::printf("time_on_gpu: CUPTI median %.4f ms (p20 %.4f p80 %.4f n %d conv %d), events median %.4f ms, "
                "%.0f GB/s by CUPTI\n",
                t.median_ms, t.p20_ms, t.p80_ms, t.n, t.converged, t.event_median_ms,
                8.0 * n / (t.median_ms * 1e-3) / 1e9);
    for (int i = 0; i < 5 && i < t.n; ++i) std::printf("  rep %d: cupti %.4f events %.4f\n", i, t.cupti_ms[i], t.event_ms[i]);
  }
  // Host clock around 50 back-to-back launches (warm L2, no flush): per-launch wall time.
  for (int i = 0; i < 5; ++i) enqueue(nullptr);
  api.cuCtxSynchronize();
  auto w0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) enqueue(nullptr);
  api.cuCtxSynchronize();
  double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count() / 50;
  std::printf("host clock: %.4f ms per launch back to back (%.0f GB/s)\n", wall, 8.0 * n / (wall * 1e-3) / 1e9);
  TimingConfig warm;
  warm.flush_bytes = 1;
  Timing tw = time_on_gpu(enqueue, nullptr, warm);
  std::printf("time_on_gpu, no flush: CUPTI %.4f ms, events %.4f ms\n", tw.median_ms, tw.event_median_ms);
  return 0;
}
