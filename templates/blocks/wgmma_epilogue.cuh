// The epilogues of the wgmma GEMMs for one warpgroup's 64 rows (GEMM1:
// silu(gate)*up into h; GEMM2: weighted rows of partial, or added into y
// under S::ADD_TO_Y): straight from the
// accumulators to global memory, or (warp-specialised kernels) staged in
// shared memory and sent by bulk copies (one per row, or for GEMM2's
// blocked partial one or two per warpgroup), which run on while the warpgroup
// starts its next tile.
#pragma once

#include "blocks/moe_gemm_common.cuh"
#include "ptx/bulk_copy.cuh"
#include "ptx/wgmma.cuh"

namespace moejit_dev {

/// What GEMM2's epilogue needs of the two rows a thread holds (r0, r0 + 8):
/// the assignment (its row of partial by assignment, or of y) and routing
/// weight. Loaded before the
/// main loop so that the epilogue waits on no memory.
struct RowMeta {
  int assignment[2] = {0, 0};
  float weight[2] = {0.f, 0.f};
};

/// First of the two tile rows (r0, r0 + 8) a thread of warpgroup `wg` holds.
__device__ __forceinline__ int first_acc_row(const RowTile &tile, int wg) {
  const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
  return tile.row_begin + wg * 64 + warp * 16 + (lane >> 2);
}

template <class S, bool Gemm1>
__device__ __forceinline__ RowMeta load_row_meta(const LaunchParams &p, const RowTile &tile,
                                                 int wg) {
  RowMeta m;
  if constexpr (!Gemm1) {
    const int r0 = first_acc_row(tile, wg);
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (r0 + 8 * h < tile.row_end) {
        m.assignment[h] = p.sorted_ids[r0 + 8 * h];
        m.weight[h] = p.sorted_weights[r0 + 8 * h];
      }
  }
  return m;
}

/// acc[i] of a warpgroup with wgmma N = `N` is row 64*wg + 16*warp + lane/4
/// + 8*((i>>1)&1) of `tile` and B-row column 8*(i>>2) + 2*(lane%4) + i%2
/// from n0; for GEMM1 the B rows are gate then up of N/2 columns, so the up
/// value of column c sits at i + N/4.
template <class S, bool Gemm1, int N>
__device__ __forceinline__ void store_wgmma_tile(const LaunchParams &p, const RowTile &tile, int n0,
                                                 int wg, float (&acc)[N / 2], const RowMeta &m) {
  using D = GemmDims<S, Gemm1>;
  const int lane = threadIdx.x & 31;
  const int r0 = first_acc_row(tile, wg);
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
      store_partial<S>(p, m.assignment[h], m.weight[h], col, acc[i], acc[i + 1]);
  }
}

template <class S, bool Gemm1, int N>
__device__ __forceinline__ void store_wgmma_tile(const LaunchParams &p, const RowTile &tile, int n0,
                                                 int wg, float (&acc)[N / 2]) {
  store_wgmma_tile<S, Gemm1, N>(p, tile, n0, wg, acc, load_row_meta<S, Gemm1>(p, tile, wg));
}

/// Output columns of one tile (GEMM1: h columns, half the B rows).
template <bool Gemm1, int N> __host__ __device__ constexpr int out_columns() { return Gemm1 ? N / 2 : N; }

/// Staging rows of one warpgroup: 64 rows of out_columns elements, each
/// padded by 16 bytes so that the accumulator pattern hits 32 banks.
template <bool Gemm1, int N> __host__ __device__ constexpr int staging_pitch() { return out_columns<Gemm1, N>() + 8; }

/// The staging row (0..63 of its warpgroup's) whose bulk copy this thread
/// sends, or -1: lanes 0..15 of each of the four warps. A bulk copy takes
/// its addresses in uniform registers, so a warp's copies are issued one
/// after another; four warps of 16 take half the time two of 32 did.
__device__ __forceinline__ int staged_copy_row() {
  const int lane = threadIdx.x & 31;
  const int warp = (threadIdx.x / 32) & 3;
  return lane < 16 ? warp * 16 + lane : -1;
}

