// Grouped GEMMs on tensor cores (sm_80+): ldmatrix + mma.sync m16n8k16 with
// fp32 accumulation, a cp.async multistage pipeline and XOR-swizzled shared
// memory. One block computes a BM x BN output tile of one expert.
#pragma once

#include "blocks/moe_gemm_common.cuh"
#include "blocks/moe_swizzled_tiles.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/mma.cuh"

namespace moejit_dev {

/// BN counts output columns (GEMM1: columns of h, each needing a gate and an
/// up row of B). WM x WN warps tile the block.
template <int BM_, int BN_, int STAGES_, int WM_, int WN_> struct MmaTile {
  static constexpr int BM = BM_, BN = BN_, STAGES = STAGES_, WM = WM_, WN = WN_;
  static constexpr int BK = 64; // one 128-byte row of 16-bit elements
  static constexpr int THREADS = 32 * WM * WN;
};

template <class S, class Tl, bool Gemm1> struct MmaGemm {
  using T = typename S::T;
  using D = GemmDims<S, Gemm1>;
  static constexpr int BM = Tl::BM, BK = Tl::BK, STAGES = Tl::STAGES;
  static constexpr int B_ROWS = Gemm1 ? 2 * Tl::BN : Tl::BN;
  static constexpr int THREADS = Tl::THREADS;
  static constexpr int WARP_M = BM / Tl::WM;     // rows per warp
  static constexpr int WARP_B = B_ROWS / Tl::WN; // B rows per warp
  static constexpr int MT = WARP_M / 16, NT = WARP_B / 8;
  static constexpr int KT = (D::K + BK - 1) / BK;
  static_assert(S::DT != kFP32, "the tensor-core path takes bf16 or fp16");
  static_assert(BM % (16 * Tl::WM) == 0, "BM must split into 16-row warp tiles");
  static_assert(WARP_B % 16 == 0, "each warp needs B rows in pairs of n8 tiles");
  static_assert(!Gemm1 || (WARP_B / 2) % 8 == 0, "gate/up halves must be whole n8 tiles");

  using Tiles = SwizzledTiles<S, Gemm1, BM, B_ROWS, THREADS, STAGES>;
  static constexpr int A_STAGE = Tiles::A_STAGE, B_STAGE = Tiles::B_STAGE;
  static constexpr int SMEM_BYTES = Tiles::BYTES;

  /// A and B fragments of k16 step `kk` of a swizzled stage.
  static __device__ __forceinline__ void load_fragments(const T *tA, const T *tB, int kk, int wm,
                                                        int wn, int lane, unsigned (&a)[MT][4],
                                                        unsigned (&b)[NT][2]) {
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      // lanes 0-15: rows 0-15 at k 0-7; lanes 16-31: the same rows at k 8-15
      const int r = wm * WARP_M + i * 16 + (lane & 15);
      ldmatrix_x4(a[i], tA + Tiles::swz(r, kk * 2 + (lane >> 4)));
    }
#pragma unroll
    for (int j = 0; j < NT; j += 2) {
      // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
      const int r = wn * WARP_B + j * 8 + (lane & 7) + ((lane >> 4) << 3);
      unsigned q[4];
      ldmatrix_x4(q, tB + Tiles::swz(r, kk * 2 + ((lane >> 3) & 1)));
      b[j][0] = q[0];
      b[j][1] = q[1];
      b[j + 1][0] = q[2];
      b[j + 1][1] = q[3];
    }
  }

  static __device__ void run(const LaunchParams &p) {
    const RowTile tile = load_row_tile<BM>(p);
    if (!tile.valid)
      return;
    extern __shared__ __align__(128) unsigned char smem[];
    const int n0 = blockIdx.x * Tl::BN;
    const auto l = Tiles::template prepare<WARP_B>(smem, p, tile, n0);

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = warp / Tl::WN, wn = warp % Tl::WN;
    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int v = 0; v < 4; ++v)
          acc[i][j][v] = 0.f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < KT)
        Tiles::load_stage(l, s, s, p.x);
      cp_async_commit();
    }
    for (int kt = 0; kt < KT; ++kt) {
      cp_async_wait<STAGES - 2>();
      __syncthreads(); // stage kt landed; stage kt-1 is free for everyone
      const int next = kt + STAGES - 1;
      if (next < KT)
        Tiles::load_stage(l, next % STAGES, next, p.x);
      cp_async_commit();
      const T *tA = l.a + (kt % STAGES) * A_STAGE;
      const T *tB = l.b + (kt % STAGES) * B_STAGE;
      // Fragments are double-buffered across the k16 steps so that the
      // ldmatrix of step kk+1 is in flight while the mmas of step kk issue.
      unsigned a[2][MT][4], b[2][NT][2];
      load_fragments(tA, tB, 0, wm, wn, lane, a[0], b[0]);
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        if (kk + 1 < BK / 16)
          load_fragments(tA, tB, kk + 1, wm, wn, lane, a[(kk + 1) & 1], b[(kk + 1) & 1]);
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int j = 0; j < NT; ++j)
            mma_16816<S::DT == kBF16>(acc[i][j], a[kk & 1][i], b[kk & 1][j][0], b[kk & 1][j][1]);
      }
    }
    cp_async_wait<0>();
    epilogue(p, tile, n0, wm, wn, lane, acc);
  }

  /// acc[i][j][v] is row wm*WARP_M + 16i + lane/4 + 8*(v/2) and B-row column
  /// 8j + 2*(lane%4) + v%2 of the warp's slice.
  static __device__ void epilogue(const LaunchParams &p, const RowTile &tile, int n0, int wm,
                                  int wn, int lane, float (&acc)[MT][NT][4]) {
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = tile.row_begin + wm * WARP_M + i * 16 + (lane >> 2) + half * 8;
        if (row >= tile.row_end)
          continue;
        if constexpr (Gemm1) {
#pragma unroll
          for (int j = 0; j < NT / 2; ++j) {
            const int col = n0 + wn * (WARP_B / 2) + j * 8 + 2 * (lane & 3);
            if (col < S::I)
              store_h<S>(p, row, col, acc[i][j][2 * half], acc[i][j][2 * half + 1],
                         acc[i][j + NT / 2][2 * half], acc[i][j + NT / 2][2 * half + 1]);
          }
        } else {
          const int assignment = p.sorted_ids[row];
          const float weight = p.sorted_weights[row];
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            const int col = n0 + wn * WARP_B + j * 8 + 2 * (lane & 3);
            if (col < S::H)
              store_partial<S>(p, assignment, weight, col, acc[i][j][2 * half],
                               acc[i][j][2 * half + 1]);
          }
        }
      }
    }
  }
};

} // namespace moejit_dev
