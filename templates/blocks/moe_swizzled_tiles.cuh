// Multistage shared-memory tiles for the grouped GEMMs: rows of 64 elements
// (128 bytes), 16-byte chunks XOR-permuted by row % 8, filled with cp.async
// from per-row source pointers (gathered rows, zero-filled past the end).
// This is the hardware's 128-byte swizzle, so with 1024-byte aligned stages
// the same tiles feed ldmatrix (conflict-free) and wgmma descriptors.
#pragma once

#include "blocks/moe_gemm_common.cuh"
#include "ptx/cp_async.cuh"

namespace moejit_dev {

template <class S, bool Gemm1, int BM, int B_ROWS, int THREADS, int STAGES> struct SwizzledTiles {
  using T = typename S::T;
  using D = GemmDims<S, Gemm1>;
  static constexpr int BK = 64;
  static constexpr int A_STAGE = BM * BK, B_STAGE = B_ROWS * BK; // elements
  /// Stages plus the two row-source tables.
  static constexpr int BYTES = STAGES * (A_STAGE + B_STAGE) * 2 + (BM + B_ROWS) * 8;
  static_assert((BM * 8) % THREADS == 0 && (B_ROWS * 8) % THREADS == 0,
                "16-byte chunks must split evenly over the threads");

  struct Layout {
    T *a, *b;                 // STAGES tiles each
    const T **a_src, **b_src; // source of each row (nullptr: zero row)
  };

  /// Element offset of 16-byte chunk `ch` of row `r`: chunks are permuted by
  /// r % 8 so that the 8 rows one ldmatrix reads fall in different banks.
  static __device__ __forceinline__ int swz(int r, int ch) {
    return r * BK + ((ch ^ (r & 7)) << 3);
  }

  /// Carves the layout out of `base` and fills the row-source tables of the
  /// block's tile (B rows in groups of `Group`, see b_row_source); ends with
  /// a barrier.
  template <int Group>
  static __device__ Layout prepare(unsigned char *base, const LaunchParams &p, const RowTile &tile,
                                   int n0) {
    Layout l;
    l.a = reinterpret_cast<T *>(base);
    l.b = l.a + STAGES * A_STAGE;
    l.a_src = reinterpret_cast<const T **>(l.b + STAGES * B_STAGE);
    l.b_src = l.a_src + BM;
    for (int r = threadIdx.x; r < BM; r += THREADS)
      l.a_src[r] = a_row_source<S, Gemm1>(p, tile, r);
    for (int r = threadIdx.x; r < B_ROWS; r += THREADS)
      l.b_src[r] = b_row_source<S, Gemm1, Group>(p, tile.expert, n0, r);
    __syncthreads();
    return l;
  }

  /// Issues the cp.async copies of k-tile `kt` into `stage` (no commit).
  static __device__ void load_stage(const Layout &l, int stage, int kt, const void *any_valid) {
    load_rows<BM>(l.a + stage * A_STAGE, l.a_src, kt * BK, any_valid);
    load_rows<B_ROWS>(l.b + stage * B_STAGE, l.b_src, kt * BK, any_valid);
  }

  template <int ROWS>
  static __device__ __forceinline__ void load_rows(T *dst, const T *const *src_rows, int k0,
                                                   const void *any_valid) {
#pragma unroll
    for (int i = 0; i < ROWS * 8 / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS, r = c >> 3, ch = c & 7;
      const T *src = src_rows[r];
      const bool ok = src != nullptr && k0 + ch * 8 < D::K;
      cp_async_16(dst + swz(r, ch), ok ? src + k0 + ch * 8 : any_valid, ok);
    }
  }
};

} // namespace moejit_dev
