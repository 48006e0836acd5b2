// What the persistent warp-specialised GEMMs (kernels/moe_gemm_ws.cuh,
// kernels/moe_gemm_swap.cuh) share: the prologue, the stage ring that
// producer and consumers walk in step, the walk over (row tile, column
// tile) pairs, the producer's claims on it and the tickets by which it
// tells the consumers which tile a stage starts, and the producers, which
// differ only in the weight boxes they send (a callable: load(stage, k0,
// n0, expert, bar)).
#pragma once

#include "blocks/moe_gemm_common.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/griddep.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/warpgroup.cuh"
#include "ptx/wgmma.cuh"

namespace moejit_dev {

/// Where a role is in the stage ring: the stage, and the parity of the
/// phase its barriers complete next (it flips each time the ring wraps).
template <int STAGES> struct StageRing {
  int stage = 0;
  unsigned phase = 0;
  __device__ __forceinline__ void next() {
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1;
    }
  }
  /// `n` steps at once.
  __device__ __forceinline__ void advance(int n) {
    stage += n;
    phase ^= (stage / STAGES) & 1;
    stage %= STAGES;
  }
};

/// The named barrier of the producer warpgroup (1 and 2 are the consumer
/// warpgroups' epilogues', 0 the block's).
constexpr int kProducerBarrier = 3;

/// Row tiles per band of the banded walk (TileWalk).
constexpr int kBandRows = 8;

/// The walk of a persistent GEMM with BM-row tiles and COL_TILES column
/// tiles of BN columns over the list's row tiles (expert-major). With few
/// column tiles, row-major: the column tiles of one row tile next to each
/// other, so that CTAs running side by side share the expert's weights
/// and the tile's rows in L2. With many (BANDED: GEMM1 of mixtral-8x7b
/// has 112), row-major would have the 132 tiles in flight read ~132
/// distinct weight column tiles once each and every row tile of the
/// expert read them again from DRAM; so each expert's tiles go in bands
/// of kBandRows row tiles, column by column inside a band: the tiles in
/// flight share ~16 weight column tiles and 8 row tiles.
template <int BM, int BN, int COL_TILES> struct TileWalk {
  static constexpr bool BANDED = COL_TILES > 2 * kBandRows;

  static __device__ __forceinline__ int count(const LaunchParams &p) {
    return row_tile_count<BM>(p) * COL_TILES;
  }

  /// The row-major index of local tile `l` of an expert's `rows` x
  /// COL_TILES tiles in banded order.
  static __device__ __forceinline__ int band_order(int l, int rows) {
    const int band = l / (kBandRows * COL_TILES);
    const int band_rows = min(kBandRows, rows - band * kBandRows);
    const int w = l - band * kBandRows * COL_TILES;
    return (band * kBandRows + w % band_rows) * COL_TILES + w / band_rows;
  }

  /// The row-major index of tile `t` of the walk: in its expert's block of
  /// tiles (found from the list entry of the row-major tile t, whose
  /// expert is the same), its place in banded order.
  static __device__ __forceinline__ int row_major(const LaunchParams &p, int t) {
    if constexpr (!BANDED) {
      return t;
    } else {
      const int split = p.tile_m / BM;
      const int entry = t / COL_TILES / split;
      const TileRecord r = tile_record(p, entry);
      const int first_row = p.expert_offsets[r.expert];
      const int rows = p.expert_offsets[r.expert + 1] - first_row;
      const int first_entry = entry - (r.row_begin - first_row) / p.tile_m;
      const int base = first_entry * split * COL_TILES;
      return base + band_order(t - base, (rows + p.tile_m - 1) / p.tile_m * split);
    }
  }

  static __device__ __forceinline__ RowTile at(const LaunchParams &p, int t, int &n0) {
    t = row_major(p, t);
    n0 = (t % COL_TILES) * BN;
    return row_tile_at<BM>(p, t / COL_TILES);
  }

  /// The expert and n0 of the CTA's first tile (blockIdx.x: TileClaims)
  /// before the kernel waits for the one before it (warm_first_tile);
  /// false where there is none to tell. LIST_READY (GEMM2): as the
  /// routing's list has it, read from L2: GEMM2 starts only once GEMM1 has
  /// waited for the routing (stagesChainSafely: never straight after it).
  /// Otherwise (GEMM1 starts while the routing runs) a guess from T*k/E
  /// rows per expert, whose row tiles number rows/BM plus half a tile on
  /// average (the ceiling) once they fill more than half of one.
  template <class S, bool LIST_READY>
  static __device__ __forceinline__ bool first_tile(const LaunchParams &p, int &expert, int &n0) {
    if constexpr (BANDED)
      return false;
    const int t = blockIdx.x;
    n0 = (t % COL_TILES) * BN;
    const int row_tile = t / COL_TILES;
    if constexpr (LIST_READY) {
      const int split = p.tile_m / BM;
      if (row_tile >= __ldcg(p.num_tiles) * split)
        return false;
      expert = __ldcg(&p.tiles[row_tile / split].expert);
    } else {
      const long long rows = static_cast<long long>(p.tokens) * S::K / S::E;
      expert = static_cast<int>(row_tile * 2ll * BM / max(2ll * BM, 2 * rows + BM));
    }
    return expert >= 0 && expert < S::E;
  }
};

