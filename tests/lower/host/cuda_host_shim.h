// Just enough of CUDA for a generic-family candidate to run as host C++ (the host emulation test):
// each CUDA thread of a block is a std::thread, __syncthreads a barrier, a shuffle an exchange
// through memory between two barriers, __shared__ a static (blocks run one after another).
#pragma once

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
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

// Runs body() on `block` threads for blocks [first, last) of a grid of `grid` blocks (the shim's
// model of a launch): every thread runs the blocks in order, with a barrier after each block.
template <typename Body>
inline void kevo_host_run(unsigned grid, unsigned block, Body&& body, unsigned first = 0, unsigned last = ~0u) {
  std::barrier<> bar(block);
  kevo_host_barrier = &bar;
  blockDim = {block, 1, 1};
  gridDim = {grid, 1, 1};
  last = std::min(last, grid);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < block; ++t)
    threads.emplace_back([&, t] {
      threadIdx = {t, 0, 0};
      for (unsigned b = first; b < last; ++b) {
        blockIdx = {b, 0, 0};
        body();
        bar.arrive_and_wait();
      }
    });
  for (auto& th : threads) th.join();
  kevo_host_barrier = nullptr;  // the barrier was this call's
}

// Launches `kernel` (whose parameters are all pointers or long long, at most kevo_host_max_args:
// a generic candidate with many reductions split over blocks passes two buffers each) over grid x
// block.
constexpr int kevo_host_max_args = 64;
template <size_t... I>
inline void kevo_host_call(void* fn, const uint64_t* a, std::index_sequence<I...>) {
  using Kernel = void (*)(decltype(I, uint64_t{})...);
  reinterpret_cast<Kernel>(fn)(a[I]...);
}
extern "C" int kevo_host_launch(void* fn, unsigned grid, unsigned block, const uint64_t* a, int n) {
  if (n > kevo_host_max_args || block > 1024) return 1;
  uint64_t args[kevo_host_max_args] = {};
  for (int i = 0; i < n; ++i) args[i] = a[i];
  kevo_host_run(grid, block, [&] { kevo_host_call(fn, args, std::make_index_sequence<kevo_host_max_args>{}); });
  return 0;
}
