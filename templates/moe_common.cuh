// Shared definitions of every moejit kernel: the launch parameter block and
// the compile-time shape.
#pragma once

#include "ptx/convert.cuh"

namespace moejit_dev {

/// Mirrors moejit::runtime::LaunchParams on the host (same order and types;
/// the host static_asserts its size). Workspace arrays are described at
/// their producer.
struct LaunchParams {
  const void *x;
  const void *gate_up;
  const void *down;
  const int *top_k_index;
  const float *top_k_weights;
  void *y;
  int *block_counts;   // [E * route_blocks]: counts, then scanned bases
  int *expert_offsets; // [E + 1]: first sorted row of each expert
  int *tiles;          // [max_tiles * 2]: (expert, first sorted row)
  int *num_tiles;      // [1]
  int *sorted_ids;     // [T*k]: assignment t*k+j of each sorted row
  void *h;             // [T*k, I]: silu(gate)*up, rows in sorted order
  void *partial;       // [T*k, H]: weighted GEMM2 rows, at row t*k+j
  int tokens;
  int route_blocks; // ceil(T*k / kRouteChunk)
  int tile_m;       // rows per GEMM tile (BM of the chosen config)
  int max_tiles;    // bound on tiles for any routing of T tokens
};

/// One 16-byte vector, for wide loads of any element type.
struct alignas(16) Vec16 {
  unsigned w[4];
};

/// Assignments (token, slot) per routing block.
constexpr int kRouteChunk = 1024;

template <int K_, int H_, int I_, int E_, int DT_> struct Shape {
  static constexpr int K = K_;
  static constexpr int H = H_;
  static constexpr int I = I_;
  static constexpr int E = E_;
  static constexpr int DT = DT_;
  using T = typename Storage<DT_>::type;
  static_assert(H_ % 8 == 0 && I_ % 8 == 0, "hidden and intermediate must be multiples of 8");
};

} // namespace moejit_dev
