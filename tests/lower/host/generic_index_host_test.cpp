// The generic family's loops with 32-bit indices at the top of their range, on the CPU: the last
// blocks of a grid over almost 2^31 outputs must store each of their outputs once and nothing
// else. The stride of a one-pass grid is about the output count, so `base + stride` passes 2^31;
// on the H200 a wrapped index walked back into the buffers (KernelBench's L2 norm over
// 32768 x 65535 floats: an illegal address). Built with -fwrapv, so that an overflow wraps here
// as it does on the GPU instead of being undefined.
#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "cuda_host_shim.h"  // generic.cuh is plain C++ apart from CUDA's qualifiers
#include "templates/generic/generic.cuh"

namespace {

// One output summed by one thread over `terms` terms of 1: plain fp32 adds stall at 2^24.
struct OnesBody {
  struct Params {
    float* out;
  };
  using Op = kevo::GSum;
  struct Out {};
  static Out at(const Params&, int) { return {}; }
  static float term(const Params&, const Out&, int) { return 1.f; }
  static void store(const Params& p, const Out&, float v, int) { *p.out = v; }
};

// Every output a kernel stores, by index (the body of a map kernel: one term per output).
struct Stores {
  std::mutex m;
  std::map<long long, int> count;
};

struct RecordingBody {
  struct Params {
    Stores* stores;
  };
  using Op = kevo::GSum;
  struct Out {
    int i;
  };
  static Out at(const Params&, int f) { return {f}; }
  static float term(const Params&, const Out&, int) { return 1.f; }
  static void store(const Params& p, const Out& o, float, int) {
    std::lock_guard<std::mutex> lock(p.stores->m);
    ++p.stores->count[o.i];
  }
};

// Runs block `block_index` of a grid of `grid` blocks of kBlock threads over n_out outputs.
template <int kBlock, int kLanes, int kItems>
std::map<long long, int> run_block(unsigned grid, unsigned block_index, int n_out) {
  Stores stores;
  const RecordingBody::Params p{&stores};
  kevo_host_run(grid, kBlock, [&] { kevo::generic_reduce<kBlock, kLanes, kItems, 1, int, RecordingBody>(p, n_out, 1); },
                block_index, block_index + 1);
  return stores.count;
}

// The outputs block b of a one-pass grid owns: [b * tile, min((b + 1) * tile, n_out)).
void expect_exactly_its_tile(const std::map<long long, int>& count, long long b, long long tile, long long n_out) {
  const long long first = b * tile, last = std::min(first + tile, n_out);
  ASSERT_FALSE(count.empty()) << "block " << b << " stored nothing";
  EXPECT_EQ(count.begin()->first, first) << "block " << b << " stored below its tile";
  EXPECT_EQ(count.rbegin()->first, last - 1) << "block " << b << " stored past its tile";
  EXPECT_EQ(static_cast<long long>(count.size()), last - first);
  for (const auto& [out, times] : count) ASSERT_EQ(times, 1) << "output " << out << " stored " << times << " times";
}

TEST(GenericIndexHost, OnePassGridNearTheLimitOfThirtyTwoBitIndices) {
  // The largest output count the manifest gives 32-bit indices, and KernelBench's L2 norm's.
  for (const long long n_out : {2147418111LL, 32768LL * 65535LL}) {
    constexpr int kBlock = 64, kItems = 4, kTile = kBlock * kItems;
    const unsigned grid = static_cast<unsigned>((n_out + kTile - 1) / kTile);
    for (const unsigned b : {grid - 1, grid - 2})
      expect_exactly_its_tile(run_block<kBlock, 1, kItems>(grid, b, static_cast<int>(n_out)), b, kTile, n_out);
  }
}

// Every term of every output, counted as read (one output's K terms per row of `reads`).
struct CountingBody {
  struct Params {
    std::vector<std::atomic<int>>* reads;
    int K;
    float* out;
  };
  using Op = kevo::GSum;
  struct Out {
    int i;
  };
  static Out at(const Params&, int f) { return {f}; }
  static float term(const Params& p, const Out& o, int k) {
    if (k >= 0 && k < p.K) ++(*p.reads)[static_cast<size_t>(o.i) * p.K + k];
    return 1.f;
  }
  static void store(const Params& p, const Out& o, float v, int) { p.out[o.i] = v; }
};

// kSplit's chunks: each term of each output read exactly once over the split blocks (K a multiple
// of no split, and smaller than it), every partial written, and the combine's sums exact; with a
// one-pass grid and with a grid-stride one of fewer blocks than (tile, split) pairs.
template <int kBlock, int kLanes, int kItems, int kSplit>
void expect_each_term_once(int n_out, int K, unsigned grid) {
  constexpr int kTile = kBlock / kLanes * kItems;
  std::vector<std::atomic<int>> reads(static_cast<size_t>(n_out) * K);
  std::vector<float> partials(static_cast<size_t>(n_out) * kSplit, NAN), out(static_cast<size_t>(n_out), NAN);
  const CountingBody::Params p{&reads, K, out.data()};
  if (grid == 0) grid = static_cast<unsigned>((n_out + kTile - 1) / kTile * kSplit);
  kevo_host_run(grid, kBlock, [&] {
    kevo::generic_reduce_partial<kBlock, kLanes, kItems, 1, kSplit, int, CountingBody>(p, n_out, K, partials.data(), nullptr);
  });
  for (size_t i = 0; i < reads.size(); ++i) ASSERT_EQ(reads[i].load(), 1) << "term " << i % K << " of output " << i / K;
  for (float v : partials) ASSERT_FALSE(std::isnan(v)) << "a partial left unwritten";
  kevo_host_run(grid, kBlock, [&] { kevo::generic_combine<kBlock, kSplit, int, CountingBody>(p, n_out, partials.data(), nullptr); });
  for (int o = 0; o < n_out; ++o) EXPECT_EQ(out[static_cast<size_t>(o)], float(K)) << "output " << o;
}

TEST(GenericIndexHost, SplitChunksReadEachTermOnce) {
  // (Host threads meet at every barrier and shuffle: blocks of 32 keep this quick.)
  for (const int K : {5, 1001}) {
    for (const unsigned grid : {0u, 3u}) {
      expect_each_term_once<32, 1, 2, 8>(70, K, grid);
      expect_each_term_once<32, 8, 1, 64>(3, K, grid);
      expect_each_term_once<64, 64, 1, 8>(2, K, grid);
      expect_each_term_once<32, 1, 1, 512>(1, K, grid);
    }
  }
}

TEST(GenericIndexHost, GridStrideNextNeverPassesTheEnd) {
  EXPECT_EQ(kevo::grid_stride_next<int>(INT_MAX - 10, INT_MAX - 5, INT_MAX - 1), INT_MAX - 1);
  EXPECT_EQ(kevo::grid_stride_next<int>(10, 100, 1000), 110);
  EXPECT_EQ(kevo::grid_stride_next<int>(900, 100, 1000), 1000);
  EXPECT_EQ(kevo::grid_stride_next<long long>(5, 3, 7), 7);
}

}  // namespace

// A thread that adds 2^25 + 3 terms of 1 (a matrix-vector product's row of a million terms, and
// more) gets their sum to fp32's spacing there (4), not the 2^24 plain adds stall at; an infinite
// term leaves the sum infinite, as torch's, not NaN.
TEST(GenericIndexHost, ALongSumIsCompensated) {
  float out = 0;
  blockDim = {1, 1, 1};
  gridDim = {1, 1, 1};
  threadIdx = {0, 0, 0};
  blockIdx = {0, 0, 0};
  const int terms = (1 << 25) + 3;
  kevo::generic_reduce<32, 1, 1, 1, int, OnesBody>(OnesBody::Params{&out}, 1, terms);
  EXPECT_NEAR(out, double(terms), 4.0);
  struct InfBody : OnesBody {
    static float term(const Params&, const Out&, int k) { return k == 5 ? INFINITY : 1.f; }
  };
  kevo::generic_reduce<32, 1, 1, 1, int, InfBody>(OnesBody::Params{&out}, 1, 100);
  EXPECT_TRUE(std::isinf(out)) << out;
}
