// kevo template family "library": the generated elementwise epilogue that runs after a library
// call (a cuBLASLt matmul or a cuDNN convolution, an earlier step of the plan). It reads the
// library's result and computes the rest of the op graph, kVec consecutive elements per access,
// kItems accesses per thread, over the output seen as [rows, row_len] (row_len: the trailing
// dims along which no per-row input, such as a channel bias, varies).
#pragma once

#include "../common.cuh"

namespace kevo {

enum class EpilogueGrid {
  FlatOnePass = 0,     // one block per tile of the flat output
  FlatGridStride = 1,  // a fixed grid striding over the flat output
  Rows = 2,            // blockIdx.x: a row; blockIdx.y: a tile along it (no division per element)
};

// Body::apply<kVec>(p, i, row, col) computes and stores output elements [i, i + kVec), which lie
// in one row: i = row * row_len + col (row_len % kVec == 0, a manifest constraint). Flat grids
// compute row and col only when Body::kNeedsRow (some input is indexed by them).
template <int kBlock, int kVec, int kItems, EpilogueGrid kGrid, typename Body>
__device__ __forceinline__ void library_epilogue(const typename Body::Params& p, long long n, long long row_len) {
  static_assert(kBlock <= 1024, "threads per block");
  constexpr long long kTile = (long long)kBlock * kVec * kItems;
  if constexpr (kGrid == EpilogueGrid::Rows) {
    const long long row = blockIdx.x;
    const long long first = (long long)blockIdx.y * kTile;
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      // Consecutive threads take consecutive vectors: every access of a warp is coalesced.
      const long long col = first + ((long long)item * kBlock + threadIdx.x) * kVec;
      if (col < row_len) Body::template apply<kVec>(p, row * row_len + col, row, col);
    }
  } else {
    long long base = (long long)blockIdx.x * kTile;
    do {
#pragma unroll
      for (int item = 0; item < kItems; ++item) {
        const long long i = base + ((long long)item * kBlock + threadIdx.x) * kVec;
        if (i < n) {
          long long row = 0, col = i;
          if constexpr (Body::kNeedsRow) {
            row = i / row_len;
            col = i - row * row_len;
          }
          Body::template apply<kVec>(p, i, row, col);
        }
      }
      base += (long long)gridDim.x * kTile;
    } while (kGrid == EpilogueGrid::FlatGridStride && base < n);
  }
}

}  // namespace kevo