/// The tile a stage starts, written by the producer beside that stage once
/// the consumers have released it (before the stage's full barrier can
/// complete) and read by the consumers when the stage is full; expert < 0
/// ends the walk. The consumers thus take the tiles in the order the
/// producer claimed them and never look up the list themselves.
struct alignas(16) TileTicket {
  int expert, row_begin, row_end, n0;
};

/// The tiles one CTA's producer takes from the walk: index blockIdx.x
/// first, then whichever index is next when it is ready for another
/// (gridDim.x plus the count of claims so far, p.tile_claims[0]), so that
/// a CTA whose tiles ran slow takes fewer of the last ones instead of
/// ending a whole tile after the others: with every gridDim.x-th tile, the
/// SMs' active time at T=128 spread over 82-100% of the kernel's
/// (tools/bench/NOTES.md, session 26). The CTA that finishes claiming last
/// (p.tile_claims[1] counts them) sets both counts back to 0 for the next
/// persistent GEMM on the workspace; routing zeroes them for a fresh one.
/// One thread claims.
template <class Walk> struct TileClaims {
  int tiles;              // Walk::count
  int ahead = blockIdx.x; // the index a claim sent ahead (ask) returned, or -1

  /// Sends the next claim now, so that its round trip overlaps the
  /// producer's later stages of the current tile.
  __device__ __forceinline__ void ask(const LaunchParams &p) {
    ahead = gridDim.x + atomicAdd(p.tile_claims, 1);
  }

  /// The next valid tile, false (after counting this CTA done) when the
  /// walk is over.
  __device__ __forceinline__ bool next(const LaunchParams &p, RowTile &tile, int &n0) {
    if (ahead < 0)
      ask(p);
    // The claimed index as uniform (warp_uniform), as blockIdx.x was in a
    // fixed walk: tile and n0 then reach the TMA coordinates in uniform
    // registers.
    int t = warp_uniform(ahead);
    ahead = -1;
    for (; t < tiles; t = warp_uniform(gridDim.x + atomicAdd(p.tile_claims, 1))) {
      tile = Walk::at(p, t, n0);
      if (tile.valid)
        return true;
    }
    if (atomicAdd(p.tile_claims + 1, 1) == static_cast<int>(gridDim.x) - 1) {
      // Every CTA has made its last claim: none of this grid claims again.
      atomicExch(p.tile_claims, 0);
      atomicExch(p.tile_claims + 1, 0);
    }
    return false;
  }

  /// The ticket of what next() found.
  static __device__ __forceinline__ TileTicket ticket(bool found, const RowTile &tile, int n0) {
    return found ? TileTicket{tile.expert, tile.row_begin, tile.row_end, n0}
                 : TileTicket{-1, 0, 0, 0};
  }
};

