// Routing on the GPU, no host synchronisation: per-block expert counts, one
// exclusive scan, a stable scatter of assignments into expert order, and the
// list of GEMM row tiles; route_block does it all in one launch of one block
// up to kRouteBlockMaxAssignments (decode steps and small batches), route_wide
// in one launch over the grid up to kRouteWideMaxAssignments. Ids outside [0, E), or that the expert map sends
// elsewhere, are skipped everywhere (expert_of). Every path also writes each
// assignment's sorted row, -1 for a skipped one (sorted_rows: the combine
// reads through it).
#pragma once

#include "blocks/moe_common.cuh"
#include "ptx/smem.cuh"

namespace moejit_dev {


/// Grid: route_blocks, block: THREADS. Writes the count of block b's
/// assignments routed to expert e at block_counts[e * route_blocks + b]
/// (expert-major, so that one flat scan yields stable scatter bases).
template <class S, int THREADS = kCountThreads> __device__ void route_count(const LaunchParams &p) {
  __shared__ int hist[S::E];
  for (int e = threadIdx.x; e < S::E; e += THREADS)
    hist[e] = 0;
  __syncthreads();
  const int total = p.tokens * S::K;
  const int begin = blockIdx.x * kRouteChunk;
  const int end = min(begin + kRouteChunk, total);
#pragma unroll 4 // loads in flight, which --Ofast-compile=min would not unroll for
  for (int a = begin + threadIdx.x; a < end; a += THREADS) {
    const int e = expert_of<S>(p, a);
    if (e >= 0)
      atomicAdd(&hist[e], 1);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < S::E; e += THREADS)
    p.block_counts[e * p.route_blocks + blockIdx.x] = hist[e];
}

__device__ __forceinline__ int warp_inclusive_scan(int v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const int t = __shfl_up_sync(0xffffffffu, v, off);
    if (lane >= off)
      v += t;
  }
  return v;
}

/// In-place exclusive scan of data[0, n) by the whole block; returns the
/// total to every thread. Each round scans THREADS*4 consecutive values.
template <int THREADS> __device__ int block_exclusive_scan(int *data, int n) {
  __shared__ int warp_sums[THREADS / 32];
  __shared__ int round_total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int carry = 0;
  for (int base = 0; base < n; base += THREADS * 4) {
    const int i0 = base + threadIdx.x * 4;
    int v[4], local = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v[j] = i0 + j < n ? data[i0 + j] : 0;
      local += v[j];
    }
    const int incl = warp_inclusive_scan(local);
    if (lane == 31)
      warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      const int s = lane < THREADS / 32 ? warp_sums[lane] : 0;
      const int si = warp_inclusive_scan(s);
      if (lane < THREADS / 32)
        warp_sums[lane] = si - s;
      if (lane == 31)
        round_total = si;
    }
    __syncthreads();
    int run = carry + warp_sums[warp] + incl - local;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (i0 + j < n)
        data[i0 + j] = run;
      run += v[j];
    }
    carry += round_total;
    __syncthreads();
  }
  return carry;
}

/// Writes the tile list (TileRecord: expert, first and end row) in expert
/// order with p.tile_m rows per tile, and num_tiles, from `offsets` [E + 1] (shared or global,
/// already visible to the block); `tile_start` is [E + 1] of shared scratch.
/// Zeroes the persistent GEMMs' tile claims (TileClaims in
/// blocks/ws_pipeline.cuh), which a fresh workspace holds garbage in.
template <class S, int THREADS>
__device__ void write_tile_list(const LaunchParams &p, const int *offsets, int *tile_start) {
  for (int e = threadIdx.x; e < S::E; e += THREADS) {
    const int rows = offsets[e + 1] - offsets[e];
    tile_start[e] = (rows + p.tile_m - 1) / p.tile_m;
  }
  __syncthreads();
  const int tiles = block_exclusive_scan<THREADS>(tile_start, S::E);
  for (int e = threadIdx.x; e < S::E; e += THREADS) {
    const int first = offsets[e];
    const int rows = offsets[e + 1] - first;
    for (int t = 0; t * p.tile_m < rows; ++t) {
      const int row_begin = first + t * p.tile_m;
      p.tiles[tile_start[e] + t] = {
          e, row_begin, min(row_begin + p.tile_m, first + rows), 0};
    }
  }
  if (threadIdx.x == 0) {
    *p.num_tiles = tiles;
    p.tile_claims[0] = 0;
    p.tile_claims[1] = 0;
  }
}

