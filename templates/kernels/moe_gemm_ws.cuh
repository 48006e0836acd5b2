// Grouped GEMMs on Hopper (sm_90a), persistent and warp-specialised: one
// CTA per SM walks the call's (row tile, column tile) list. Warpgroup 0
// produces: weight tiles by TMA (the expert is a tensor-map coordinate);
// GEMM1's A rows (x rows by token) gathered with cp.async, zero-filled
// past the tile's rows and past K; GEMM2's A rows (h, already in sorted
// order: a tile's rows are contiguous) by TMA too, in boxes of 32 rows,
// so one thread produces. Boxes wholly past the tile's rows are not sent:
// their rows of the stage keep whatever they held (an older tile's rows)
// and the epilogue drops those rows, as each output row depends on its
// own A row only; rows past the tile's end inside a sent box are the next
// expert's (zeros past T*k), dropped the same way. Warpgroups 1 and 2
// consume: each multiplies 64 rows of the 128-row tile with wgmma from the
// swizzled stages and stores its rows itself, while the producer already
// fills the stages of the next tile. With STAGED, a warpgroup writes its
// rows to shared memory and sends them by bulk copies that run on while it
// starts the next tile (fewer stages fit beside the staging rows). Stages hand over through
// mbarriers (full: producer -> consumers, empty: consumers -> producer); there is no block-wide
// barrier after the prologue.
#pragma once

#include "blocks/moe_gemm_common.cuh"
#include "blocks/wgmma_epilogue.cuh"
#include "blocks/ws_pipeline.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/griddep.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/warpgroup.cuh"
#include "ptx/wgmma.cuh"

