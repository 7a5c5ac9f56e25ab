// Just enough of CUDA for a generic-family candidate to run as host C++ (the host emulation test):
// each CUDA thread of a block is a std::thread, __syncthreads a barrier, a shuffle an exchange
// through memory between two barriers, __shared__ a static (blocks run one after another).
#pragma once

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
#define __launch_bounds__(...)

struct kevo_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local kevo_dim3 threadIdx, blockIdx;
inline kevo_dim3 blockDim, gridDim;
inline std::barrier<>* kevo_host_barrier = nullptr;
inline std::vector<uint64_t> kevo_host_exchange(1024);

inline void __syncthreads() { kevo_host_barrier->arrive_and_wait(); }

template <typename T>
inline T __shfl_xor_sync(unsigned, T v, int offset, int = 32) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  kevo_host_exchange[threadIdx.x] = bits;
  __syncthreads();
  const uint64_t other = kevo_host_exchange[threadIdx.x ^ static_cast<unsigned>(offset)];
  __syncthreads();
  T out;
  std::memcpy(&out, &other, sizeof(T));
  return out;
}

inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
inline float rsqrtf(float x) { return 1.f / std::sqrt(x); }
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T __ldcs(const T* p) { return *p; }

// Launches `kernel` (whose parameters are all pointers or long long) over grid x block: every
// thread of the block runs the grid's blocks in order, with a barrier between blocks.
using kevo_host_kernel = void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                                  uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                                  uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                                  uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
extern "C" int kevo_host_launch(void* fn, unsigned grid, unsigned block, const uint64_t* a, int n) {
  if (n > 32 || block > 1024) return 1;
  uint64_t args[32] = {};
  for (int i = 0; i < n; ++i) args[i] = a[i];
  std::barrier<> bar(block);
  kevo_host_barrier = &bar;
  blockDim = {block, 1, 1};
  gridDim = {grid, 1, 1};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < block; ++t)
    threads.emplace_back([&, t] {
      threadIdx = {t, 0, 0};
      for (unsigned b = 0; b < grid; ++b) {
        blockIdx = {b, 0, 0};
        reinterpret_cast<kevo_host_kernel>(fn)(args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7],
                                               args[8], args[9], args[10], args[11], args[12], args[13], args[14], args[15],
                                               args[16], args[17], args[18], args[19], args[20], args[21], args[22], args[23],
                                               args[24], args[25], args[26], args[27], args[28], args[29], args[30], args[31]);
        bar.arrive_and_wait();
      }
    });
  for (auto& th : threads) th.join();
  return 0;
}
