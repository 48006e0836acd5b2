// y[t] = sum over j < k, in slot order, of the partial row of t*k+j for the
// slots routed to a local expert (a sorted row). The fixed order makes y bitwise
// reproducible. The rows are where GEMM2 wrote them: row t*k+j, or (a
// blocked GEMM2, p.partial_block_cols) the assignment's sorted row in the
// blocked layout (moejit_abi::partial_block_offset).
#pragma once

#include "blocks/moe_common.cuh"

namespace moejit_dev {

/// Grid: (T, ceil(H / (16-byte vectors * kCombineThreads))). The slots'
/// sorted rows, then their partial rows, are loaded in batches of up to 8
/// independent loads (at small T a thread's serial chain of k loads was
/// most of the pass); the sum still runs in slot order.
template <class S> __device__ void combine(const LaunchParams &p) {
  using T = typename S::T;
  constexpr int VEC = 16 / sizeof(T);
  constexpr int BATCH = S::K < 8 ? S::K : 8;
  const int t = blockIdx.x;
  const int c = (blockIdx.y * kCombineThreads + threadIdx.x) * VEC;
  if (c >= S::H)
    return;
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
    // for every assignment), then their partial rows: two batches of
    // independent loads.
    int row[BATCH];
#pragma unroll
    for (int j = 0; j < BATCH; ++j)
      row[j] = j0 + j < S::K ? p.sorted_rows[t * S::K + j0 + j] : -1;
    Row in[BATCH];
#pragma unroll
    for (int j = 0; j < BATCH; ++j)
      if (row[j] >= 0) {
        const long long at =
            blocked ? partial_block_offset(row[j], c, S::H, p.partial_block_cols)
                    : (static_cast<long long>(t) * S::K + j0 + j) * S::H + c;
        in[j].v = *reinterpret_cast<const Vec16 *>(static_cast<const T *>(p.partial) + at);
      }
#pragma unroll
    for (int j = 0; j < BATCH; ++j)
      if (row[j] >= 0)
#pragma unroll
        for (int v = 0; v < VEC; ++v)
          sum[v] += to_float<S::DT>(in[j].e[v]);
  }
  T *dst = static_cast<T *>(p.y) + static_cast<long long>(t) * S::H + c;
#pragma unroll
  for (int v = 0; v < VEC; v += 2)
    store2<S::DT>(dst + v, sum[v], sum[v + 1]);
}

} // namespace moejit_dev
