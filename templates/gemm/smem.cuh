// kevo template family "gemm", shared memory: operand tiles in 16-byte chunks whose position in a
// row is XOR-swizzled so that the fragment loads of a warp (ldmatrix, or the scalar TF32 loads)
// hit distinct banks, their cp.async loaders, and the tile order of the grid (rasterisation).
#pragma once

#include "mma.cuh"

namespace kevo {

// B's layout in global memory: [N, K] (K-major, a linear layer's weight) or [K, N] (N-major, a
// matmul's right operand).
enum class BLayout { KMajor = 0, NMajor = 1 };

// Which physical chunk of row r holds logical chunk c. kPairRows: the layout of fp32 B tiles
// stored [k][n] (N-major), where a warp's scalar TF32 loads read 4 rows of 2 chunks each, so the
// four rows must move by an even number of chunks; otherwise the 8 rows an ldmatrix (or a TF32
// A/B load along K) reads land in 8 distinct 16-byte bank groups.
template <int kChunksPerRow, bool kPairRows>
__device__ __forceinline__ int swizzle_chunk(int r, int c) {
  if constexpr (kPairRows) {
    static_assert(kChunksPerRow >= 8, "fp32 [k][n] tiles have rows of 128 bytes or more");
    return c ^ (((r & 3) << 1) | ((r >> 2) & 1));
  } else {
    constexpr int kRowsPerLine = kChunksPerRow >= 8 ? 1 : 8 / kChunksPerRow;  // rows sharing 128 bytes
    constexpr int kWays = kChunksPerRow >= 8 ? 8 : kChunksPerRow;
    return c ^ ((r / kRowsPerLine) % kWays);
  }
}

// A kRows x kCols tile of T (kCols contiguous in global memory) in shared memory.
template <typename T, int kRows, int kCols, bool kPairRows>
struct SmemTile {
  static constexpr int kChunkElems = 16 / Element<T>::kBytes;
  static constexpr int kChunksPerRow = kCols / kChunkElems;
  static constexpr int kBytes = kRows * kCols * Element<T>::kBytes;
  static_assert(kCols % kChunkElems == 0 && (kChunksPerRow & (kChunksPerRow - 1)) == 0,
                "a tile row is a power-of-two number of 16-byte chunks");

  // Byte offset of element (r, c).
  static __device__ __forceinline__ int offset(int r, int c) {
    return (r * kChunksPerRow + swizzle_chunk<kChunksPerRow, kPairRows>(r, c / kChunkElems)) * 16 +
           (c % kChunkElems) * Element<T>::kBytes;
  }

  // cp.async of the tile at (row0, col0) of a row-major rows x cols matrix with leading dimension
  // ld; chunks past the matrix are zero-filled (cols % kChunkElems == 0: a manifest constraint).
  template <int kThreads>
  static __device__ __forceinline__ void load(unsigned smem, const T* __restrict__ g, long long ld, int row0,
                                              int col0, int rows, int cols, int tid) {
    constexpr int kChunks = kRows * kChunksPerRow;
    static_assert(kChunks % kThreads == 0, "every thread copies the same number of chunks of a tile");
#pragma unroll
    for (int i = 0; i < kChunks / kThreads; ++i) {
      const int chunk = tid + i * kThreads, r = chunk / kChunksPerRow, c = chunk % kChunksPerRow;
      const int gr = row0 + r, gc = col0 + c * kChunkElems;
      const bool valid = gr < rows && gc < cols;
      const T* src = valid ? g + (long long)gr * ld + gc : g;
      cp_async_16(smem + (r * kChunksPerRow + swizzle_chunk<kChunksPerRow, kPairRows>(r, c)) * 16, src, valid);
    }
  }
};

// The order in which the grid's blocks walk the output tiles. RowMajor: the tile rows are cut into
// bands of kGroup; inside a band, consecutive blocks take the band's kGroup tiles of one column,
// then of the next column, so that a wave of blocks shares A's rows and B's columns in L2.
// ColMajor: the same with rows and columns exchanged. kGroup = 1 is the plain row-major (column-major) order.
enum class Raster { RowMajor = 0, ColMajor = 1 };

template <Raster kRaster, int kGroup>
__device__ __forceinline__ void tile_of(int tile, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int major = kRaster == Raster::RowMajor ? tiles_m : tiles_n;  // the dim the bands cut
  const int minor = kRaster == Raster::RowMajor ? tiles_n : tiles_m;
  const int per_band = kGroup * minor;
  const int band = tile / per_band, first = band * kGroup;
  const int width = major - first < kGroup ? major - first : kGroup;
  const int i = tile - band * per_band;
  const int a = first + i % width, b = i / width;
  tm = kRaster == Raster::RowMajor ? a : b;
  tn = kRaster == Raster::RowMajor ? b : a;
}

}  // namespace kevo
