// The normalize family's running statistics (templates/normalize/accumulators.cuh) on the CPU: a
// thread that folds a long run of a channel alone (32 threads for a batch norm channel of 10^6
// elements) must keep the mean accurate to about an ulp, since the output subtracts it and
// divides by the spread: for data whose mean is a hundred times its spread, a plain fp32 sum's
// drift became a 1e-3 error in the normalised outputs (KernelBench level 2 #52 on an H100).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cuda_host_shim.h"  // accumulators.cuh is plain C++ apart from CUDA's qualifiers
#include "templates/normalize/accumulators.cuh"

namespace {

using kevo::SoftmaxAcc;
using kevo::SumAcc;
using kevo::WelfordAcc;

// n values uniform in [low, low + 1), the same for every run.
std::vector<float> offset_values(size_t n, float low) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(low, low + 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

double mean_of(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s / static_cast<double>(v.size());
}

double variance_of(const std::vector<float>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (float x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size());
}

// Thread t of `threads` folds elements t, t + threads, ... (one at a time, as the kernels' vector
// loop of width 1 does); the threads' accumulators then merge in thread order.
template <class Acc>
Acc fold(const std::vector<float>& v, int threads) {
  Acc total = Acc::identity();
  for (int t = 0; t < threads; ++t) {
    Acc mine = Acc::identity();
    for (size_t i = static_cast<size_t>(t); i < v.size(); i += static_cast<size_t>(threads)) {
      const float one[1] = {v[i]};
      mine.push(one);
    }
    total = Acc::merge(total, mine);
  }
  return total;
}

constexpr size_t kChannel = 1 << 20;

TEST(NormalizeAccumulators, ALongSumStaysWithinAnUlpOfTheExactSum) {
  const std::vector<float> v = offset_values(kChannel, 30.f);
  const double exact = mean_of(v) * static_cast<double>(v.size());
  for (int threads : {1, 32, 1024}) {
    const double got = fold<SumAcc>(v, threads).total();
    EXPECT_LT(std::abs(got - exact) / exact, 2 * std::numeric_limits<float>::epsilon()) << threads << " threads";
  }
}

TEST(NormalizeAccumulators, WelfordsMeanOfALongOffsetChannelIsAccurateRelativeToItsSpread) {
  const std::vector<float> v = offset_values(kChannel, 30.f);
  const double mean = mean_of(v), var = variance_of(v), std = std::sqrt(var);
  for (int threads : {1, 32, 1024}) {
    const WelfordAcc a = fold<WelfordAcc>(v, threads);
    EXPECT_EQ(a.count, static_cast<float>(kChannel));
    // The normalised outputs' error from the mean: a tenth of the contract's 1e-4 at most.
    EXPECT_LT(std::abs(a.average() - mean) / std, 1e-5) << threads << " threads";
    EXPECT_LT(std::abs(a.deviations() / static_cast<double>(kChannel) - var) / var, 1e-4) << threads << " threads";
  }
}

TEST(NormalizeAccumulators, PackedPartialsMergeToTheSameMean) {
  // A split channel: each chunk's statistics travel packed (float4) and merge in chunk order.
  const std::vector<float> v = offset_values(kChannel, 30.f);
  const double mean = mean_of(v), std = std::sqrt(variance_of(v));
  WelfordAcc total = WelfordAcc::identity();
  const size_t chunk = kChannel / 64;
  for (size_t c = 0; c < 64; ++c) {
    const std::vector<float> part(v.begin() + static_cast<long>(c * chunk), v.begin() + static_cast<long>((c + 1) * chunk));
    total = WelfordAcc::merge(total, WelfordAcc::unpack(fold<WelfordAcc>(part, 32).pack()));
  }
  EXPECT_LT(std::abs(total.average() - mean) / std, 1e-5);
}

TEST(NormalizeAccumulators, OnlineSoftmaxSumOfALongRowIsAccurate) {
  const std::vector<float> v = offset_values(kChannel, -0.5f);
  double max = -1e30, exact = 0;
  for (float x : v) max = std::max(max, static_cast<double>(x));
  for (float x : v) exact += std::exp(static_cast<double>(x) - max);
  const SoftmaxAcc a = fold<SoftmaxAcc>(v, 32);
  EXPECT_EQ(a.max, static_cast<float>(max));
  EXPECT_LT(std::abs(a.total() - exact) / exact, 1e-6);
}

TEST(NormalizeAccumulators, InfinitiesAndNaNsPropagateAsTorchsDo) {
  SumAcc s = SumAcc::identity();
  for (float x : {1.f, std::numeric_limits<float>::infinity(), 2.f}) s.add(x);
  EXPECT_EQ(s.total(), std::numeric_limits<float>::infinity());  // not inf - inf = NaN
  s.add(std::nanf(""));
  EXPECT_TRUE(std::isnan(s.total()));
  // -inf elements add exp(-inf) = 0 to a softmax's sum; a row of them only keeps the identity.
  const float ninf[2] = {-std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  SoftmaxAcc a = SoftmaxAcc::identity();
  a.push(ninf);
  EXPECT_EQ(a.total(), 0.f);
  const float some[2] = {0.f, -std::numeric_limits<float>::infinity()};
  a.push(some);
  EXPECT_EQ(a.total(), 1.f);
}

}  // namespace
