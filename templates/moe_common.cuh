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
  const void *top_k_index;   // [T*k] int32 or int64 (index_bytes)
  const void *top_k_weights; // [T*k] float32, or the model dtype (weights_in_model_dtype)
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
  const int *expert_map; // [expert_map_size]: global id -> local id or -1; null: ids are local
  int expert_map_size;
  int index_bytes;            // 4 or 8
  int weights_in_model_dtype; // 0: float32, 1: the workload dtype
  int unused;
};

/// One 16-byte vector, for wide loads of any element type.
struct alignas(16) Vec16 {
  unsigned w[4];
};

/// Assignments (token, slot) per routing block.
constexpr int kRouteChunk = 1024;

/// The expert id of assignment a (t*k+j) as the caller wrote it, int32 or
/// int64; an int64 id outside int32 is -1 (no expert has it).
__device__ __forceinline__ int routed_id(const LaunchParams &p, int a) {
  if (p.index_bytes == 8) {
    const long long id = static_cast<const long long *>(p.top_k_index)[a];
    return id >= 0 && id <= 0x7fffffff ? static_cast<int>(id) : -1;
  }
  return static_cast<const int *>(p.top_k_index)[a];
}

/// The local expert of a routed id: through the expert map when there is
/// one; -1 for an id outside the map or the experts, or one the map sends
/// to another GPU.
template <class S> __device__ __forceinline__ int local_expert(const LaunchParams &p, int id) {
  if (p.expert_map)
    id = id >= 0 && id < p.expert_map_size ? p.expert_map[id] : -1;
  return id >= 0 && id < S::E ? id : -1;
}

/// The local expert of assignment a (routed_id, then local_expert).
template <class S> __device__ __forceinline__ int expert_of(const LaunchParams &p, int a) {
  return local_expert<S>(p, routed_id(p, a));
}

/// The routing weight of assignment a, as float.
template <class S> __device__ __forceinline__ float weight_of(const LaunchParams &p, int a) {
  if (p.weights_in_model_dtype)
    return to_float<S::DT>(static_cast<const typename S::T *>(p.top_k_weights)[a]);
  return static_cast<const float *>(p.top_k_weights)[a];
}

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
