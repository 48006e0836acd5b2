// Grouped GEMMs on Hopper (sm_90a) for few rows per expert: swap-AB. The
// expert's weights are wgmma's M side (64 weight rows per consumer
// warpgroup, 128 per tile, by TMA) and the tile's token rows its N side
// (BM rows; from BM = 128 up a tile with fewer runs BM/4, BM/2 or a
// multiple of 32 above BM/2: one main loop per width, chosen once per
// tile), so a tile with few rows costs the weight stream and not 128 rows
// of tensor work, and an expert's rows up to BM = 256 cost their width
// rounded to 32, not a second tile re-reading its weights.
// Persistent and warp-specialised like kernels/moe_gemm_ws.cuh, whose
// prologue, stage ring, tile walk and producers (blocks/ws_pipeline.cuh)
// it shares: warpgroup 0 produces (weights by TMA; GEMM1's token rows
// gathered with cp.async, zero-filled past K, none past the tile's rows;
// GEMM2's h rows by TMA in boxes of 32 rows), warpgroups 1 and 2 consume.
//
// GEMM1's weight box interleaves gate and up in 8-row groups (a 5-D map:
// k, 8 rows, gate/up, column group, expert), so the gate and up values of
// one h column and token sit in one thread (accumulators i and i + 2):
// silu(gate) * up needs no exchange. Each thread holds an output column
// for pairs of tokens; one shuffle with the lane holding the next column
// turns them into column pairs of one token, stored 4 bytes at a time.
// GEMM2 (64-row tiles and up, at widths that are multiples of 32) transposes
// through shared memory instead and stores 16-byte pieces of token rows
// (store_rows_staged).
#pragma once

#include "blocks/moe_gemm_common.cuh"
#include "blocks/ws_pipeline.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/griddep.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/smem.cuh"
#include "ptx/tma.cuh"
#include "ptx/warpgroup.cuh"
#include "ptx/wgmma.cuh"

