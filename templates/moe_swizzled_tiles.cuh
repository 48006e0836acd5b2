// Multistage shared-memory tiles for the grouped GEMMs: rows of 64 elements
// (128 bytes), 16-byte chunks XOR-permuted by row % 8, filled with cp.async
// from per-row source pointers (gathered rows, zero-filled past the end).
// This is the hardware's 128-byte swizzle, so with 1024-byte aligned stages
// the same tiles feed ldmatrix (conflict-free) and wgmma descriptors.
#pragma once

#include "moe_gemm_common.cuh"
#include "ptx/cp_async.cuh"

namespace moejit_dev {

template <class S, bool Gemm1, int BM, int B_ROWS, int THREADS>
struct SwizzledTiles {
  using T = typename S::T;
  using D = GemmDims<S, Gemm1>;
  static constexpr int BK = 64;
  static constexpr int A_STAGE = BM * BK, B_STAGE = B_ROWS * BK; // elements
  static_assert((BM * 8) % THREADS == 0 && (B_ROWS * 8) % THREADS == 0,
                "16-byte chunks must split evenly over the threads");

  /// Element offset of 16-byte chunk `ch` of row `r`: chunks are permuted by
  /// r % 8 so that the 8 rows one ldmatrix reads fall in different banks.
  static __device__ __forceinline__ int swz(int r, int ch) {
    return r * BK + ((ch ^ (r & 7)) << 3);
  }

  /// Issues the cp.async copies of k-tile `kt` (no commit).
  static __device__ void load_stage(T *sA, T *sB, const T *const *a_src,
                                    const T *const *b_src, int kt,
                                    const void *any_valid) {
    const int k0 = kt * BK;
#pragma unroll
    for (int i = 0; i < BM * 8 / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS, r = c >> 3, ch = c & 7;
      const T *src = a_src[r];
      const bool ok = src != nullptr && k0 + ch * 8 < D::K;
      cp_async_16(sA + swz(r, ch), ok ? src + k0 + ch * 8 : any_valid, ok);
    }
#pragma unroll
    for (int i = 0; i < B_ROWS * 8 / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS, r = c >> 3, ch = c & 7;
      const T *src = b_src[r];
      const bool ok = src != nullptr && k0 + ch * 8 < D::K;
      cp_async_16(sB + swz(r, ch), ok ? src + k0 + ch * 8 : any_valid, ok);
    }
  }
};

} // namespace moejit_dev
