// Grouped GEMMs on Hopper (sm_90a): the cp.async gather pipeline of
// moe_swizzled_tiles.cuh feeding wgmma m64nNk16, which reads both operands
// from shared memory (no ldmatrix traffic). One warpgroup per 64 rows of the
// block tile; N = all B rows of the tile (GEMM1: gate half then up half).
#pragma once

#include "blocks/moe_gemm_common.cuh"
#include "blocks/moe_swizzled_tiles.cuh"
#include "blocks/wgmma_epilogue.cuh"
#include "ptx/wgmma.cuh"

namespace moejit_dev {

/// INFLIGHT_ wgmma groups (0 or 1) stay in flight across k-tiles; with 1 the
/// tensor cores keep working through the barrier and the next loads, at the
/// price of one stage of prefetch distance.
template <int BM_, int BN_, int STAGES_, int INFLIGHT_ = 0> struct WgmmaTile {
  static constexpr int BM = BM_, BN = BN_, STAGES = STAGES_, INFLIGHT = INFLIGHT_;
  static constexpr int THREADS = 128 * (BM_ / 64);
};

template <class S, class Tl, bool Gemm1> struct WgmmaGemm {
  using T = typename S::T;
  using D = GemmDims<S, Gemm1>;
  static constexpr int BM = Tl::BM, STAGES = Tl::STAGES, THREADS = Tl::THREADS;
  static constexpr int N = Gemm1 ? 2 * Tl::BN : Tl::BN; // B rows = wgmma N
  static constexpr int KT = (D::K + 63) / 64;
  static constexpr int INFLIGHT = Tl::INFLIGHT;
  /// k-tiles loaded ahead of the one being multiplied. The stage a load
  /// overwrites last held k-tile kt-1-INFLIGHT, whose wgmma group every
  /// warpgroup has retired before the barrier of iteration kt.
  static constexpr int PREFETCH = STAGES - 1 - INFLIGHT;
  static_assert(INFLIGHT == 0 || INFLIGHT == 1, "0 or 1 wgmma group in flight");
  static_assert(PREFETCH >= 1, "too few stages for the groups in flight");
  using Tiles = SwizzledTiles<S, Gemm1, BM, N, THREADS, STAGES>;
  static constexpr int A_STAGE = Tiles::A_STAGE, B_STAGE = Tiles::B_STAGE;
  // 1024 bytes of slack to align the stages for the 128-byte swizzle.
  static constexpr int SMEM_BYTES = 1024 + Tiles::BYTES;
  static_assert(S::DT != kFP32, "wgmma path takes bf16 or fp16");
  static_assert(BM % 64 == 0 && BM <= 256, "one warpgroup per 64 rows");
  static_assert(N == 64 || N == 128 || N == 192 || N == 256, "wgmma N of 64, 128, 192 or 256");

  static __device__ void run(const LaunchParams &p) {
    const RowTile tile = load_row_tile<BM>(p);
    if (!tile.valid)
      return;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
    const int n0 = blockIdx.x * Tl::BN;
    const auto l = Tiles::template prepare<N>(smem, p, tile, n0);

    const int wg = threadIdx.x / 128;
    float acc[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i)
      acc[i] = 0.f;
#pragma unroll
    for (int s = 0; s < PREFETCH; ++s) {
      if (s < KT)
        Tiles::load_stage(l, s, s, p.x);
      cp_async_commit();
    }
    for (int kt = 0; kt < KT; ++kt) {
      cp_async_wait<PREFETCH - 1>();
      fence_proxy_async_shared(); // our cp.async writes -> wgmma's async reads
      __syncthreads();            // stage kt landed everywhere; the stage reloaded below is retired
      const int next = kt + PREFETCH;
      if (next < KT)
        Tiles::load_stage(l, next % STAGES, next, p.x);
      cp_async_commit();
      const T *tA = l.a + (kt % STAGES) * A_STAGE + wg * 64 * 64;
      const T *tB = l.b + (kt % STAGES) * B_STAGE;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) // k16 steps: +32 bytes inside the 128-byte row
        Wgmma<N, S::DT == kBF16>::run(acc, wgmma_desc(tA + kk * 16), wgmma_desc(tB + kk * 16), 1);
      wgmma_commit();
      wgmma_wait<INFLIGHT>();
    }
    wgmma_wait<0>();
    cp_async_wait<0>();
    store_wgmma_tile<S, Gemm1, N>(p, tile, n0, wg, acc);
  }
};

} // namespace moejit_dev