/// A consumer's next tile: waits until the stage at `ring` is full and
/// reads its ticket; false when the walk is over.
template <int STAGES>
__device__ __forceinline__ bool next_ticket(unsigned long long *full, const TileTicket *tickets,
                                            const StageRing<STAGES> &ring, RowTile &tile, int &n0) {
  // The warp leaves the wait together (mbar_wait<true>): with each lane's
  // own exit ahead of the walk's end test, ptxas took the stage ring for
  // divergent and built the ws kernels' wgmma descriptors in vector
  // registers (two more R2UR per wgmma; session 26).
  mbar_wait<true>(&full[ring.stage], ring.phase);
  const TileTicket t = tickets[ring.stage];
  tile = {t.expert, t.row_begin, t.row_end, t.expert >= 0};
  n0 = t.n0;
  return tile.valid;
}

/// Thread 0 of a persistent GEMM, before the kernel waits for the one
/// before it: sends the weight boxes of the first k-tiles (as many as the
/// stages hold) of the CTA's first tile (Walk::first_tile) to L2, so that
/// the weight stream starts under the routing's or GEMM1's tail and the
/// first stages fill from L2 once the wait ends. The weights are no
/// kernel's output; a wrong guess costs only DRAM time the wait left idle.
template <class S, class Walk, bool LIST_READY, int KT, int STAGES, class Load>
__device__ __forceinline__ void warm_first_tile(const LaunchParams &p, const Load &load) {
  int expert, n0;
  if (!Walk::template first_tile<S, LIST_READY>(p, expert, n0))
    return;
#pragma unroll 1
  for (int kt = 0; kt < min(KT, STAGES); ++kt)
    load.prefetch(kt * 64, n0, expert);
}

/// The prologue of a persistent GEMM: refuses a shared-memory window off
/// the 1024-byte grid (wgmma would read a wrong swizzle), sets up the stage
/// barriers, prefetches the tensor maps and runs `early` on thread 0
/// (warm_first_tile), all overlapping the previous kernel's tail
/// (programmatic dependent launch: nothing here reads what the previous
/// kernel writes); then waits for that kernel and lets the next start. A
/// full barrier counts the producer thread's arrival (with the bytes its
/// boxes bring) and, unless the token rows come by TMA (ROWS_BY_TMA), every
/// producer thread's cp.async arrival; an empty one an arrival per consumer
/// warpgroup.
template <int STAGES, bool ROWS_BY_TMA, class Early>
__device__ __forceinline__ void ws_prologue(const void *smem, unsigned long long *full,
                                            unsigned long long *empty, const TensorMap *weights,
                                            const TensorMap *rows, const Early &early) {
  if ((smem_addr(smem) & 1023) != 0)
    __trap();
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], ROWS_BY_TMA ? 1 : 128 + 1);
      mbar_init(&empty[s], 2);
    }
    fence_mbarrier_init();
    prefetch_tensor_map(weights);
    if constexpr (ROWS_BY_TMA)
      prefetch_tensor_map(rows);
    early();
  }
  __syncthreads();
  griddep_wait();
  griddep_launch_dependents();
}

/// A consumer's k-tile: waits until stage `stage` is full, then issues
/// and commits the warpgroup's wgmma group over it (four k16 steps, +32
/// bytes each inside the 128-byte rows): A is 64 rows at `a` plus the
/// stage's offset (A_STAGE elements per stage), B N rows at `b` plus its
/// (B_STAGE). FENCE_PROXY: some of the stage came by cp.async (the generic
/// proxy) and wgmma reads through the async proxy.
template <int N, bool IsBf16, bool FENCE_PROXY, int A_STAGE, int B_STAGE, class T>
__device__ __forceinline__ void wgmma_stage(unsigned long long *full, int stage, unsigned phase,
                                            const T *a, const T *b, float (&acc)[N / 2]) {
  mbar_wait(&full[stage], phase);
  if constexpr (FENCE_PROXY)
    fence_proxy_async_shared();
  const T *ta = a + stage * A_STAGE, *tb = b + stage * B_STAGE;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
    Wgmma<N, IsBf16>::run(acc, wgmma_desc(ta + kk * 16), wgmma_desc(tb + kk * 16), 1);
  wgmma_commit();
}

