// What the persistent warp-specialised GEMMs (kernels/moe_gemm_ws.cuh,
// kernels/moe_gemm_swap.cuh) share: the stage ring that producer and
// consumers walk in step, and the walk over (row tile, column tile) pairs.
#pragma once

#include "blocks/moe_gemm_common.cuh"

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
};

/// The walk of a persistent GEMM with BM-row tiles and COL_TILES column
/// tiles of BN columns: row tiles in list order (expert-major), the column
/// tiles of one row tile next to each other, so that CTAs running side by
/// side share the expert's weights and the tile's rows in L2.
template <int BM, int BN, int COL_TILES> struct TileWalk {
  static __device__ __forceinline__ int count(const LaunchParams &p) {
    return row_tile_count<BM>(p) * COL_TILES;
  }
  static __device__ __forceinline__ RowTile at(const LaunchParams &p, int t, int &n0) {
    n0 = (t % COL_TILES) * BN;
    return row_tile_at<BM>(p, t / COL_TILES);
  }
  /// This CTA's next valid tile from index `t` (every gridDim.x-th), with
  /// `t` moved past it; false once the walk ends. The producer and the
  /// consumers walk the same tiles in the same order.
  static __device__ __forceinline__ bool next(const LaunchParams &p, int tiles, int &t,
                                              RowTile &tile, int &n0) {
    for (; t < tiles; t += gridDim.x) {
      tile = at(p, t, n0);
      if (tile.valid) {
        t += gridDim.x;
        return true;
      }
    }
    return false;
  }
};

} // namespace moejit_dev
