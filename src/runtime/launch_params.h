// Host mirror of moejit_dev::LaunchParams (templates/moe_common.cuh).
#pragma once

#include <cstdint>

namespace moejit::runtime {

struct LaunchParams {
  const void *x;
  const void *gate_up;
  const void *down;
  const void *top_k_index;
  const void *top_k_weights;
  void *y;
  int32_t *block_counts;
  int32_t *expert_offsets;
  int32_t *tiles;
  int32_t *num_tiles;
  int32_t *sorted_ids;
  void *h;
  void *partial;
  int32_t tokens;
  int32_t route_blocks;
  int32_t tile_m;
  int32_t max_tiles;
  const int32_t *expert_map;
  int32_t expert_map_size;
  int32_t index_bytes;
  int32_t weights_in_model_dtype;
  int32_t unused;
};
static_assert(sizeof(LaunchParams) == 14 * 8 + 8 * 4,
              "must match templates/moe_common.cuh byte for byte");

/// Assignments per routing block (kRouteChunk in the templates).
inline constexpr int kRouteChunk = 1024;
/// route_small keeps three [E] tables in static shared memory (48 KB at
/// most): shapes with more experts route in three launches.
inline constexpr int kRouteSmallMaxExperts = 1024;
/// Threads of the combine kernel (kCombineThreads in the templates).
inline constexpr int kCombineThreads = 256;

} // namespace moejit::runtime