/// Grid: 1, block: THREADS. Turns block counts into scatter bases,
/// writes expert_offsets and the tile list.
template <class S, int THREADS = kScanThreads> __device__ void route_scan(const LaunchParams &p) {
  __shared__ int tile_start[S::E + 1];
  const int total = block_exclusive_scan<THREADS>(p.block_counts, S::E * p.route_blocks);
  for (int e = threadIdx.x; e < S::E; e += THREADS)
    p.expert_offsets[e] = p.block_counts[e * p.route_blocks];
  if (threadIdx.x == 0)
    p.expert_offsets[S::E] = total;
  __syncthreads();
  write_tile_list<S, THREADS>(p, p.expert_offsets, tile_start);
}

/// Writes sorted row `row`: its assignment and that assignment's weight
/// (loaded with the ids, before the ordered walk: a load inside the walk
/// would make every step wait for it), and the assignment's row (the
/// combine finds a blocked GEMM2's rows through it). __stcg: a global store
/// (L2 only) however ptxas is set (min would address it as generic memory);
/// the GEMMs read the rows from L2.
__device__ __forceinline__ void write_sorted_row(const LaunchParams &p, int row, int assignment,
                                                 float weight) {
  __stcg(p.sorted_ids + row, assignment);
  __stcg(p.sorted_weights + row, weight);
  __stcg(p.sorted_rows + assignment, row);
}

/// Marks an assignment no local expert has (sorted row -1): the combine
/// tells routed slots by their sorted row alone.
__device__ __forceinline__ void write_unrouted(const LaunchParams &p, int assignment) {
  __stcg(p.sorted_rows + assignment, -1);
}

/// out[j] = load(a) for assignment a = a0 + 32*j + lane of `BATCH` x 32
/// consecutive ones, `past` from `end` on: one batch of independent loads.
template <int BATCH, class V, class Load>
__device__ __forceinline__ void load_lane_batch(int a0, int end, V past, const Load &load,
                                                V (&out)[BATCH]) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < BATCH; ++j) {
    const int a = a0 + 32 * j + lane;
    out[j] = a < end ? load(a) : past;
  }
}

/// The routing weights of `BATCH` x 32 consecutive assignments from a0, 0
/// past `end`.
template <class S, int BATCH>
__device__ __forceinline__ void load_weights(const LaunchParams &p, int a0, int end,
                                             float (&weight)[BATCH]) {
  load_lane_batch(a0, end, 0.f, [&](int a) { return weight_of<S>(p, a); }, weight);
}

/// The routed ids (routed_id) of `BATCH` x 32 consecutive assignments from
/// a0, -1 past `end`.
template <int BATCH>
__device__ __forceinline__ void load_ids(const LaunchParams &p, int a0, int end, int (&id)[BATCH]) {
  load_lane_batch(a0, end, -1, [&](int a) { return routed_id(p, a); }, id);
}

/// Writes the sorted rows of the `BATCH` x 32 assignments from a0 (lane l
/// holds a0 + 32*j + l's expert and weight; none from `end` on), walked in
/// order by one warp: assignment a of expert e goes to row
/// next_row[e * stride], which then moves on (rows of one expert keep
/// assignment order).
template <int BATCH>
__device__ __forceinline__ void scatter_batch(const LaunchParams &p, int a0, int end,
                                              const int (&expert)[BATCH],
                                              const float (&weight)[BATCH], int *next_row,
                                              int stride) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < BATCH; ++j) {
    const int e = expert[j];
    const unsigned peers = __match_any_sync(0xffffffffu, e);
    int row = 0;
    if (e >= 0)
      row = next_row[e * stride] + __popc(peers & lanemask_lt());
    __syncwarp();
    if (e >= 0) {
      write_sorted_row(p, row, a0 + 32 * j + lane, weight[j]);
      if (lane == 31 - __clz(peers))
        next_row[e * stride] += __popc(peers);
    } else if (a0 + 32 * j + lane < end) {
      write_unrouted(p, a0 + 32 * j + lane);
    }
    __syncwarp();
  }
}

