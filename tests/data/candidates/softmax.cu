// Row softmax for task 03_softmax (x[B, D] -> y[B, D], fp32): one block per row. A first pass
// keeps an online (max, sum of exp) pair per thread (Milakov & Gimelshein, 2018), so the row is
// read once for both; the block merges the pairs; a second pass writes exp(x - max) / sum.
// Rows load as float4 when D % 4 == 0 (and the pointers are 16-byte aligned), else as scalars.
/* kevo-plan
{
  "name": "softmax_online_v1",
  "task": "softmax",
  "plan": {
    "steps": [
      {"kernel": "softmax_rows<256>", "grid": ["B"], "block": [256], "args": ["x", "y", {"int": "D"}]}
    ]
  }
}
*/

// No headers: NVRTC compiles this without the CUDA runtime's include path.
#define KEVO_NEG_INF __int_as_float(0xff800000)

// A running maximum and the sum of exp(v - m) over the values seen so far.
struct MaxSum {
  float m;
  float s;
};

__device__ __forceinline__ void push(MaxSum& acc, float v) {
  if (v > acc.m) {
    acc.s = acc.s * expf(acc.m - v) + 1.f;  // rescale the old sum to the new maximum
    acc.m = v;
  } else {
    acc.s += expf(v - acc.m);
  }
}

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  // A side that saw no element has m = -inf and s = 0; skipping it avoids (-inf) - (-inf) = NaN.
  const float sa = a.s == 0.f ? 0.f : a.s * expf(a.m - m);
  const float sb = b.s == 0.f ? 0.f : b.s * expf(b.m - m);
  return {m, sa + sb};
}

__device__ __forceinline__ MaxSum warp_merge(MaxSum v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    MaxSum other{__shfl_xor_sync(0xffffffffu, v.m, offset), __shfl_xor_sync(0xffffffffu, v.s, offset)};
    v = merge(v, other);
  }
  return v;
}

// Merges every thread's pair; all threads get the row's (max, sum).
template <int kThreads>
__device__ MaxSum block_merge(MaxSum v) {
  constexpr int kWarps = kThreads / 32;
  __shared__ MaxSum per_warp[kWarps];
  __shared__ MaxSum row;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_merge(v);
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = warp_merge(lane < kWarps ? per_warp[lane] : MaxSum{KEVO_NEG_INF, 0.f});
    if (lane == 0) row = v;
  }
  __syncthreads();
  return row;
}

template <int kThreads>
__global__ void __launch_bounds__(kThreads) softmax_rows(const float* __restrict__ x, float* __restrict__ y, int d) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
  const long long offset = static_cast<long long>(blockIdx.x) * d;
  const float* xr = x + offset;
  float* yr = y + offset;
  const bool vec = d % 4 == 0 && reinterpret_cast<unsigned long long>(xr) % 16 == 0 &&
                   reinterpret_cast<unsigned long long>(yr) % 16 == 0;

  MaxSum acc{KEVO_NEG_INF, 0.f};
  if (vec) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    for (int i = threadIdx.x; i < d / 4; i += kThreads) {
      const float4 v = x4[i];
      push(acc, v.x);
      push(acc, v.y);
      push(acc, v.z);
      push(acc, v.w);
    }
  } else {
    for (int i = threadIdx.x; i < d; i += kThreads) push(acc, xr[i]);
  }

  const MaxSum total = block_merge<kThreads>(acc);
  const float inv_sum = 1.f / total.s;
  if (vec) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    float4* y4 = reinterpret_cast<float4*>(yr);
    for (int i = threadIdx.x; i < d / 4; i += kThreads) {
      const float4 v = x4[i];
      y4[i] = make_float4(expf(v.x - total.m) * inv_sum, expf(v.y - total.m) * inv_sum, expf(v.z - total.m) * inv_sum,
                          expf(v.w - total.m) * inv_sum);
    }
  } else {
    for (int i = threadIdx.x; i < d; i += kThreads) yr[i] = expf(xr[i] - total.m) * inv_sum;
  }
}
