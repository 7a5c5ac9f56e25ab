// kevo template family "normalize", accumulators: the running statistics of a row (max, sum,
// online softmax, Welford). Each has identity(), push(v) for a vector of elements, merge(a, b), and
// packs into a float4 to travel through shuffles, shared memory and split partials.
//
// Sums and means are compensated (kahan_add, common.cuh): a thread may fold tens of thousands of
// terms of a long channel (batch norm over N x H x W), and a plain fp32 sum's error there, about
// sqrt(n) ulps, is amplified by |mean| / std once the mean is subtracted (KernelBench level 2
// #52's batch norm after a conv: 1.0e-3 off on one channel of 1.0e6 terms, with 32 threads).
#pragma once

#include "../common.cuh"

namespace kevo {

// TwoPass: one pass per statistic (max then sum of exp; mean then variance); SinglePass: all
// statistics in one read (online softmax, Welford).
enum class StatsAlgo { TwoPass = 0, SinglePass = 1 };

__device__ __forceinline__ float neg_inf() { return -__int_as_float(0x7f800000); }

struct MaxAcc {
  float max;
  static __device__ __forceinline__ MaxAcc identity() { return {neg_inf()}; }
  template <int kVec>
  __device__ __forceinline__ void push(const float (&v)[kVec]) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) max = Max::combine(max, v[k]);
  }
  static __device__ __forceinline__ MaxAcc merge(MaxAcc a, MaxAcc b) { return {Max::combine(a.max, b.max)}; }
  __device__ __forceinline__ float4 pack() const { return make_float4(max, 0.f, 0.f, 0.f); }
  static __device__ __forceinline__ MaxAcc unpack(float4 t) { return {t.x}; }
};

// A compensated sum: total() = sum - carry.
struct SumAcc {
  float sum, carry;
  static __device__ __forceinline__ SumAcc identity() { return {0.f, 0.f}; }
  __device__ __forceinline__ void add(float term) { kahan_add(sum, carry, term); }
  template <int kVec>
  __device__ __forceinline__ void push(const float (&v)[kVec]) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) add(v[k]);
  }
  static __device__ __forceinline__ SumAcc merge(SumAcc a, SumAcc b) {
    a.add(b.sum);
    a.add(-b.carry);
    return a;
  }
  __device__ __forceinline__ float total() const { return sum - carry; }
  __device__ __forceinline__ float4 pack() const { return make_float4(sum, carry, 0.f, 0.f); }
  static __device__ __forceinline__ SumAcc unpack(float4 t) { return {t.x, t.y}; }
};

// Online softmax (Milakov & Gimelshein, 2018): the maximum so far and the compensated sum of
// exp(v - max). Exponents are taken against max, or 0 while max is -inf, so -inf elements add 0
// (not NaN).
struct SoftmaxAcc {
  float max, sum, carry;
  static __device__ __forceinline__ float shift(float m) { return m == neg_inf() ? 0.f : m; }
  static __device__ __forceinline__ SoftmaxAcc identity() { return {neg_inf(), 0.f, 0.f}; }
  template <int kVec>
  __device__ __forceinline__ void push(const float (&v)[kVec]) {
    float m = max;
#pragma unroll
    for (int k = 0; k < kVec; ++k) m = Max::combine(m, v[k]);
    const float s = shift(m), rescale = expf(max - s);  // the old sum, to the new maximum
    sum *= rescale, carry *= rescale;
#pragma unroll
    for (int k = 0; k < kVec; ++k) kahan_add(sum, carry, expf(v[k] - s));
    max = m;
  }
  static __device__ __forceinline__ SoftmaxAcc merge(SoftmaxAcc a, SoftmaxAcc b) {
    const float m = Max::combine(a.max, b.max), s = shift(m), ea = expf(a.max - s), eb = expf(b.max - s);
    SoftmaxAcc r{m, a.sum * ea, a.carry * ea};
    kahan_add(r.sum, r.carry, b.sum * eb);
    kahan_add(r.sum, r.carry, -b.carry * eb);
    return r;
  }
  __device__ __forceinline__ float total() const { return sum - carry; }
  __device__ __forceinline__ float4 pack() const { return make_float4(max, sum, carry, 0.f); }
  static __device__ __forceinline__ SoftmaxAcc unpack(float4 t) { return {t.x, t.y, t.z}; }
};

// Welford's count, mean and sum of squared deviations; vectors and partial results combine with
// Chan's formula, which stays accurate for long rows whose mean is far from zero. The mean and
// the sum of squared deviations are compensated (average() = mean - carry, deviations() = m2 -
// m2_carry): both are running sums of small steps. m2's carry stays in the thread (pack() folds
// it in): merges across threads and CTAs are few.
struct WelfordAcc {
  float count, mean, m2, carry, m2_carry;
  static __device__ __forceinline__ WelfordAcc identity() { return {0.f, 0.f, 0.f, 0.f, 0.f}; }
  template <int kVec>
  __device__ __forceinline__ void push(const float (&v)[kVec]) {
    float vmean = 0.f;
#pragma unroll
    for (int k = 0; k < kVec; ++k) vmean += v[k];
    vmean *= 1.f / kVec;
    float vm2 = 0.f;
#pragma unroll
    for (int k = 0; k < kVec; ++k) vm2 += (v[k] - vmean) * (v[k] - vmean);
    *this = merge(*this, {static_cast<float>(kVec), vmean, vm2, 0.f, 0.f});
  }
  static __device__ __forceinline__ WelfordAcc merge(WelfordAcc a, WelfordAcc b) {
    if (b.count == 0.f) return a;
    if (a.count == 0.f) return b;
    const float count = a.count + b.count, delta = (b.mean - a.mean) - (b.carry - a.carry), f = b.count / count;
    WelfordAcc r = a;
    r.count = count;
    kahan_add(r.mean, r.carry, delta * f);
    kahan_add(r.m2, r.m2_carry, b.deviations() + delta * delta * a.count * f);
    return r;
  }
  __device__ __forceinline__ float average() const { return mean - carry; }
  __device__ __forceinline__ float deviations() const { return m2 - m2_carry; }
  __device__ __forceinline__ float4 pack() const { return make_float4(count, mean, deviations(), carry); }
  static __device__ __forceinline__ WelfordAcc unpack(float4 t) { return {t.x, t.y, t.z, t.w, 0.f}; }
};

}  // namespace kevo