/// Grid: route_blocks, block: one warp. Writes sorted_ids[row] = t*k+j so
/// that rows are grouped by expert and, within an expert, ordered by
/// assignment index (a stable sort), sorted_weights, and sorted_rows (-1
/// for an assignment no local expert has).
template <class S> __device__ void route_scatter(const LaunchParams &p) {
  __shared__ int next_row[S::E];
  const int lane = threadIdx.x;
  for (int e = lane; e < S::E; e += 32)
    next_row[e] = p.block_counts[e * p.route_blocks + blockIdx.x];
  const int total = p.tokens * S::K;
  const int begin = blockIdx.x * kRouteChunk;
  constexpr int kPerLane = kRouteChunk / 32;
  int expert[kPerLane];
  float weight[kPerLane];
  // Load everything first so that the ordered walk below waits on no memory:
  // all ids and weights in one batch of independent loads, then all map
  // lookups in another (a lookup per id in the first loop would chain 32
  // loads).
  // (Its own id loop, not load_ids: with `lane` as threadIdx.x the
  // schedule differs, a change that waits for a GPU measurement.)
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int a = begin + i * 32 + lane;
    expert[i] = a < total ? routed_id(p, a) : -1;
  }
  load_weights<S, kPerLane>(p, begin, total, weight);
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    expert[i] = local_expert<S>(p, expert[i]);
  __syncwarp();
  scatter_batch(p, begin, total, expert, weight, next_row, 1);
}

/// Local experts of `BATCH` x 32 consecutive assignments from a0 (lane l
/// gets a0 + 32*j + l), -1 past `end`: ids in one batch of independent
/// loads, then the map lookups in another.
template <class S, int BATCH>
__device__ __forceinline__ void load_experts(const LaunchParams &p, int a0, int end,
                                             int (&expert)[BATCH]) {
  load_ids(p, a0, end, expert);
#pragma unroll
  for (int j = 0; j < BATCH; ++j)
    expert[j] = local_expert<S>(p, expert[j]);
}

/// scatter_batch over assignments [begin, end), loading each batch's
/// experts and weights.
template <class S, int BATCH>
__device__ __forceinline__ void scatter_in_order(const LaunchParams &p, int begin, int end,
                                                 int *next_row, int stride) {
  for (int a0 = begin; a0 < end; a0 += 32 * BATCH) {
    int expert[BATCH];
    float weight[BATCH];
    load_experts<S, BATCH>(p, a0, end, expert);
    load_weights<S, BATCH>(p, a0, end, weight);
    scatter_batch(p, a0, end, expert, weight, next_row, stride);
  }
}

