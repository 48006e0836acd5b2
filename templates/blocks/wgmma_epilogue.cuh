// The epilogue of the wgmma GEMMs: accumulators of one warpgroup's 64 rows
// straight to global memory (GEMM1: silu(gate)*up into h; GEMM2: weighted
// rows of partial).
#pragma once

#include "blocks/moe_gemm_common.cuh"

namespace moejit_dev {

/// acc[i] of a warpgroup with wgmma N = `N` is row 64*wg + 16*warp + lane/4
/// + 8*((i>>1)&1) of `tile` and B-row column 8*(i>>2) + 2*(lane%4) + i%2
/// from n0; for GEMM1 the B rows are gate then up of N/2 columns, so the up
/// value of column c sits at i + N/4.
template <class S, bool Gemm1, int N>
__device__ __forceinline__ void store_wgmma_tile(const LaunchParams &p, const RowTile &tile, int n0,
                                                 int wg, float (&acc)[N / 2]) {
  using D = GemmDims<S, Gemm1>;
  const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
  // Each thread touches two rows: r0 and r0 + 8.
  const int r0 = tile.row_begin + wg * 64 + warp * 16 + (lane >> 2);
  int assignment[2] = {0, 0};
  float weight[2] = {0.f, 0.f};
  if constexpr (!Gemm1) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (r0 + 8 * h < tile.row_end) {
        assignment[h] = p.sorted_ids[r0 + 8 * h];
        weight[h] = weight_of<S>(p, assignment[h]);
      }
  }
  constexpr int SLOTS = Gemm1 ? N / 4 : N / 2; // accumulators holding outputs
#pragma unroll
  for (int i = 0; i < SLOTS; i += 2) {
    const int h = (i >> 1) & 1;
    const int row = r0 + 8 * h;
    const int col = n0 + 8 * (i >> 2) + 2 * (lane & 3);
    if (row >= tile.row_end || col >= D::N)
      continue;
    if constexpr (Gemm1)
      store_h<S>(p, row, col, acc[i], acc[i + 1], acc[i + N / 4], acc[i + 1 + N / 4]);
    else
      store_partial<S>(p, assignment[h], weight[h], col, acc[i], acc[i + 1]);
  }
}

} // namespace moejit_dev