/// Writes a warpgroup's 64 output rows of a tile into its staging rows
/// (after the bulk copies of its previous tile have read them), ready for
/// bulk copies when it returns. `barrier`: a named barrier id of this
/// warpgroup alone. SWIZZLED (GEMM2's blocked partial): rows at a pitch of
/// exactly the output columns, 16-byte chunk c of staging row r at chunk
/// moejit_abi::partial_block_chunk(key_row + r, c), the global layout's own
/// (key_row: the sorted row of staging row 0), so that a run of rows goes
/// out in one copy; else rows of staging_pitch (16 bytes of padding: 32
/// banks).
template <class S, bool Gemm1, int N, bool SWIZZLED = false>
__device__ __forceinline__ void write_staging(float (&acc)[N / 2], const RowMeta &m,
                                              typename S::T *staging, int barrier,
                                              int key_row = 0) {
  constexpr int PITCH = SWIZZLED ? out_columns<Gemm1, N>() : staging_pitch<Gemm1, N>();
  constexpr int SLOTS = Gemm1 ? N / 4 : N / 2; // accumulators holding outputs
  // Each stmatrix stores the 8-column groups 2q and 2q+1 of the warp's two
  // 8-row halves: output slots 8q .. 8q+7.
  static_assert(SLOTS % 8 == 0, "output slots in whole stmatrix.x4 groups");
  static_assert(PITCH * 2 % 16 == 0, "stmatrix rows 16-byte aligned");
  static_assert(!SWIZZLED || PITCH % 64 == 0, "a swizzled row holds whole 8-chunk groups");
  const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
  auto out = [&](int i) {
    if constexpr (Gemm1)
      return silu(acc[i]) * acc[i + N / 4];
    else
      return acc[i] * m.weight[(i >> 1) & 1];
  };
  // Lane l addresses row l%8 of matrix l/8: the warp's row half (l/8)%2,
  // chunk l/16 of the group's two. Group q's chunks 2q, 2q+1 sit in the
  // 8-chunk run q/4 at 2(q%4) + l/16, which the swizzle permutes inside the
  // run: four addresses per thread, the runs immediate offsets from them.
  const int row = warp * 16 + (lane & 7) + 8 * ((lane >> 3) & 1);
  const unsigned row_addr = smem_addr(staging) + 2u * static_cast<unsigned>(row * PITCH);
  unsigned chunk_addr[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int c = 2 * j + (lane >> 4);
    chunk_addr[j] =
        row_addr + 16u * static_cast<unsigned>(SWIZZLED ? partial_block_chunk(key_row + row, c) : c);
  }
  // The previous tile's copies have read the staging rows (every thread
  // waits for its own, then nobody writes before all have).
  bulk_wait_read<0>();
  named_barrier_sync(barrier, 128);
#pragma unroll
  for (int i = 0; i < SLOTS; i += 8) {
    const int q = i >> 3;
    stmatrix_x4(chunk_addr[q & 3] + 128u * static_cast<unsigned>(q >> 2),
                pack2<S::DT>(out(i), out(i + 1)), pack2<S::DT>(out(i + 2), out(i + 3)),
                pack2<S::DT>(out(i + 4), out(i + 5)), pack2<S::DT>(out(i + 6), out(i + 7)));
  }
  fence_proxy_async_shared(); // stmatrix -> the bulk copies' async reads
  named_barrier_sync(barrier, 128);
}

/// The staged epilogue by rows: one bulk copy per row (GEMM1's h rows,
/// GEMM2's rows added into y under S::ADD_TO_Y). `copy_dst`: for the
/// thread's copy row (staged_copy_row()), the global row start (for GEMM2
/// gemm2_out_row + n0: a bulk reduce-add under S::ADD_TO_Y), or null past
/// the tile's rows or for a thread that sends none.
template <class S, bool Gemm1, int N>
__device__ __forceinline__ void stage_wgmma_tile(int n0, float (&acc)[N / 2], const RowMeta &m,
                                                 typename S::T *staging, int barrier,
                                                 typename S::T *copy_dst) {
  using D = GemmDims<S, Gemm1>;
  constexpr int PITCH = staging_pitch<Gemm1, N>();
  write_staging<S, Gemm1, N>(acc, m, staging, barrier);
  if (copy_dst) {
    const int r = staged_copy_row();
    const int cols = min(out_columns<Gemm1, N>(), D::N - n0);
    if constexpr (!Gemm1 && S::ADD_TO_Y)
      bulk_reduce_add<S::DT>(copy_dst, staging + r * PITCH, static_cast<unsigned>(cols) * 2u);
    else
      bulk_store(copy_dst, staging + r * PITCH, static_cast<unsigned>(cols) * 2u);
    bulk_commit();
  }
}

/// GEMM2's staged epilogue into the blocked partial: the warpgroup's rows
/// [row0, row0 + 64) of the tile at column n0, of which `rows` (<= 64; none
/// when <= 0) are the tile's, go out from its first thread in one bulk copy
/// per group of 64 sorted rows they touch (one or two).
template <class S, int N>
__device__ __forceinline__ void stage_blocked_tile(const LaunchParams &p, int n0, int row0,
                                                   int rows, float (&acc)[N / 2],
                                                   const RowMeta &m, typename S::T *staging,
                                                   int barrier) {
  using T = typename S::T;
  write_staging<S, false, N, true>(acc, m, staging, barrier, row0);
  if (threadIdx.x % 128 == 0 && rows > 0) {
    const int first = min(rows, kPartialGroupRows - row0 % kPartialGroupRows);
    bulk_store(static_cast<T *>(p.partial) + partial_block_row(row0, n0, S::H, N), staging,
               static_cast<unsigned>(first * N) * 2u);
    if (first < rows)
      bulk_store(static_cast<T *>(p.partial) + partial_block_row(row0 + first, n0, S::H, N),
                 staging + first * N, static_cast<unsigned>((rows - first) * N) * 2u);
    bulk_commit();
  }
}

} // namespace moejit_dev