/// Grid: 1, block: 32 * route_block_warps(E), when T*k is at most
/// kRouteBlockMaxAssignments: the whole routing in one launch, with every
/// intermediate in shared memory. Warp w owns a contiguous chunk of the
/// assignments; counts[e * WARPS + w] counts its rows of expert e, so one
/// exclusive scan of the table gives each (expert, warp) its first row and
/// walking each chunk in order gives the same stable order as the
/// three-launch path.
template <class S> __device__ void route_block(const LaunchParams &p) {
  constexpr int WARPS = route_block_warps(S::E), THREADS = 32 * WARPS, BATCH = 4;
  static_assert(S::E <= kRouteBlockMaxExperts, "route_block: the tables must fit shared memory");
  __shared__ int counts[WARPS * S::E];
  __shared__ int offsets[S::E + 1];
  __shared__ int tile_start[S::E + 1];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int total = p.tokens * S::K;
  const int chunk = (total + WARPS - 1) / WARPS;
  const int begin = min(warp * chunk, total), end = min(begin + chunk, total);
  static_assert(kRouteBlockMaxAssignments <= WARPS * 32 * BATCH,
                "route_block: a warp's chunk is one batch");
  // A warp's whole chunk in one batch: its experts and routing weights
  // load once, before the count, and stay in registers for the scatter
  // (no second round trip to memory after the scan).
  int expert[BATCH];
  float weight[BATCH];
  load_experts<S, BATCH>(p, begin, end, expert);
  load_weights<S, BATCH>(p, begin, end, weight);
  for (int i = threadIdx.x; i < WARPS * S::E; i += THREADS)
    counts[i] = 0;
  __syncthreads();
  // Count: one shared add per expert seen in each 32 assignments.
#pragma unroll
  for (int j = 0; j < BATCH; ++j) {
    const unsigned peers = __match_any_sync(0xffffffffu, expert[j]);
    if (expert[j] >= 0 && lane == __ffs(peers) - 1)
      counts[expert[j] * WARPS + warp] += __popc(peers);
    __syncwarp(); // the next group of this warp may add to the same count
  }
  __syncthreads();
  const int rows = block_exclusive_scan<THREADS>(counts, WARPS * S::E);
  for (int e = threadIdx.x; e < S::E; e += THREADS) {
    offsets[e] = counts[e * WARPS];
    p.expert_offsets[e] = offsets[e];
  }
  if (threadIdx.x == 0) {
    offsets[S::E] = rows;
    p.expert_offsets[S::E] = rows;
  }
  __syncthreads();
  write_tile_list<S, THREADS>(p, offsets, tile_start);
  // Scatter: each warp walks its chunk in order from its scanned bases
  // (only warp w touches counts[*][w]).
  scatter_batch(p, begin, end, expert, weight, counts + warp, WARPS);
}

/// Warps of route_wide that walk a block's chunk in the scatter: at most
/// 16, halved until one count per (expert, warp) and four [E+1] tables fit
/// 44 KB of static shared memory.
__host__ __device__ constexpr int route_wide_scatter_warps(int experts) {
  return warps_fitting(kRouteWideThreads / 32 < 16 ? kRouteWideThreads / 32 : 16, experts, 4);
}

/// route_wide after route_count: each expert's rows in the blocks before
/// this one (`before`) and after it (`after`), summed from route_count's
/// per-block counts, a warp per expert and a lane per block. A warp's
/// experts are summed together, PER_PASS at a time: their loads go out in
/// one batch (one L2 round trip per 32 blocks, not one per expert: a loop
/// over experts that waited for each expert's loads was a third of
/// route_wide's stall samples at T*k = 65536; H100, session 36).
template <class S, int THREADS>
__device__ __forceinline__ void sum_other_blocks(const LaunchParams &p, int *before, int *after) {
  constexpr int WARPS = THREADS / 32, PER_PASS = 8;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int e0 = warp; e0 < S::E; e0 += WARPS * PER_PASS) {
    int lower[PER_PASS] = {}, upper[PER_PASS] = {};
    for (int b0 = 0; b0 < p.route_blocks; b0 += 32) {
      const int b = b0 + lane;
      int c[PER_PASS];
#pragma unroll
      for (int j = 0; j < PER_PASS; ++j) {
        const int e = e0 + j * WARPS;
        c[j] = e < S::E && b < p.route_blocks ? __ldcg(p.block_counts + e * p.route_blocks + b)
                                               : 0;
      }
#pragma unroll
      for (int j = 0; j < PER_PASS; ++j) {
        lower[j] += b < static_cast<int>(blockIdx.x) ? c[j] : 0;
        upper[j] += b > static_cast<int>(blockIdx.x) ? c[j] : 0;
      }
    }
#pragma unroll
    for (int j = 0; j < PER_PASS; ++j) {
      const int e = e0 + j * WARPS;
      const int l = __reduce_add_sync(0xffffffffu, lower[j]);
      const int u = __reduce_add_sync(0xffffffffu, upper[j]);
      if (lane == 0 && e < S::E) {
        before[e] = l;
        after[e] = u;
      }
    }
  }
}

