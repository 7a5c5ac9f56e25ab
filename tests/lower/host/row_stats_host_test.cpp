// The gemm family's row statistics (templates/gemm/row_stats.cuh) run on the CPU: the epilogue's
// per-(row, N tile) partials of a stored [M, N] result, then the second kernel combining them,
// must give torch's softmax, log_softmax and logsumexp over N (computed here in double), for N
// that the tile width divides and N that ends in a partial tile, rows with large and -inf
// values, and every thread shape of the second kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cuda_host_shim.h"  // row_stats.cuh is plain C++ apart from CUDA's qualifiers
#include "templates/gemm/row_stats.cuh"

namespace {

// The epilogue's pass over every tile of x [M, N] (blocks of kThreads epilogue threads), as
// Epilogue::run calls RowExpStats::tile once the tile is stored.
template <int kBM, int kBN, int kThreads>
std::vector<kevo::ExpStat> partials(const std::vector<float>& x, int M, int N) {
  const int tiles_m = (M + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN;
  std::vector<kevo::ExpStat> part(static_cast<size_t>(M) * tiles_n, kevo::ExpStat{-7.f, -7.f});  // poisoned
  const kevo::RowExpStats::Params p{part.data()};
  kevo_host_run(static_cast<unsigned>(tiles_m * tiles_n), kThreads, [&] {
    const int tm = static_cast<int>(blockIdx.x) / tiles_n, tn = static_cast<int>(blockIdx.x) % tiles_n;
    kevo::RowExpStats::tile<kBM, kBN, kThreads>(p, x.data(), M, N, tm * kBM, tn * kBN);
  });
  return part;
}

template <kevo::RowOp kOp, int kThreads, int kRows, int kVec>
std::vector<float> finish(const std::vector<float>& x, const std::vector<kevo::ExpStat>& part, int M, int N, int parts) {
  std::vector<float> y(kOp == kevo::RowOp::LogSumExp ? M : static_cast<size_t>(M) * N, std::nanf(""));
  kevo_host_run(static_cast<unsigned>((M + kRows - 1) / kRows), kThreads * kRows, [&] {
    kevo::row_stats_finish<kOp, kThreads, kRows, kVec>(x.data(), part.data(), y.data(), M, N, parts);
  });
  return y;
}

// torch's definitions, in double.
std::vector<double> expected(kevo::RowOp op, const std::vector<float>& x, int M, int N) {
  std::vector<double> y;
  for (int r = 0; r < M; ++r) {
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (int c = 0; c < N; ++c) m = std::max(m, double(x[r * N + c]));
    for (int c = 0; c < N; ++c) s += std::exp(x[r * N + c] - m);
    if (op == kevo::RowOp::LogSumExp) y.push_back(m + std::log(s));
    for (int c = 0; op != kevo::RowOp::LogSumExp && c < N; ++c)
      y.push_back(op == kevo::RowOp::Softmax ? std::exp(x[r * N + c] - m) / s : x[r * N + c] - m - std::log(s));
  }
  return y;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {  // log_softmax of -inf
      ASSERT_EQ(got[i], want[i]) << what << " at " << i;
      continue;
    }
    ASSERT_NEAR(got[i], want[i], 1e-6 + 1e-5 * std::abs(want[i])) << what << " at " << i;
  }
}

std::vector<float> random_rows(int M, int N, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-8.f, 8.f);
  std::vector<float> x(static_cast<size_t>(M) * N);
  for (float& v : x) v = u(rng);
  if (M > 2) {
    for (int c = 0; c < N; ++c) x[N + c] += 80.f;  // large values: exp without the max would overflow
    x[2 * N] = -std::numeric_limits<float>::infinity();  // exp(-inf) = 0 must not turn into NaN
  }
  return x;
}

template <kevo::RowOp kOp, int kThreads, int kRows, int kVec>
void check(int M, int N, const char* what) {
  const std::vector<float> x = random_rows(M, N, 1000 * M + N);
  constexpr int kBN = 64;
  const std::vector<kevo::ExpStat> part = partials<32, kBN, 64>(x, M, N);
  const std::vector<float> y = finish<kOp, kThreads, kRows, kVec>(x, part, M, N, (N + kBN - 1) / kBN);
  expect_close(y, expected(kOp, x, M, N),
               std::string(what) + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " threads=" + std::to_string(kThreads) +
                   " rows=" + std::to_string(kRows) + " vec=" + std::to_string(kVec));
}

TEST(RowStatsHost, SoftmaxFromTheEpiloguesPartialsMatchesTorchsDefinition) {
  check<kevo::RowOp::Softmax, 32, 1, 1>(5, 64, "softmax");
  check<kevo::RowOp::Softmax, 64, 2, 2>(7, 90, "softmax, a partial last tile");
  check<kevo::RowOp::Softmax, 128, 1, 4>(3, 300, "softmax");
  check<kevo::RowOp::Softmax, 32, 4, 2>(9, 10, "softmax, a row shorter than a tile");
}

TEST(RowStatsHost, LogSoftmaxAndLogSumExpFromThePartialsMatchTorchsDefinitions) {
  check<kevo::RowOp::LogSoftmax, 64, 1, 2>(6, 130, "log_softmax");
  check<kevo::RowOp::LogSoftmax, 32, 2, 1>(4, 33, "log_softmax, odd N");
  check<kevo::RowOp::LogSumExp, 32, 1, 1>(5, 90, "logsumexp");
  check<kevo::RowOp::LogSumExp, 128, 2, 1>(7, 500, "logsumexp");
}

// Every row of a partial last row tile (M not a multiple of kBM) gets its partials, and only
// rows inside the matrix are written.
TEST(RowStatsHost, PartialTilesWriteEveryRowsPartialsAndNothingPastTheMatrix) {
  const int M = 37, N = 90, kBN = 64, tiles_n = 2;
  const std::vector<float> x = random_rows(M, N, 5);
  const std::vector<kevo::ExpStat> part = partials<32, kBN, 64>(x, M, N);
  for (int r = 0; r < M; ++r)
    for (int t = 0; t < tiles_n; ++t) {
      double m = -INFINITY, s = 0;
      for (int c = t * kBN; c < std::min(N, (t + 1) * kBN); ++c) m = std::max(m, double(x[r * N + c]));
      for (int c = t * kBN; c < std::min(N, (t + 1) * kBN); ++c) s += std::exp(x[r * N + c] - m);
      const kevo::ExpStat& p = part[static_cast<size_t>(r) * tiles_n + t];
      ASSERT_EQ(p.max, static_cast<float>(m)) << r << " " << t;
      ASSERT_NEAR(p.sum, s, 1e-5 * s) << r << " " << t;
    }
}

}  // namespace
