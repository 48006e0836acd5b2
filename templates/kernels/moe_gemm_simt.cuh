// Grouped GEMMs with fp32 FMA for fp32 workloads (exact fp32 math; tensor
// cores would give tf32 accuracy). 256 threads compute a 32 x 32 output tile;
// each thread owns 2 rows x 2 columns (GEMM1: of both gate and up).
#pragma once

#include "blocks/moe_gemm_common.cuh"

namespace moejit_dev {

template <class S, bool Gemm1> struct SimtGemm {
  using D = GemmDims<S, Gemm1>;
  static constexpr int BM = 32, BN = 32, BK = 32, THREADS = 256;
  static constexpr int PARTS = Gemm1 ? 2 : 1; // gate and up, or down
  static constexpr int B_ROWS = PARTS * BN;
  static constexpr int SMEM_BYTES = 0;
  static_assert(S::DT == kFP32, "the fp32 path takes fp32 only");

  static __device__ void run(const LaunchParams &p) {
    const RowTile tile = load_row_tile<BM>(p);
    if (!tile.valid)
      return;
    __shared__ float sA[BM][BK + 1];
    __shared__ float sB[B_ROWS][BK + 1];
    __shared__ const float *a_src[BM];
    __shared__ const float *b_src[B_ROWS];
    const int n0 = blockIdx.x * BN;
    for (int r = threadIdx.x; r < BM; r += THREADS)
      a_src[r] = a_row_source<S, Gemm1>(p, tile, r);
    for (int r = threadIdx.x; r < B_ROWS; r += THREADS)
      b_src[r] = b_row_source<S, Gemm1, B_ROWS>(p, tile.expert, n0, r);

    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    float acc[PARTS][2][2] = {};
    for (int k0 = 0; k0 < D::K; k0 += BK) {
      __syncthreads(); // row sources written / previous tile consumed
      for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
        const int r = e / BK, kk = e % BK;
        sA[r][kk] = a_src[r] && k0 + kk < D::K ? a_src[r][k0 + kk] : 0.f;
      }
      for (int e = threadIdx.x; e < B_ROWS * BK; e += THREADS) {
        const int r = e / BK, kk = e % BK;
        sB[r][kk] = b_src[r] && k0 + kk < D::K ? b_src[r][k0 + kk] : 0.f;
      }
      __syncthreads();
#pragma unroll 8
      for (int kk = 0; kk < BK; ++kk) {
        const float a0 = sA[2 * ty][kk], a1 = sA[2 * ty + 1][kk];
#pragma unroll
        for (int part = 0; part < PARTS; ++part) {
          const float b0 = sB[part * BN + 2 * tx][kk];
          const float b1 = sB[part * BN + 2 * tx + 1][kk];
          acc[part][0][0] += a0 * b0;
          acc[part][0][1] += a0 * b1;
          acc[part][1][0] += a1 * b0;
          acc[part][1][1] += a1 * b1;
        }
      }
    }
    const int col = n0 + 2 * tx;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int row = tile.row_begin + 2 * ty + i;
      if (row >= tile.row_end || col >= D::N)
        continue;
      if constexpr (Gemm1) {
        store_h<S>(p, row, col, acc[0][i][0], acc[0][i][1], acc[1][i][0], acc[1][i][1]);
      } else {
        const int assignment = p.sorted_ids[row];
        store_partial<S>(p, assignment, p.sorted_weights[row], col, acc[0][i][0],
                         acc[0][i][1]);
      }
    }
  }
};

} // namespace moejit_dev
