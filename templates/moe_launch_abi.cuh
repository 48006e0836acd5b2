// What the host and the kernels must agree on, in one header that both g++
// (src/runtime/launch_params.h) and NVRTC (moe_common.cuh) read: the launch
// parameter block, byte for byte, and the launch shapes and chunk sizes of
// the fixed kernels. Plain C++ with no includes: NVRTC has no <cstdint>,
// so 32-bit fields are `int` (int32_t on every platform moejit builds for).
#pragma once

namespace moejit_abi {

/// A tile of the routing's tile list: its expert and its sorted rows
/// [row_begin, row_end), in one 16-byte record so that a GEMM finds a tile
/// with one load (not the entry, then the expert's end row, a second
/// round trip that stalled every persistent tile's start).
struct alignas(16) TileRecord {
  int expert, row_begin, row_end, unused;
};
static_assert(sizeof(TileRecord) == 16, "a tile record is four ints, one 16-byte load");

/// One call's parameters, passed by value to every kernel. Workspace arrays
/// are described at their producer (templates/kernels/moe_route.cuh).
struct LaunchParams {
  const void *x;
  const void *gate_up;
  const void *down;
  const void *top_k_index;   // [T*k] int32 or int64 (index_bytes)
  const void *top_k_weights; // [T*k] float32, or the model dtype (weights_in_model_dtype)
  void *y;
  int *block_counts;   // [E * route_blocks]: counts, then scanned bases
  int *expert_offsets; // [E + 1]: first sorted row of each expert
  TileRecord *tiles;   // [max_tiles]: the tiles of this call's routing
  int *num_tiles;      // [1]
  int *tile_claims;    // [2]: claims on the running persistent GEMM's tiles, CTAs done claiming
  int *sorted_ids;     // [T*k]: assignment t*k+j of each sorted row
  float *sorted_weights; // [T*k]: that assignment's routing weight, as float
  int *sorted_rows;    // [T*k]: the sorted row of each assignment t*k+j, -1 if unrouted
  void *h;             // [T*k, I]: silu(gate)*up, rows in sorted order
  void *partial;       // weighted GEMM2 rows: [T*k, H] at row t*k+j, or blocked (partial_block_cols)
  void *zero_y;        // y (16-byte aligned) for GEMM1 to zero before a GEMM2 adds into it; or null
  int tokens;
  int route_blocks;      // ceil(T*k / kRouteChunk)
  int tile_m;            // rows per GEMM tile (BM of the chosen config)
  int max_tiles;         // bound on tiles for any routing of T tokens
  const int *expert_map; // [expert_map_size]: global id -> local id or -1; null: ids are local
  int expert_map_size;
  int index_bytes;            // 4 or 8
  int weights_in_model_dtype; // 0: float32, 1: the workload dtype
  int route_counted;          // 1: route_count wrote block_counts before route_wide
  int partial_block_cols;     // 0: partial by assignment; else GEMM2's BN (partial_block_offset)
  int keep_x_in_l2;           // 1: GEMM1 gathers x rows evict_last (runtime::keepsXInL2)
};
static_assert(sizeof(LaunchParams) == 18 * 8 + 10 * 4, "LaunchParams has no padding on LP64");

/// Assignments (token, slot) per routing block.
constexpr int kRouteChunk = 1024;
#ifdef __CUDACC__
#define MOEJIT_ABI_FN __host__ __device__ constexpr
#else
#define MOEJIT_ABI_FN constexpr
#endif

/// route_block routes a whole call in one block (count, scan, tile list,
/// stable scatter) up to this many assignments T*k, with one count per
/// (expert, warp) and two [E+1] tables in static shared memory; shapes with
/// more experts, or calls with more assignments, route in three launches.
/// The bound is measured (tools/bench/NOTES.md, session 24): at the seed
/// shape route_block is 1 us faster than route_wide up to T*k = 512, even
/// at 1024, 3 us slower at 2048.
constexpr int kRouteBlockMaxExperts = 1024;
constexpr int kRouteBlockMaxAssignments = 1024;

/// route_wide routes a call over route_blocks blocks for up to
/// kRouteBlockMaxExperts experts. Up to this many assignments each block
/// counts every assignment itself (one launch, no block waits for
/// another); past it the redundant counting (T*k ids and shared-memory
/// adds per block) costs more than a second launch: route_count runs
/// first and each block sums its per-block counts. Measured (seed shape,
/// H100, the routing alone as chained in a call, session 36): counting
/// everything 15.3 us at T*k = 16384 against 16.0 with route_count, 20.7
/// against 16.4 at 32768.
constexpr int kRouteWideMaxAssignments = 16384;

/// Warps (at most `most`) of a routing block that keeps one count per
/// (expert, warp) and `tables` [E+1] tables of ints in static shared
/// memory: halved until they fit 44 KB.
MOEJIT_ABI_FN int warps_fitting(int most, int experts, int tables) {
  int warps = most;
  while (warps > 1 && (warps * experts + tables * (experts + 1)) * 4 > 44 * 1024)
    warps /= 2;
  return warps;
}

/// Warps of route_block for `experts`: 32 with its two tables, or fewer.
MOEJIT_ABI_FN int route_block_warps(int experts) { return warps_fitting(32, experts, 2); }

/// Warp-specialised GEMMs (kernels/moe_gemm_ws.cuh): a producer and two
/// consumer warpgroups, whose setmaxnreg budgets must fit what the kernel
/// got at entry (__launch_bounds__(384, 1): 168 per thread), or the
/// consumers' setmaxnreg.inc would wait for ever. The loader checks it.
constexpr int kWsThreads = 384;
constexpr int kWsProducerRegisters = 56;
constexpr int kWsConsumerRegisters = 224;
static_assert(kWsProducerRegisters * 128 + kWsConsumerRegisters * 256 <= 168 * kWsThreads,
              "warpgroup register budgets exceed the entry allocation");

/// Rows per TMA box of GEMM2's A operand (h rows) in the ws kernels: a
/// tile sends only the boxes that hold its rows, so small boxes read fewer
/// rows past a tile's end (the host encodes the map with this box).
constexpr int kWsRowBoxRows = 32;

/// Weight rows per tile of the swap-AB GEMMs (kernels/moe_gemm_swap.cuh):
/// 64, wgmma's M, per consumer warpgroup.
constexpr int kSwapWeightRows = 128;

/// The swap-AB GEMM2's staged row stores: its tiles of at least 64 token
/// rows reserve, per consumer warpgroup, a chunk of this many tokens by its
/// 64 output columns (plus 8 columns of padding against bank conflicts) in
/// shared memory, where the accumulators are transposed into token rows.
constexpr int kSwapStagingTokens = 32;
constexpr int kSwapStagingPitch = kSwapWeightRows / 2 + 8; // elements per token row
constexpr int swap_staging_bytes(bool gemm2, int token_rows) {
  return gemm2 && token_rows >= 64 ? 2 * kSwapStagingTokens * kSwapStagingPitch * 2 : 0;
}

/// GEMM2's weighted rows in the blocked layout (the warp-specialised GEMM2
/// with a staged epilogue, Combine::Deterministic and BatchInvariant): rows
/// in sorted order, in groups of 64 rows; inside a group, the rows' pieces
/// of `block_cols` (GEMM2's BN) columns, one column tile after another. The
/// 64 rows a consumer warpgroup stores are then at most two contiguous runs
/// (they straddle a group boundary), sent by at most two bulk copies (a copy
/// per row, as a layout by assignment needs, cost GEMM2 13% of its
/// consumers' samples at T=8192), and a row's pieces lie within one group
/// (blocks of whole column tiles, T*k rows apart, put the combine's reads
/// and GEMM2's writes at strides of 4-32 MB: the combine lost 22% of its
/// DRAM throughput; tools/bench/NOTES.md, session 35). Inside a row the
/// 16-byte chunks are XOR-swizzled by the row's low three bits, as the
/// staging rows are (their stmatrix stores hit 32 banks without padding).
constexpr int kPartialChunk = 8;      // elements per 16-byte chunk of a 2-byte type
constexpr int kPartialGroupRows = 64; // a consumer warpgroup's rows
MOEJIT_ABI_FN bool blocks_partial(int block_cols) { return block_cols > 0 && block_cols % 64 == 0; }
/// Columns of a row blocked by `block_cols`: H rounded up to whole tiles.
MOEJIT_ABI_FN int partial_block_columns(int hidden, int block_cols) {
  return (hidden + block_cols - 1) / block_cols * block_cols;
}
/// Element offset of the piece of sorted row `row` in the column tile that
/// holds column `col`.
MOEJIT_ABI_FN long long partial_block_row(long long row, int col, int hidden, int block_cols) {
  const int tiles = partial_block_columns(hidden, block_cols) / block_cols;
  return ((row / kPartialGroupRows * tiles + col / block_cols) * kPartialGroupRows +
          row % kPartialGroupRows) *
         block_cols;
}
MOEJIT_ABI_FN int partial_block_chunk(long long row, int chunk) {
  return chunk ^ static_cast<int>(row & 7);
}
/// Element offset of (sorted row, column) in the blocked layout.
MOEJIT_ABI_FN long long partial_block_offset(long long row, int col, int hidden, int block_cols) {
  const int c = col % block_cols;
  return partial_block_row(row, col, hidden, block_cols) +
         partial_block_chunk(row, c / kPartialChunk) * kPartialChunk + c % kPartialChunk;
}
/// Rows of room partial needs for `rows` sorted rows (whole groups).
MOEJIT_ABI_FN long long partial_rows(long long rows) {
  return (rows + kPartialGroupRows - 1) / kPartialGroupRows * kPartialGroupRows;
}
/// Columns a row of partial may span: H rounded up to the widest blocking
/// of any GEMM2 tile width (64, 128, 192 or 256 columns).
MOEJIT_ABI_FN int partial_columns(int hidden) {
  int most = hidden;
  for (int bn = 64; bn <= 256; bn += 64) {
    const int padded = partial_block_columns(hidden, bn);
    most = padded > most ? padded : most;
  }
  return most;
}

/// Threads per block of the fixed kernels (the GEMMs' come from their tile
/// config and are asserted in their generated units).
constexpr int kCountThreads = 256;
constexpr int kScanThreads = 1024;
constexpr int kScatterThreads = 32; // one warp: the stable scatter walks in order
// route_block: 32 * route_block_warps(E).
constexpr int kRouteWideThreads = 512;
constexpr int kCombineThreads = 256;
constexpr int kReferenceThreads = 256;

} // namespace moejit_abi