namespace moejit_dev {

template <int BN_, int STAGES_, bool STAGED_ = false, int INFLIGHT_ = 0> struct WsTile {
  static constexpr int BM = 128, BN = BN_, STAGES = STAGES_;
  static constexpr bool STAGED = STAGED_;
  // wgmma groups a consumer leaves in flight when it moves to the next
  // k-tile. 0 releases a stage as soon as its group is done, which gives
  // the producer one stage more to load ahead while the other warpgroup's
  // group feeds the tensor pipe: 1.3-2.5% faster than 1 (which holds two
  // stages) on the seed shape from T=2048 to 32768 (tools/bench/NOTES.md).
  static constexpr int INFLIGHT = INFLIGHT_;
  static constexpr int THREADS = kWsThreads; // producer + two consumer warpgroups
};

template <class S, class Tl, bool Gemm1> struct WsGemm {
  using T = typename S::T;
  using D = GemmDims<S, Gemm1>;
  static constexpr int BM = Tl::BM, BN = Tl::BN, STAGES = Tl::STAGES, THREADS = Tl::THREADS;
  static constexpr int INFLIGHT = Tl::INFLIGHT;
  static constexpr int BK = 64;                             // one 128-byte row per k-tile
  static constexpr int N = Gemm1 ? 2 * BN : BN;             // B rows = wgmma N
  static constexpr int KT = (D::K + BK - 1) / BK;           // k-tiles per tile
  static constexpr int COL_TILES = (D::N + BN - 1) / BN;    // column tiles per row tile
  static constexpr int A_STAGE = BM * BK, B_STAGE = N * BK; // elements
  static constexpr int B_STAGE_BYTES = B_STAGE * 2;
  static constexpr bool STAGED = Tl::STAGED;
  static constexpr int PITCH = staging_pitch<Gemm1, N>();
  static constexpr int STAGING = STAGED ? 2 * 64 * PITCH : 0; // elements, both warpgroups
  // The stages (1024-byte aligned for the 128-byte swizzle: the dynamic
  // shared memory is declared so), the staging rows, then a full and an
  // empty barrier per stage. No alignment slack: 1 KB more is what lets
  // GEMM1's staged epilogue sit beside four stages.
  static constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * 2 + STAGING * 2 + STAGES * 16;
  // Registers: the producer keeps 8 row pointers; each consumer thread N/2
  // accumulators (moe_launch_abi.cuh: the budgets fit the entry allocation).
  static constexpr int PRODUCER_REGS = kWsProducerRegisters, CONSUMER_REGS = kWsConsumerRegisters;
  static constexpr int ROWS_PER_PRODUCER_THREAD = BM * 8 / 128; // 16-byte chunks, one chunk column
  static constexpr bool A_BY_TMA = !Gemm1;
  static constexpr int A_BOX_ROWS = kWsRowBoxRows;
  static constexpr int A_BOX_BYTES = A_BOX_ROWS * BK * 2;
  static_assert(BM % A_BOX_ROWS == 0 && A_BOX_ROWS % 8 == 0, "boxes of whole swizzle atoms");
  static_assert(S::DT != kFP32, "wgmma path takes bf16 or fp16");
  static_assert(N == 64 || N == 128 || N == 192 || N == 256, "wgmma N of 64, 128, 192 or 256");
  static_assert(BN % 8 == 0, "a B half must start on a 1024-byte swizzle atom");
  static_assert(STAGES >= 2, "at least two stages");
  static_assert(INFLIGHT == 0 || INFLIGHT == 1, "0 or 1 wgmma groups in flight");

  struct Smem {
    T *a, *b, *staging;
    unsigned long long *full, *empty;
  };

  using Ring = StageRing<STAGES>;
  using Walk = TileWalk<BM, BN, COL_TILES>;

  static __device__ __forceinline__ int swz(int r, int ch) {
    return r * BK + ((ch ^ (r & 7)) << 3);
  }

  /// `rows`: GEMM2's map of h (2-D: I, T*k rows; boxes of A_BOX_ROWS
  /// rows), null for GEMM1.
  static __device__ void run(const LaunchParams &p, const TensorMap *weights,
                             const TensorMap *rows) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    // The window the driver gives is aligned as declared; a stage off the
    // 1024-byte grid would feed wgmma a wrong swizzle, so refuse to run.
    if ((smem_addr(smem_raw) & 1023) != 0)
      __trap();
    unsigned char *base = smem_raw;
    Smem sm;
    sm.a = reinterpret_cast<T *>(base);
    sm.b = sm.a + STAGES * A_STAGE;
    sm.staging = sm.b + STAGES * B_STAGE;
    sm.full = reinterpret_cast<unsigned long long *>(sm.staging + STAGING);
    sm.empty = sm.full + STAGES;
    // Prologue, overlapping the previous kernel's tail (programmatic
    // dependent launch): nothing here reads what an earlier kernel wrote.
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        // A by TMA: the one producer thread's arrival; otherwise also every
        // producer thread's cp.async arrival.
        mbar_init(&sm.full[s], A_BY_TMA ? 1 : 128 + 1);
        mbar_init(&sm.empty[s], 2); // one arrival per consumer warpgroup
      }
      fence_mbarrier_init();
      prefetch_tensor_map(weights);
      if constexpr (A_BY_TMA)
        prefetch_tensor_map(rows);
    }
    __syncthreads();
    griddep_wait();
    griddep_launch_dependents();
    const int tiles = Walk::count(p);
    if (threadIdx.x < 128) {
      setmaxnreg_dec<PRODUCER_REGS>();
      if constexpr (A_BY_TMA) {
        if (threadIdx.x == 0)
          produce_by_tma(p, weights, rows, sm, tiles);
      } else {
        produce(p, weights, sm, tiles);
      }
    } else {
      setmaxnreg_inc<CONSUMER_REGS>();
      consume(p, sm, tiles);
    }
  }

  static __device__ void produce(const LaunchParams &p, const TensorMap *weights, const Smem &sm,
                                 int tiles) {
    static_assert(Gemm1, "GEMM2's producer is produce_by_tma");
    const int tid = threadIdx.x, ch = tid & 7, r0 = tid >> 3;
    Ring ring;
    RowTile tile;
    int n0;
    for (int t = blockIdx.x; Walk::next(p, tiles, t, tile, n0);) {
      const T *src[ROWS_PER_PRODUCER_THREAD];
#pragma unroll
      for (int i = 0; i < ROWS_PER_PRODUCER_THREAD; ++i)
        src[i] = a_row_source<S, Gemm1>(p, tile, r0 + 16 * i);
      for (int kt = 0; kt < KT; ++kt) {
        mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1);
        const int k0 = kt * BK;
        if (tid == 0) {
          mbar_arrive_expect_tx(&sm.full[ring.stage], B_STAGE_BYTES);
          T *b = sm.b + ring.stage * B_STAGE;
          // [H, I, 2, E]: gate rows, then the up rows of the same columns.
          tma_load_4d(b, weights, &sm.full[ring.stage], k0, n0, 0, tile.expert);
          tma_load_4d(b + BN * BK, weights, &sm.full[ring.stage], k0, n0, 1, tile.expert);
        }
        T *a = sm.a + ring.stage * A_STAGE;
        const bool k_ok = k0 + ch * 8 < D::K;
#pragma unroll
        for (int i = 0; i < ROWS_PER_PRODUCER_THREAD; ++i) {
          const bool ok = src[i] != nullptr && k_ok;
          cp_async_16(a + swz(r0 + 16 * i, ch), ok ? src[i] + k0 + ch * 8 : p.x, ok);
        }
        cp_async_mbar_arrive(&sm.full[ring.stage]);
        ring.next();
      }
    }
    cp_async_wait<0>();
  }

  /// GEMM2's producer: one thread sends every box of every stage (the
  /// tile's A row boxes and the weight box).
  static __device__ void produce_by_tma(const LaunchParams &p, const TensorMap *weights,
                                        const TensorMap *rows, const Smem &sm, int tiles) {
    Ring ring;
    RowTile tile;
    int n0;
    for (int t = blockIdx.x; Walk::next(p, tiles, t, tile, n0);) {
      const int boxes = (tile.row_end - tile.row_begin + A_BOX_ROWS - 1) / A_BOX_ROWS;
      for (int kt = 0; kt < KT; ++kt) {
        mbar_wait(&sm.empty[ring.stage], ring.phase ^ 1);
        const int k0 = kt * BK;
        T *a = sm.a + ring.stage * A_STAGE;
        mbar_arrive_expect_tx(&sm.full[ring.stage], A_BOX_BYTES * boxes + B_STAGE_BYTES);
        for (int q = 0; q < boxes; ++q)
          tma_load_2d(a + q * A_BOX_ROWS * BK, rows, &sm.full[ring.stage], k0,
                      tile.row_begin + q * A_BOX_ROWS);
        tma_load_3d(sm.b + ring.stage * B_STAGE, weights, &sm.full[ring.stage], k0, n0,
                    tile.expert);
        ring.next();
      }
    }
  }

  static __device__ void consume(const LaunchParams &p, const Smem &sm, int tiles) {
    const int wg = threadIdx.x / 128 - 1; // 64-row half of the tile
    const bool signals = threadIdx.x % 128 == 0;
    Ring ring;
    float acc[N / 2];
    RowTile tile;
    int n0;
    for (int t = blockIdx.x; Walk::next(p, tiles, t, tile, n0);) {
#pragma unroll
      for (int i = 0; i < N / 2; ++i)
        acc[i] = 0.f;
      // The epilogue's row metadata, loaded now so that it waits on nothing.
      const RowMeta meta = load_row_meta<S, Gemm1>(p, tile, wg);
      T *copy_dst = nullptr;
      if constexpr (STAGED) {
        const int row = tile.row_begin + wg * 64 + threadIdx.x % 128;
        if (threadIdx.x % 128 < 64 && row < tile.row_end)
          copy_dst = (Gemm1 ? static_cast<T *>(p.h) + static_cast<long long>(row) * S::I
                            : gemm2_out_row<S>(p, p.sorted_ids[row])) +
                     n0;
      }
      int previous = -1;
      for (int kt = 0; kt < KT; ++kt) {
        mbar_wait(&sm.full[ring.stage], ring.phase);
        // GEMM1's A rows came by cp.async (generic proxy); wgmma reads
        // through the async proxy.
        if constexpr (!A_BY_TMA)
          fence_proxy_async_shared();
        const T *tA = sm.a + ring.stage * A_STAGE + wg * 64 * BK;
        const T *tB = sm.b + ring.stage * B_STAGE;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) // k16 steps: +32 bytes inside the 128-byte row
          Wgmma<N, S::DT == kBF16>::run(acc, wgmma_desc(tA + kk * 16), wgmma_desc(tB + kk * 16), 1);
        wgmma_commit();
        if constexpr (INFLIGHT == 1) {
          // One group stays in flight; the one before it is done with its
          // stage, which goes back to the producer.
          wgmma_wait<1>();
          if (previous >= 0 && signals)
            mbar_arrive(&sm.empty[previous]);
          previous = ring.stage;
        } else {
          wgmma_wait<0>();
          if (signals)
            mbar_arrive(&sm.empty[ring.stage]);
        }
        ring.next();
      }
      if constexpr (INFLIGHT == 1) {
        wgmma_wait<0>();
        if (signals)
          mbar_arrive(&sm.empty[previous]);
      }
      if constexpr (STAGED)
        stage_wgmma_tile<S, Gemm1, N>(tile, n0, acc, meta, sm.staging + wg * 64 * PITCH, 1 + wg,
                                      copy_dst);
      else
        store_wgmma_tile<S, Gemm1, N>(p, tile, n0, wg, acc, meta);
    }
    if constexpr (STAGED)
      bulk_wait<0>(); // the last rows are in global memory before the grid ends
  }
};

} // namespace moejit_dev
