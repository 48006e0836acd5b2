// Pieces shared by the tensor-core and the fp32 grouped GEMMs: which tile a
// block owns, where each of its A and B rows comes from, and the epilogues.
//
// GEMM1: rows of x gathered in sorted order times [gate; up] of the expert,
//        h[row] = silu(x.gate) * (x.up)            (M = T*k, N = I, K = H)
// GEMM2: rows of h times down of the expert, scaled by the routing weight
//        and stored at the assignment's own row of `partial` (N = H, K = I),
//        or in sorted order blocked by column tile (the staged
//        warp-specialised kernels: moejit_abi::partial_block_offset), or
//        added into the token's row of y (S::ADD_TO_Y, Combine::Fast).
#pragma once

#include "blocks/moe_common.cuh"
#include "ptx/reduce.cuh"

namespace moejit_dev {

template <class S, bool Gemm1> struct GemmDims {
  static constexpr int K = Gemm1 ? S::H : S::I; // reduction length
  static constexpr int N = Gemm1 ? S::I : S::H; // output columns
};

/// The row tile a block owns; `valid` is false for blocks past num_tiles
/// (the grid is sized for the worst routing) or past the rows of a tile.
struct RowTile {
  int expert, row_begin, row_end;
  bool valid;
};

/// Entry `index` of the routing's tile list, in one 16-byte load.
__device__ __forceinline__ TileRecord tile_record(const LaunchParams &p, int index) {
  const int4 r = reinterpret_cast<const int4 *>(p.tiles)[index];
  return {r.x, r.y, r.z, r.w};
}

/// Routing lists tiles of p.tile_m rows; a GEMM with BM-row tiles (BM
/// divides tile_m) takes tile_m / BM consecutive row tiles per list entry,
/// so the two GEMMs can use different row tiles with one list. Row tile
/// `index` of that split list (index < num_tiles * tile_m / BM: the caller
/// checks; a tile past the expert's rows comes back not valid).
template <int BM> __device__ __forceinline__ RowTile row_tile_at(const LaunchParams &p, int index) {
  RowTile t;
  const int split = p.tile_m / BM;
  const TileRecord r = tile_record(p, index / split);
  t.expert = r.expert;
  t.row_begin = r.row_begin + index % split * BM;
  t.row_end = min(t.row_begin + BM, r.row_end);
  t.valid = t.row_begin < t.row_end;
  return t;
}

/// Row tiles of BM rows in this call's list.
template <int BM> __device__ __forceinline__ int row_tile_count(const LaunchParams &p) {
  return *p.num_tiles * (p.tile_m / BM);
}

/// The row tile of a one-tile-per-block GEMM (blockIdx.y); blocks past the
/// list (the grid is sized for the worst routing) get a tile not valid.
template <int BM> __device__ __forceinline__ RowTile load_row_tile(const LaunchParams &p) {
  if (static_cast<int>(blockIdx.y) >= row_tile_count<BM>(p)) {
    RowTile t;
    t.valid = false;
    return t;
  }
  return row_tile_at<BM>(p, blockIdx.y);
}

/// Source of A row r of the tile (nullptr past the expert's rows).
template <class S, bool Gemm1>
__device__ __forceinline__ const typename S::T *a_row_source(const LaunchParams &p,
                                                             const RowTile &t, int r) {
  using T = typename S::T;
  const int row = t.row_begin + r;
  if (row >= t.row_end)
    return nullptr;
  if constexpr (Gemm1) {
    const int token = p.sorted_ids[row] / S::K;
    return static_cast<const T *>(p.x) + static_cast<long long>(token) * S::H;
  } else {
    return static_cast<const T *>(p.h) + static_cast<long long>(row) * S::I;
  }
}

/// Source of B row r of a tile starting at output column n0. For GEMM1 the
/// B rows come in groups of `Group` rows: the first half of a group are gate
/// rows and the second half the up rows of the same columns, so the code that
/// multiplies one group holds gate and up of a column side by side.
template <class S, bool Gemm1, int Group>
__device__ __forceinline__ const typename S::T *b_row_source(const LaunchParams &p, int expert,
                                                             int n0, int r) {
  using T = typename S::T;
  if constexpr (Gemm1) {
    constexpr int half = Group / 2;
    const int q = r % Group;
    const int col = n0 + (r / Group) * half + q % half;
    if (col >= S::I)
      return nullptr;
    const int w_row = q < half ? col : S::I + col;
    return static_cast<const T *>(p.gate_up) +
           (static_cast<long long>(expert) * 2 * S::I + w_row) * S::H;
  } else {
    const int col = n0 + r;
    if (col >= S::H)
      return nullptr;
    return static_cast<const T *>(p.down) + (static_cast<long long>(expert) * S::H + col) * S::I;
  }
}

// __fdividef: MUFU.RCP and a multiply, where "/" is IEEE division (a
// check and a slow-path call per output, serialising GEMM1's epilogue:
// -3% for the whole call at T=2048..8192, tools/bench/NOTES.md). Its 2-ulp
// error is far below h's rounding; past -87 it gives 0 for silu's ~1e-36.
__device__ __forceinline__ float silu(float v) { return __fdividef(v, 1.0f + __expf(-v)); }

/// GEMM1 epilogue for columns col, col+1 (col even, < I) of sorted row `row`.
template <class S>
__device__ __forceinline__ void store_h(const LaunchParams &p, int row, int col, float g0, float g1,
                                        float u0, float u1) {
  auto *h = static_cast<typename S::T *>(p.h) + static_cast<long long>(row) * S::I + col;
  store2<S::DT>(h, silu(g0) * u0, silu(g1) * u1);
}

/// Where GEMM2's output row of assignment t*k+j goes: row t*k+j of partial,
/// or (S::ADD_TO_Y) row t of y, which the rows of t's slots add into.
template <class S>
__device__ __forceinline__ typename S::T *gemm2_out_row(const LaunchParams &p, int assignment) {
  if constexpr (S::ADD_TO_Y)
    return static_cast<typename S::T *>(p.y) + static_cast<long long>(assignment / S::K) * S::H;
  else
    return static_cast<typename S::T *>(p.partial) + static_cast<long long>(assignment) * S::H;
}

/// GEMM2 epilogue: `assignment` is t*k+j of the sorted row, `weight` its
/// routing weight (p.sorted_weights of the row).
template <class S>
__device__ __forceinline__ void store_partial(const LaunchParams &p, int assignment, float weight,
                                              int col, float v0, float v1) {
  auto *out = gemm2_out_row<S>(p, assignment) + col;
  if constexpr (S::ADD_TO_Y)
    red_add2<S::DT>(out, v0 * weight, v1 * weight);
  else
    store2<S::DT>(out, v0 * weight, v1 * weight);
}

} // namespace moejit_dev