namespace moejit_dev {

template <int BM_, int STAGES_> struct SwapTile {
  static constexpr int BM = BM_, STAGES = STAGES_;
  static constexpr int THREADS = kWsThreads; // producer + two consumer warpgroups
};

template <class S, class Tl, bool Gemm1> struct SwapGemm {
  using T = typename S::T;
  using D = GemmDims<S, Gemm1>;
  static constexpr int BM = Tl::BM, STAGES = Tl::STAGES, THREADS = Tl::THREADS;
  static constexpr int BK = 64;                  // one 128-byte row per k-tile
  static constexpr int W_ROWS = kSwapWeightRows; // 64 per consumer warpgroup
  // Output columns per tile: GEMM1's weight rows are gate and up of each column.
  static constexpr int BN = Gemm1 ? W_ROWS / 2 : W_ROWS;
  static constexpr int KT = (D::K + BK - 1) / BK;
  static constexpr int COL_TILES = (D::N + BN - 1) / BN;
  static constexpr int X_ROWS = BM; // token rows of a stage (GEMM2's: whole 32-row boxes)
  static constexpr int W_STAGE = W_ROWS * BK, X_STAGE = X_ROWS * BK; // elements
  static constexpr int W_STAGE_BYTES = W_STAGE * 2;
  // GEMM2's staging chunks (tiles of at least 64 token rows; the host
  // reserves them by the same rule), used where its rows are plain stores
  // of 16-byte aligned pieces.
  static constexpr int STAGING_BYTES = swap_staging_bytes(!Gemm1, BM);
  static constexpr bool STAGED_ROWS = STAGING_BYTES > 0 && !S::ADD_TO_Y && S::H % 8 == 0;
  // Stages, staging chunks, then a full and an empty barrier and a tile
  // ticket per stage, then the gathering producer's claim slot.
  static constexpr int SMEM_BYTES =
      STAGES * (W_STAGE + X_STAGE) * 2 + STAGING_BYTES + STAGES * 32 + 16;
  static constexpr bool X_BY_TMA = !Gemm1;
  static_assert(S::DT != kFP32, "wgmma path takes bf16 or fp16");
  static_assert(BM == 32 || BM == 64 || BM == 128 || BM == 256, "token rows: 32, 64, 128 or 256");
  static_assert(S::I % 8 == 0, "GEMM1's weight map groups columns by 8");
  static_assert(STAGES >= 2, "at least two stages");

  using Ring = StageRing<STAGES>;
  using Walk = TileWalk<BM, BN, COL_TILES>;

  struct Smem {
    T *w, *x, *staging;
    unsigned long long *full, *empty;
    TileTicket *tickets;
  };

  /// Token widths above BM/2 step by this (BM >= 128: wgmma's N in
  /// multiples of 32; tiles of 64 rows or fewer run at BM only).
  static constexpr int WIDE_STEP = BM >= 128 ? 32 : BM / 2;

  /// The token width a tile runs with: BM for tiles of 64 rows or fewer
  /// (one main loop: their tiles are weight streams, under which the
  /// tensor work of 32 or 64 token columns hides as well as that of 8 or
  /// 16, and each main loop more costs NVRTC ~100 ms), else the narrowest
  /// of BM/4, BM/2 and the steps above BM/2 that holds its rows.
  static __device__ __forceinline__ int width_for(int rows) {
    if constexpr (BM <= 64)
      return BM;
    if (rows <= BM / 4)
      return BM / 4;
    if (rows <= BM / 2)
      return BM / 2;
    return BM / 2 + (rows - BM / 2 + WIDE_STEP - 1) / WIDE_STEP * WIDE_STEP;
  }

  /// Sends the weight box of one stage.
  struct LoadWeights {
    const TensorMap *map;
    T *w;
    __device__ __forceinline__ void operator()(int stage, int k0, int n0, int expert,
                                               unsigned long long *bar) const {
      if constexpr (Gemm1)
        // [H, 8, 2, I/8, E]: 8 gate rows, then the up rows of the same
        // columns, for 8 groups of 8 columns.
        tma_load_5d(w + stage * W_STAGE, map, bar, k0, 0, 0, n0 / 8, expert);
      else
        tma_load_3d(w + stage * W_STAGE, map, bar, k0, n0, expert);
    }
    /// The same box into L2 (warm_first_tile).
    __device__ __forceinline__ void prefetch(int k0, int n0, int expert) const {
      if constexpr (Gemm1)
        tma_prefetch(map, k0, 0, 0, n0 / 8, expert);
      else
        tma_prefetch(map, k0, n0, expert);
    }
  };
  // GEMM1 gathers only the tile's rows: the stage's rows past them keep an
  // older tile's values, which reach only their own token columns of the
  // accumulators, and the epilogue drops those.
  using Producer = WsProducer<S, Walk, STAGES, X_ROWS, KT, W_STAGE_BYTES, /*TOKENS_AS_N=*/true>;

  /// `rows`: GEMM2's map of h (2-D: I, T*k rows; boxes of kWsRowBoxRows
  /// rows), null for GEMM1.
  static __device__ void run(const LaunchParams &p, const TensorMap *weights,
                             const TensorMap *rows) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    Smem sm;
    sm.w = reinterpret_cast<T *>(smem_raw);
    sm.x = sm.w + STAGES * W_STAGE;
    sm.staging = sm.x + STAGES * X_STAGE;
    sm.full = reinterpret_cast<unsigned long long *>(smem_raw + STAGES * (W_STAGE + X_STAGE) * 2 +
                                                     STAGING_BYTES);
    sm.empty = sm.full + STAGES;
    sm.tickets = reinterpret_cast<TileTicket *>(sm.empty + STAGES);
    const LoadWeights load{weights, sm.w};
    ws_prologue<STAGES, X_BY_TMA>(smem_raw, sm.full, sm.empty, weights, rows, [&] {
      warm_first_tile<S, Walk, /*LIST_READY=*/!Gemm1, KT, STAGES>(p, load);
    });
    // The producer counts the tiles after its register budget is set: a
    // value carried across setmaxnreg went to local memory in the 256-row
    // GEMM1.
    ws_roles(
        [&] {
          Producer::template produce<X_BY_TMA>(p, rows, sm.x, sm.full, sm.empty, sm.tickets,
                                               Walk::count(p), load);
        },
        [&] { consume(p, sm); });
  }

  static __device__ void consume(const LaunchParams &p, const Smem &sm) {
    Ring ring;
    RowTile tile;
    int n0;
    while (next_ticket(sm.full, sm.tickets, ring, tile, n0)) {
      // Each width's main loop walks its own copy of the ring, which moves
      // on by the tile's KT stages here, on the path every width shares: a
      // ring the width's branches (on a ticket read from shared memory)
      // each moved is one ptxas keeps in vector registers, and the wgmma
      // descriptors made from it too (two more R2UR per wgmma).
      const int width = width_for(tile.row_end - tile.row_begin);
      if constexpr (BM <= 64)
        consume_tile<BM>(p, sm, ring, tile, n0);
      else if (width == BM / 4)
        consume_tile<BM / 4>(p, sm, ring, tile, n0);
      else if (width == BM / 2)
        consume_tile<BM / 2>(p, sm, ring, tile, n0);
      else
        consume_wide<BM>(width, p, sm, ring, tile, n0);
      ring.advance(KT);
    }
  }

