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
// starts the next tile (fewer stages fit beside the staging rows; GEMM2's
// rows go to the blocked partial in one or two copies per warpgroup). Stages hand over through
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
  // GEMM2's staged rows go to partial blocked by BN columns, one or two
  // bulk copies per warpgroup (moejit_abi::partial_block_offset; the host's
  // KernelSpec::blocksPartial, asserted in the generated unit); added into
  // y (S::ADD_TO_Y) they go row by row.
  static constexpr bool BLOCKS_PARTIAL = !Gemm1 && STAGED && !S::ADD_TO_Y;
  static_assert(!BLOCKS_PARTIAL || blocks_partial(BN), "GEMM2 tiles block partial by 64 columns");
  static constexpr int PITCH = staging_pitch<Gemm1, N>();
  static constexpr int STAGING = STAGED ? 2 * 64 * PITCH : 0; // elements, both warpgroups
  // The stages (1024-byte aligned for the 128-byte swizzle: the dynamic
  // shared memory is declared so), the staging rows, then a full and an
  // empty barrier and a tile ticket per stage, then the gathering
  // producer's claim slot. No alignment slack: 1 KB more is what lets
  // GEMM1's staged epilogue sit beside four stages.
  static constexpr int SMEM_BYTES =
      STAGES * (A_STAGE + B_STAGE) * 2 + STAGING * 2 + STAGES * 32 + 16;
  // Registers (ws_roles): the producer keeps 8 row tokens; each consumer
  // thread N/2 accumulators.
  static constexpr bool A_BY_TMA = !Gemm1;
  static_assert(S::DT != kFP32, "wgmma path takes bf16 or fp16");
  static_assert(N == 64 || N == 128 || N == 192 || N == 256, "wgmma N of 64, 128, 192 or 256");
  static_assert(BN % 8 == 0, "a B half must start on a 1024-byte swizzle atom");
  static_assert(STAGES >= 2, "at least two stages");
  static_assert(INFLIGHT == 0 || INFLIGHT == 1, "0 or 1 wgmma groups in flight");

  struct Smem {
    T *a, *b, *staging;
    unsigned long long *full, *empty;
    TileTicket *tickets;
  };

  using Ring = StageRing<STAGES>;
  using Walk = TileWalk<BM, BN, COL_TILES>;

  /// Sends the weight box(es) of one stage.
  struct LoadWeights {
    const TensorMap *map;
    T *b;
    __device__ __forceinline__ void operator()(int stage, int k0, int n0, int expert,
                                               unsigned long long *bar) const {
      T *dst = b + stage * B_STAGE;
      if constexpr (Gemm1) {
        // [H, I, 2, E]: gate rows, then the up rows of the same columns.
        tma_load_4d(dst, map, bar, k0, n0, 0, expert);
        tma_load_4d(dst + BN * BK, map, bar, k0, n0, 1, expert);
      } else {
        tma_load_3d(dst, map, bar, k0, n0, expert);
      }
    }
    /// The same boxes into L2 (warm_first_tile).
    __device__ __forceinline__ void prefetch(int k0, int n0, int expert) const {
      if constexpr (Gemm1) {
        tma_prefetch(map, k0, n0, 0, expert);
        tma_prefetch(map, k0, n0, 1, expert);
      } else {
        tma_prefetch(map, k0, n0, expert);
      }
    }
  };
  using Producer = WsProducer<S, Walk, STAGES, BM, KT, B_STAGE_BYTES>;

  /// `rows`: GEMM2's map of h (2-D: I, T*k rows; boxes of kWsRowBoxRows
  /// rows), null for GEMM1.
  static __device__ void run(const LaunchParams &p, const TensorMap *weights,
                             const TensorMap *rows) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    Smem sm;
    sm.a = reinterpret_cast<T *>(smem_raw);
    sm.b = sm.a + STAGES * A_STAGE;
    sm.staging = sm.b + STAGES * B_STAGE;
    sm.full = reinterpret_cast<unsigned long long *>(sm.staging + STAGING);
    sm.empty = sm.full + STAGES;
    sm.tickets = reinterpret_cast<TileTicket *>(sm.empty + STAGES);
    const LoadWeights load{weights, sm.b};
    ws_prologue<STAGES, A_BY_TMA>(smem_raw, sm.full, sm.empty, weights, rows, [&] {
      warm_first_tile<S, Walk, /*LIST_READY=*/!Gemm1, KT, STAGES>(p, load);
    });
    ws_roles(
        [&] {
          Producer::template produce<A_BY_TMA>(p, rows, sm.a, sm.full, sm.empty, sm.tickets,
                                               Walk::count(p), load);
        },
        [&] { consume(p, sm); });
  }

  static __device__ void consume(const LaunchParams &p, const Smem &sm) {
    const int wg = threadIdx.x / 128 - 1; // 64-row half of the tile
    const bool signals = threadIdx.x % 128 == 0;
    Ring ring;
    float acc[N / 2];
    RowTile tile;
    int n0;
    while (next_ticket(sm.full, sm.tickets, ring, tile, n0)) {
#pragma unroll
      for (int i = 0; i < N / 2; ++i)
        acc[i] = 0.f;
      // The epilogue's row metadata, loaded now (independent loads: nothing
      // here waits for them) and used after the main loop.
      const RowMeta meta = load_row_meta<S, Gemm1>(p, tile, wg);
      const int copy_slot = staged_copy_row();
      const int copy_row = tile.row_begin + wg * 64 + copy_slot;
      const bool copies = STAGED && !BLOCKS_PARTIAL && copy_slot >= 0 && copy_row < tile.row_end;
      const int copy_assignment = !Gemm1 && copies ? p.sorted_ids[copy_row] : 0;
      int previous = -1;
      for (int kt = 0; kt < KT; ++kt) {
        // GEMM1's A rows come by cp.async.
        wgmma_stage<N, S::DT == kBF16, !A_BY_TMA, A_STAGE, B_STAGE>(sm.full, ring.stage, ring.phase,
                                                                    sm.a + wg * 64 * BK, sm.b, acc);
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
      if constexpr (BLOCKS_PARTIAL) {
        const int row0 = tile.row_begin + wg * 64;
        stage_blocked_tile<S, N>(p, n0, row0, min(64, tile.row_end - row0), acc, meta,
                                 sm.staging + wg * 64 * PITCH, 1 + wg);
      } else if constexpr (STAGED) {
        T *copy_dst = nullptr;
        if (copies)
          copy_dst = (Gemm1 ? static_cast<T *>(p.h) + static_cast<long long>(copy_row) * S::I
                            : gemm2_out_row<S>(p, copy_assignment)) +
                     n0;
        stage_wgmma_tile<S, Gemm1, N>(n0, acc, meta, sm.staging + wg * 64 * PITCH, 1 + wg,
                                      copy_dst);
      }
      else
        store_wgmma_tile<S, Gemm1, N>(p, tile, n0, wg, acc, meta);
    }
    if constexpr (STAGED)
      bulk_wait<0>(); // the last rows are in global memory before the grid ends
  }
};

} // namespace moejit_dev