/// Grid: route_blocks, block: kRouteWideThreads: the routing with no block
/// waiting for another. Each block learns every expert's rows before its
/// chunk and after it: up to kRouteWideMaxAssignments by counting all T*k
/// assignments itself (one launch; a few hundred KB of ids from L2 per
/// block), past it by summing route_count's per-block counts
/// (p.route_counted). It counts its own chunk per scatter warp, so it
/// knows every expert's first row and how many rows of each expert come
/// before each warp's part, and scatters its chunk in the same stable
/// order as the three-launch path. Block 0 writes expert_offsets and the
/// tile list.
template <class S> __device__ void route_wide(const LaunchParams &p) {
  // COUNT_BATCH ids in flight per thread: each block reads all T*k ids
  // from L2, so the count is bound by load latency, not bandwidth (4 per
  // thread cost 34 us at 65536 assignments; 8 times as 16 did, H100,
  // session 33, and compiles sooner).
  constexpr int THREADS = kRouteWideThreads, BATCH = 4, COUNT_BATCH = 8;
  constexpr int SW = route_wide_scatter_warps(S::E), SUB = kRouteChunk / SW;
  static_assert(S::E <= kRouteBlockMaxExperts, "route_wide: the tables must fit shared memory");
  static_assert(kRouteChunk % (32 * SW) == 0, "route_wide: scatter warps take whole lane groups");
  __shared__ int before[S::E], after[S::E];
  __shared__ int counts[SW * S::E]; // counts[e * SW + w]: rows of e in scatter warp w's part
  __shared__ int offsets[S::E + 1];
  __shared__ int tile_start[S::E + 1];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int total = p.tokens * S::K;
  const int begin = blockIdx.x * kRouteChunk, end = min(begin + kRouteChunk, total);
  for (int e = threadIdx.x; e < S::E; e += THREADS)
    before[e] = after[e] = 0;
  for (int i = threadIdx.x; i < SW * S::E; i += THREADS)
    counts[i] = 0;
  __syncthreads();
  // Every assignment (all of them, or only this chunk's after route_count).
  const int from = p.route_counted ? begin : 0, to = p.route_counted ? end : total;
  for (int a0 = from + warp * 32 * COUNT_BATCH; a0 < to; a0 += THREADS * COUNT_BATCH) {
    int expert[COUNT_BATCH];
    load_experts<S, COUNT_BATCH>(p, a0, to, expert);
#pragma unroll
    for (int j = 0; j < COUNT_BATCH; ++j) {
      const int a = a0 + 32 * j + lane, e = expert[j];
      if (e < 0)
        continue;
      int *slot = a < begin ? &before[e] : a >= end ? &after[e] : &counts[e * SW + (a - begin) / SUB];
      atomicAdd(slot, 1);
    }
  }
  if (p.route_counted)
    sum_other_blocks<S, THREADS>(p, before, after);
  __syncthreads();
  for (int e = threadIdx.x; e < S::E; e += THREADS) {
    int rows = before[e] + after[e];
    for (int w = 0; w < SW; ++w)
      rows += counts[e * SW + w];
    offsets[e] = rows;
  }
  __syncthreads();
  const int rows = block_exclusive_scan<THREADS>(offsets, S::E);
  // Each (expert, scatter warp)'s first row: the expert's first row, its
  // rows in earlier chunks, then those of earlier warps in this chunk.
  for (int e = threadIdx.x; e < S::E; e += THREADS) {
    int next = offsets[e] + before[e];
    for (int w = 0; w < SW; ++w) {
      const int c = counts[e * SW + w];
      counts[e * SW + w] = next;
      next += c;
    }
  }
  if (threadIdx.x == 0)
    offsets[S::E] = rows;
  __syncthreads();
  if (blockIdx.x == 0) {
    for (int e = threadIdx.x; e <= S::E; e += THREADS)
      p.expert_offsets[e] = offsets[e];
    write_tile_list<S, THREADS>(p, offsets, tile_start);
  }
  if (warp < SW)
    scatter_in_order<S, BATCH>(p, min(begin + warp * SUB, end), min(begin + (warp + 1) * SUB, end),
                               counts + warp, SW);
}

} // namespace moejit_dev