  /// A tile wider than BM/2: the main loop of its width (NT or a step below).
  template <int NT>
  static __device__ __forceinline__ void consume_wide(int width, const LaunchParams &p,
                                                      const Smem &sm, Ring ring,
                                                      const RowTile &tile, int n0) {
    if constexpr (NT - WIDE_STEP > BM / 2) {
      if (width < NT) {
        consume_wide<NT - WIDE_STEP>(width, p, sm, ring, tile, n0);
        return;
      }
    }
    consume_tile<NT>(p, sm, ring, tile, n0);
  }

  /// One tile with NT token columns: the main loop (on its own copy of
  /// the ring: the caller moves the ring on), then the epilogue.
  template <int NT>
  static __device__ __forceinline__ void consume_tile(const LaunchParams &p, const Smem &sm,
                                                      Ring ring, const RowTile &tile, int n0) {
    const int wg = threadIdx.x / 128 - 1; // 64 weight rows of the tile
    const bool signals = threadIdx.x % 128 == 0;
    float acc[NT / 2];
#pragma unroll
    for (int i = 0; i < NT / 2; ++i)
      acc[i] = 0.f;
    for (int kt = 0; kt < KT; ++kt) {
      wgmma_stage<NT, S::DT == kBF16, !X_BY_TMA, W_STAGE, X_STAGE>(sm.full, ring.stage, ring.phase,
                                                                   sm.w + wg * 64 * BK, sm.x, acc);
      wgmma_wait<0>();
      if (signals)
        mbar_arrive(&sm.empty[ring.stage]);
      ring.next();
    }
    if constexpr (STAGED_ROWS && NT % kSwapStagingTokens == 0)
      store_rows_staged<NT>(p, tile, n0, wg, acc,
                            sm.staging + wg * kSwapStagingTokens * kSwapStagingPitch);
    else
      store_tile<NT>(p, tile, n0, wg, acc);
  }