/// Warpgroup 0 runs `produce` with the producer's register budget, 1 and
/// 2 run `consume` with the consumers' (moe_launch_abi.cuh).
template <class Produce, class Consume>
__device__ __forceinline__ void ws_roles(const Produce &produce, const Consume &consume) {
  if (threadIdx.x < 128) {
    setmaxnreg_dec<kWsProducerRegisters>();
    produce();
  } else {
    setmaxnreg_inc<kWsConsumerRegisters>();
    consume();
  }
}

/// Stages of ROWS token rows (64 elements each, 128-byte swizzle) beside
/// the weight boxes `load` sends; every stage's full barrier expects
/// WEIGHT_BYTES from `load`. TOKENS_AS_N: the token rows are wgmma's N
/// side (swap-AB), where a row reaches only its own output column, so
/// GEMM1's gather leaves a stage's rows past the tile's as they were
/// instead of zero-filling them; those kernels never zero y (ZeroY).
template <class S, class Walk, int STAGES, int ROWS, int KT, int WEIGHT_BYTES,
          bool TOKENS_AS_N = false>
struct WsProducer {
  using T = typename S::T;
  static constexpr int BK = 64, STAGE = ROWS * BK; // elements
  static constexpr int BOX_ROWS = kWsRowBoxRows, BOX_BYTES = BOX_ROWS * BK * 2;
  static_assert(ROWS % 16 == 0, "16 rows per pass of 128 threads");

  /// Element offset of 16-byte chunk `ch` of row `r` (the 128-byte swizzle).
  static __device__ __forceinline__ int swizzled(int r, int ch) {
    return r * BK + ((ch ^ (r & 7)) << 3);
  }

  /// The producer warpgroup's part: `send` by its thread 0 when the token
  /// rows come by TMA (GEMM2), `gather` otherwise. `tickets`: one per
  /// stage (TileTicket).
  template <bool BY_TMA, class Load>
  static __device__ __forceinline__ void
  produce(const LaunchParams &p, const TensorMap *h_rows, T *rows, unsigned long long *full,
          unsigned long long *empty, TileTicket *tickets, int tiles, const Load &load) {
    if constexpr (BY_TMA) {
      if (threadIdx.x == 0)
        send(p, h_rows, rows, full, empty, tickets, tiles, load);
    } else {
      gather(p, rows, full, empty, tickets, tiles, load);
    }
  }

  /// Fast mode's y, zeroed by GEMM1's producer (p.zero_y; null when the
  /// host zeroes y): one 16-byte store per producer thread and stage, the
  /// CTAs interleaved, the rest after the last tile, so that the writes
  /// hide under GEMM1's main loops instead of a memset in front of the
  /// routing. GEMM2 adds into y only once GEMM1 has completed.
  struct ZeroY {
    long long next; // this thread's next 16-byte chunk of y
    __device__ __forceinline__ ZeroY() : next(blockIdx.x * 128ll + threadIdx.x) {}
    static __device__ __forceinline__ long long chunks(const LaunchParams &p) {
      return p.zero_y ? static_cast<long long>(p.tokens) * S::H * sizeof(T) / 16 : 0;
    }
    __device__ __forceinline__ void step(const LaunchParams &p) {
      if (next < chunks(p)) {
        static_cast<Vec16 *>(p.zero_y)[next] = Vec16{};
        next += gridDim.x * 128ll;
      }
    }
    __device__ __forceinline__ void finish(const LaunchParams &p) {
      for (; next < chunks(p); next += gridDim.x * 128ll)
        static_cast<Vec16 *>(p.zero_y)[next] = Vec16{};
    }
  };

  /// `column` plus `token` rows of H elements, in one wide multiply-add
  /// (left to itself the compiler adds the 64-bit base last, three
  /// instructions per row and stage).
  static __device__ __forceinline__ const T *row_chunk(const T *column, int token) {
    const T *chunk;
    asm volatile("mad.wide.s32 %0, %1, %2, %3;"
                 : "=l"(chunk)
                 : "r"(token), "n"(S::H * 2), "l"(column));
    return chunk;
  }

