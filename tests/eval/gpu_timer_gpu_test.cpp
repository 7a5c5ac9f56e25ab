// The timer on a ~1 ms copy kernel: CUPTI's kernel time and CUDA events agree within 3%, and two
// measurements of the same kernel agree within 2% (cold L2 each repetition).
#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <cmath>
#include <cstdio>

#include "eval/builder.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/gpu_timer.h"
#include "eval/kernel_launch.h"

namespace kevo::eval {
namespace {

constexpr const char* kCopy = R"(
extern "C" __global__ void copy4(const float4* __restrict__ x, float4* __restrict__ y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = x[i];
}
)";

TEST(GpuTimer, CuptiAndEventsAgreeAndRepeatedMeasurementsAgree) {
  if (!cuda_api()) GTEST_SKIP() << "no CUDA GPU: " << cuda_driver_status().error;
  if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA GPU";
  BuildRequest req;
  req.source = kCopy;
  req.name_expressions = {"copy4"};
  req.arch = device_arch(0);
  req.use_cache = false;
  BuildResult built = build(req);
  ASSERT_EQ(built.status, BuildStatus::Ok) << built.error << "\n" << built.log;

  // 512 Mi floats each way: 4.3 GB moved, about 1 ms at the H200's copy bandwidth.
  const int64_t n = int64_t{512} << 20;
  torch::Tensor x = torch::rand({n}, torch::kCUDA), y = torch::zeros({n}, torch::kCUDA);
  torch::cuda::synchronize();
  use_primary_context(0);
  LoadedModule module(built);
  CUfunction f = module.function("copy4");
  CUdeviceptr px = reinterpret_cast<CUdeviceptr>(x.data_ptr()), py = reinterpret_cast<CUdeviceptr>(y.data_ptr());
  long long n4 = n / 4;
  auto enqueue = [&](CUstream s) {
    void* params[] = {&px, &py, &n4};
    check_cuda(cuda_api()->cuLaunchKernel(f, 132 * 16, 1, 1, 512, 1, 1, 0, s, params, nullptr), "cuLaunchKernel");
  };
  Timing a = time_on_gpu(enqueue, nullptr);
  Timing b = time_on_gpu(enqueue, nullptr);
  ASSERT_TRUE(torch::equal(x, y));

  double gbps = 2.0 * 4.0 * static_cast<double>(n) / (a.median_ms * 1e-3) / 1e9;
  std::printf("copy4 %.1f GB moved: CUPTI median %.4f ms (p20 %.4f, p80 %.4f, n %d, +-%.4f), events %.4f ms; "
              "again %.4f ms; %.0f GB/s\n",
              8.0 * n / 1e9, a.median_ms, a.p20_ms, a.p80_ms, a.n, a.half_width_ms, a.event_median_ms, b.median_ms,
              gbps);
  EXPECT_EQ(a.kernels_min, 1);
  EXPECT_GT(a.median_ms, 0.3);
  EXPECT_LT(a.median_ms, 5.0);
  EXPECT_LT(std::fabs(a.event_median_ms - a.median_ms) / a.median_ms, 0.03);
  EXPECT_LT(std::fabs(b.median_ms - a.median_ms) / a.median_ms, 0.02);
  EXPECT_TRUE(a.converged) << "median not within 1% after " << a.n << " runs";
}

}  // namespace
}  // namespace kevo::eval
