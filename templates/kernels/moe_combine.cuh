// y[t] = sum over j < k, in slot order, of the partial row of t*k+j for the
// slots routed to a local expert (a sorted row). The fixed order makes y bitwise
// reproducible. The rows are where GEMM2 wrote them: row t*k+j, or (a
// blocked GEMM2, p.partial_block_cols) the assignment's sorted row in the
// blocked layout (moejit_abi::partial_block_offset).
#pragma once

#include "blocks/moe_common.cuh"

namespace moejit_dev {

/// The sorted rows of slots [j0, j0 + BATCH) of token t, -1 past k, for
/// every lane of the warp (all 32 must call): lane j loads slot j0 + j from
/// L2 (__ldcg: the routing wrote them in an earlier kernel, and L1 is not
/// kept coherent with it), then each lane takes them from the others, one
/// L2 request per warp rather than one per lane and slot (each lane
/// loading all BATCH from L2 made the combine 3 us slower at T=8192;
/// session 36).
template <class S, int BATCH>
__device__ __forceinline__ void load_sorted_rows(const LaunchParams &p, int t, int j0,
                                                 int (&row)[BATCH]) {
  static_assert(BATCH <= 32, "a lane per slot of a batch");
  const int lane = threadIdx.x & 31;
  const int mine = lane < BATCH && j0 + lane < S::K ? __ldcg(p.sorted_rows + t * S::K + j0 + lane)
                                                    : -1;
#pragma unroll
  for (int j = 0; j < BATCH; ++j)
    row[j] = __shfl_sync(0xffffffffu, mine, j);
}

/// Grid: (T, ceil(H / (16-byte vectors * kCombineThreads))). The slots'
/// sorted rows, then their partial rows, are loaded in batches of up to 8
/// independent loads (at small T a thread's serial chain of k loads was
/// most of the pass); the sum still runs in slot order. Chains itself
/// (programmatic dependent launch): the first batch of sorted rows is
/// loaded before the wait for GEMM2, as the routing that wrote them had
/// completed before GEMM1 started and this kernel starts after GEMM2 has
/// waited for GEMM1; only GEMM2's partial rows need the wait.
template <class S> __device__ void combine(const LaunchParams &p) {
  using T = typename S::T;
  constexpr int VEC = 16 / sizeof(T);
  constexpr int BATCH = S::K < 8 ? S::K : 8;
  const int t = blockIdx.x;
  const int c = (blockIdx.y * kCombineThreads + threadIdx.x) * VEC;
  // Lanes past H stay to the end: every lane takes part in loading the
  // sorted rows (load_sorted_rows).
  const bool live = c < S::H;
  int row[BATCH];
  load_sorted_rows<S>(p, t, 0, row);
  griddep_wait();
  griddep_launch_dependents();
  union Row {
    Vec16 v;
    T e[VEC];
  };
  float sum[VEC] = {};
  // Blocked partials come from the wgmma GEMM2s only (2-byte types: a
  // 16-byte chunk is kPartialChunk elements); fp32 never reads one.
  const bool blocked = sizeof(T) == 2 && p.partial_block_cols != 0;
  for (int j0 = 0; j0 < S::K; j0 += BATCH) {
    // The slots' sorted rows (-1: no local expert; the routing wrote one
    // for every assignment; the first batch's came before the wait), then
    // their partial rows: two batches of independent loads.
    if (j0 > 0)
      load_sorted_rows<S>(p, t, j0, row);
    Row in[BATCH];
#pragma unroll
    for (int j = 0; j < BATCH; ++j)
      if (live && row[j] >= 0) {
        const long long at =
            blocked ? partial_block_offset(row[j], c, S::H, p.partial_block_cols)
                    : (static_cast<long long>(t) * S::K + j0 + j) * S::H + c;
        in[j].v = *reinterpret_cast<const Vec16 *>(static_cast<const T *>(p.partial) + at);
      }
#pragma unroll
    for (int j = 0; j < BATCH; ++j)
      if (live && row[j] >= 0)
#pragma unroll
        for (int v = 0; v < VEC; ++v)
          sum[v] += to_float<S::DT>(in[j].e[v]);
  }
  if (!live)
    return;
  T *dst = static_cast<T *>(p.y) + static_cast<long long>(t) * S::H + c;
#pragma unroll
  for (int v = 0; v < VEC; v += 2)
    store2<S::DT>(dst + v, sum[v], sum[v + 1]);
}

} // namespace moejit_dev