  /// One stage of `gather`: the thread's PASSES row chunks of the column
  /// `column`, `bytes` each (0 past K), under the L2 policy `policy` where
  /// HINTED.
  template <bool HINTED, int PASSES>
  static __device__ __forceinline__ void gather_stage(unsigned dst, const T *column,
                                                      unsigned bytes, const int (&token)[PASSES],
                                                      int live, unsigned long long policy) {
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      const unsigned to = dst + i * 16 * BK * 2;
      if constexpr (TOKENS_AS_N) {
        cp_async_16_if<HINTED>(i < live, to, row_chunk(column, token[i]), bytes, policy);
      } else {
        const bool ok = token[i] >= 0;
        cp_async_16_bytes<HINTED>(to, row_chunk(column, ok ? token[i] : 0), ok ? bytes : 0,
                                  policy);
      }
    }
  }

  /// GEMM1 only (x rows, K = H): the 128 threads of the producer warpgroup
  /// gather the tiles' x rows with cp.async (zero-filled past K, and past
  /// the tile's rows unless TOKENS_AS_N: the full barriers count 128 + 1
  /// arrivals); thread 96 (warp 3) sends the weights. The issue rate of these four
  /// warps bounds a stage's time, so a row costs two instructions per
  /// stage: its address (the token's row times H plus the stage's column)
  /// and its copy. Thread tid copies chunk tid % 8 of rows tid / 8 + 16 i;
  /// 16 i keeps a row's swizzle phase, so each copy lands at the same
  /// shared address plus an immediate.
  template <class Load>
  static __device__ void gather(const LaunchParams &p, T *rows, unsigned long long *full,
                                unsigned long long *empty, TileTicket *tickets, int tiles,
                                const Load &load) {
    constexpr int PASSES = ROWS / 16;
    const int tid = threadIdx.x, ch = tid & 7, r0 = tid >> 3;
    const unsigned first = smem_addr(rows + swizzled(r0, ch));
    // The expert's other column tiles gather the same rows again: kept in
    // L2 against the weight stream (session 44, H100, T=2048: GEMM1 reads
    // 841 MB from DRAM instead of 877 for 805 of weights, -3.7%), where x
    // is small against L2; else they would push out the weights an
    // expert's row tiles share (session 45: p.keep_x_in_l2).
    const bool keep = p.keep_x_in_l2 != 0;
    const unsigned long long policy = l2_evict_last_policy();
    ZeroY zero_y;
    StageRing<STAGES> ring;
    TileClaims<Walk> claims{tiles}; // thread 0's
    // Thread 0 tells the warpgroup its claim through a slot past the
    // stages' tickets, written between two named barriers.
    TileTicket *claimed = tickets + STAGES;
    for (;;) {
      // The claim and the token lookups come before the wait on the stage
      // (they overlap the consumers' math, as with a fixed walk); the
      // ticket goes beside the tile's first stage once the consumers have
      // released it, before that stage's full barrier can complete.
      RowTile tile;
      int n0 = 0;
      const bool found = tid == 0 && claims.next(p, tile, n0);
      named_barrier_sync(kProducerBarrier, 128); // every thread read the last claim
      if (tid == 0)
        *claimed = TileClaims<Walk>::ticket(found, tile, n0);
      named_barrier_sync(kProducerBarrier, 128);
      const TileTicket read = *claimed;
      const TileTicket ticket{warp_uniform(read.expert), warp_uniform(read.row_begin),
                              warp_uniform(read.row_end), warp_uniform(read.n0)};
      if (ticket.expert < 0) {
        // The end, for the consumers: the stage's full barrier completes
        // with no bytes (128 + 1 arrivals).
        mbar_wait(&empty[ring.stage], ring.phase ^ 1);
        if (tid == 0)
          tickets[ring.stage] = ticket;
        mbar_arrive(&full[ring.stage]);
        if (tid == 0)
          mbar_arrive(&full[ring.stage]);
        break;
      }
      // Per pass: the token of the thread's row, -1 where the tile has none
      // (the passes from `live` on: rows past the tile's come last).
      int token[PASSES];
#pragma unroll
      for (int i = 0; i < PASSES; ++i) {
        const int row = ticket.row_begin + r0 + 16 * i;
        token[i] = row < ticket.row_end ? p.sorted_ids[row] / S::K : -1;
      }
      const int live = (ticket.row_end - ticket.row_begin - r0 + 15) / 16;
      for (int kt = 0; kt < KT; ++kt) {
        if (tid == 0 && kt == KT / 2)
          claims.ask(p);
        mbar_wait(&empty[ring.stage], ring.phase ^ 1);
        const int k = kt * BK + ch * 8;
        // Warp 3 sends the weights: thread 0 already claims tiles, and a
        // stage's time is its slowest warp's issue (session 37: -0.25% at
        // T=4096 and 8192 against thread 0). It writes the tile's ticket
        // too: its arrival releases (the other threads' arrive through
        // cp.async, which orders none of their own stores).
        if (tid == 96) {
          if (kt == 0)
            tickets[ring.stage] = ticket;
          mbar_arrive_expect_tx(&full[ring.stage], WEIGHT_BYTES);
          load(ring.stage, kt * BK, ticket.n0, ticket.expert, &full[ring.stage]);
        }
        const unsigned dst = first + ring.stage * STAGE * 2;
        // The stage's column in row 0 (past K a mapped chunk, copied as
        // zeros); a row's chunk is one multiply-add from it.
        const T *column = static_cast<const T *>(p.x) + (k < S::H ? k : 0);
        const unsigned bytes = k < S::H ? 16 : 0;
        // One uniform branch per stage, not per copy.
        if (keep)
          gather_stage<true>(dst, column, bytes, token, live, policy);
        else
          gather_stage<false>(dst, column, bytes, token, live, policy);
        cp_async_mbar_arrive(&full[ring.stage]);
        if constexpr (!TOKENS_AS_N)
          zero_y.step(p);
        ring.next();
      }
    }
    if constexpr (!TOKENS_AS_N)
      zero_y.finish(p);
    cp_async_wait<0>();
  }

  /// GEMM2: one thread sends every box of every stage: the boxes of
  /// BOX_ROWS h rows (sorted order) that hold the tile's rows (the full
  /// barriers count 1 arrival plus bytes), then the weights. Rows of a
  /// stage past the boxes sent keep an older tile's values; each output
  /// row depends on its own row only, and the epilogue drops those.
  template <class Load>
  static __device__ void send(const LaunchParams &p, const TensorMap *h_rows, T *rows,
                              unsigned long long *full, unsigned long long *empty,
                              TileTicket *tickets, int tiles, const Load &load) {
    static_assert(ROWS % BOX_ROWS == 0 && BOX_ROWS % 8 == 0, "boxes of whole swizzle atoms");
    StageRing<STAGES> ring;
    TileClaims<Walk> claims{tiles};
    for (;;) {
      RowTile tile;
      int n0 = 0;
      const bool found = claims.next(p, tile, n0);
      mbar_wait(&empty[ring.stage], ring.phase ^ 1);
      tickets[ring.stage] = TileClaims<Walk>::ticket(found, tile, n0);
      if (!found) {
        mbar_arrive(&full[ring.stage]); // the end, for the consumers: no bytes
        return;
      }
      const int boxes = (tile.row_end - tile.row_begin + BOX_ROWS - 1) / BOX_ROWS;
      for (int kt = 0; kt < KT; ++kt) {
        if (kt == KT / 2)
          claims.ask(p);
        if (kt > 0)
          mbar_wait(&empty[ring.stage], ring.phase ^ 1);
        const int k0 = kt * BK;
        T *x = rows + ring.stage * STAGE;
        mbar_arrive_expect_tx(&full[ring.stage], BOX_BYTES * boxes + WEIGHT_BYTES);
        for (int q = 0; q < boxes; ++q)
          tma_load_2d(x + q * BOX_ROWS * BK, h_rows, &full[ring.stage], k0,
                      tile.row_begin + q * BOX_ROWS);
        load(ring.stage, k0, n0, tile.expert, &full[ring.stage]);
        ring.next();
      }
    }
  }
};

} // namespace moejit_dev