  /// GEMM2's rows through shared memory, kSwapStagingTokens tokens at a
  /// time: each warp transposes its 16 output columns of the chunk's tokens
  /// with stmatrix .trans (weighted and rounded once, as store_partial
  /// does), then every thread stores 16-byte pieces of token rows (a
  /// warpgroup's 64 columns are 128 contiguous bytes of a partial row), not
  /// 4-byte column pairs: a quarter of the store instructions, each
  /// touching 4 rows instead of 8. `staging`: this warpgroup's chunk.
  template <int NT>
  static __device__ __forceinline__ void store_rows_staged(const LaunchParams &p,
                                                           const RowTile &tile, int n0, int wg,
                                                           float (&acc)[NT / 2], T *staging) {
    constexpr int CT = kSwapStagingTokens, PITCH = kSwapStagingPitch;
    constexpr int PIECES = CT * 8 / 128; // 16-byte pieces per thread and chunk
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3, tid = threadIdx.x & 127;
    const int barrier = 1 + wg; // named barrier of this warpgroup alone
    const unsigned base = smem_addr(staging);
    // stmatrix: lane l addresses token row l%8 of matrix l/8, the matrices
    // being (q, columns 0-7), (q, 8-15), (q+1, 0-7), (q+1, 8-15) of the
    // warp's 16 columns.
    const unsigned st_addr =
        base + 2u * (((lane & 7) + 8 * (lane >> 4)) * PITCH + warp * 16 + 8 * ((lane >> 3) & 1));
    // Piece j of this thread: token tid/8 + 16j of the chunk, 8 columns.
    const int piece_col = 8 * (tid & 7);
    const unsigned ld_addr = base + 2u * ((tid >> 3) * PITCH + piece_col);
    const int col = n0 + wg * 64 + piece_col;
#pragma unroll
    for (int c0 = 0; c0 < NT; c0 += CT) {
      // The chunk's weights (this lane's two tokens of each q) and its
      // pieces' assignments, loaded before the barrier waits.
      float w[CT / 8][2];
      int assignment[PIECES];
#pragma unroll
      for (int q = 0; q < CT / 8; ++q)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int row = tile.row_begin + c0 + 8 * q + 2 * (lane & 3) + e;
          w[q][e] = row < tile.row_end ? __ldg(p.sorted_weights + row) : 0.f;
        }
#pragma unroll
      for (int j = 0; j < PIECES; ++j) {
        const int row = tile.row_begin + c0 + (tid >> 3) + 16 * j;
        assignment[j] = row < tile.row_end ? __ldg(p.sorted_ids + row) : -1;
      }
      named_barrier_sync(barrier, 128); // the previous chunk's pieces are read
#pragma unroll
      for (int qq = 0; qq < CT / 8; qq += 2) {
        const int q = c0 / 8 + qq;
        stmatrix_x4_trans(
            st_addr + 2u * static_cast<unsigned>(qq * 8 * PITCH),
            pack2<S::DT>(acc[4 * q] * w[qq][0], acc[4 * q + 1] * w[qq][1]),
            pack2<S::DT>(acc[4 * q + 2] * w[qq][0], acc[4 * q + 3] * w[qq][1]),
            pack2<S::DT>(acc[4 * q + 4] * w[qq + 1][0], acc[4 * q + 5] * w[qq + 1][1]),
            pack2<S::DT>(acc[4 * q + 6] * w[qq + 1][0], acc[4 * q + 7] * w[qq + 1][1]));
      }
      named_barrier_sync(barrier, 128);
#pragma unroll
      for (int j = 0; j < PIECES; ++j)
        if (assignment[j] >= 0 && col < D::N)
          *reinterpret_cast<uint4 *>(gemm2_out_row<S>(p, assignment[j]) + col) =
              ld_shared_v4(ld_addr + 2u * static_cast<unsigned>(16 * j * PITCH));
    }
  }

  /// acc[i] of warp w, lane l is weight row 16w + l/4 + 8*((i>>1)&1) of
  /// the warpgroup's 64 and token 8*(i>>2) + 2*(l%4) + i%2 of the tile.
  /// GEMM1: rows 16w..16w+7 are the gate rows of h columns 8w..8w+7 of the
  /// warpgroup's 32, rows 16w+8.. their up rows. GEMM2: row r is output
  /// column r of the warpgroup's 64.
  template <int NT>
  static __device__ __forceinline__ void store_tile(const LaunchParams &p, const RowTile &tile,
                                                    int n0, int wg, float (&acc)[NT / 2]) {
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    // Lanes l and l^4 hold neighbouring columns: the even one stores the
    // pair for its first token, the odd one for its second.
    const bool odd = (lane >> 2) & 1;
    const int col_base = Gemm1 ? n0 + wg * 32 + warp * 8 : n0 + wg * 64 + warp * 16;
    // Token row of this lane's q-th pair of columns.
    auto row_of = [&](int q) { return tile.row_begin + 8 * q + 2 * (lane & 3) + (odd ? 1 : 0); };
    if constexpr (Gemm1) {
#pragma unroll
      for (int q = 0; q < NT / 8; ++q) {
        const int row = row_of(q);
        const float v0 = silu(acc[4 * q]) * acc[4 * q + 2];
        const float v1 = silu(acc[4 * q + 1]) * acc[4 * q + 3];
        float a, b;
        pair_up(odd, v0, v1, a, b);
        const int col = col_base + ((lane >> 2) & ~1);
        if (row < tile.row_end && col < D::N)
          store2<S::DT>(static_cast<T *>(p.h) + static_cast<long long>(row) * S::I + col, a, b);
      }
    } else {
      // The rows' assignments and weights, CHUNK q's at a time ahead of
      // their stores: a load after a store to `partial` waits for it (the
      // compiler cannot tell the two apart), so one load per q left each q
      // a full load latency (a quarter of GEMM2's stall samples at T=2048).
      constexpr int CHUNK = NT / 8 < 8 ? NT / 8 : 8;
#pragma unroll
      for (int q0 = 0; q0 < NT / 8; q0 += CHUNK) {
        int assignment[CHUNK];
        float weight[CHUNK];
#pragma unroll
        for (int c = 0; c < CHUNK; ++c) {
          const int row = row_of(q0 + c);
          const bool ok = row < tile.row_end;
          assignment[c] = ok ? __ldg(p.sorted_ids + row) : 0;
          weight[c] = ok ? __ldg(p.sorted_weights + row) : 0.f;
        }
#pragma unroll
        for (int c = 0; c < CHUNK; ++c) {
          const int q = q0 + c;
          const bool row_ok = row_of(q) < tile.row_end;
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            float a, b;
            pair_up(odd, acc[4 * q + 2 * hh], acc[4 * q + 2 * hh + 1], a, b);
            const int col = col_base + 8 * hh + ((lane >> 2) & ~1);
            if (row_ok && col < D::N)
              store_partial<S>(p, assignment[c], weight[c], col, a, b);
          }
        }
      }
    }
  }

  /// v0, v1: this lane's column for its two tokens. Returns in a, b the
  /// even and odd column of one token: the first token's on an even lane,
  /// the second's on an odd one (every lane of the warp takes part).
  static __device__ __forceinline__ void pair_up(bool odd, float v0, float v1, float &a, float &b) {
    const float got = __shfl_xor_sync(0xffffffffu, odd ? v0 : v1, 4);
    a = odd ? got : v0;
    b = odd ? v1 : got;
  }
};

} // namespace moejit_dev
