// y[t] = sum over j < k, in slot order, of partial[t*k+j] for the slots whose
// expert id is in range. The fixed order makes y bitwise reproducible.
#pragma once

#include "blocks/moe_common.cuh"

namespace moejit_dev {

/// Grid: (T, ceil(H / (16-byte vectors * kCombineThreads))). The slots'
/// ids, then their partial rows, are loaded in batches of up to 8
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
  for (int j0 = 0; j0 < S::K; j0 += BATCH) {
    bool routed[BATCH];
#pragma unroll
    for (int j = 0; j < BATCH; ++j)
      routed[j] = j0 + j < S::K && expert_of<S>(p, t * S::K + j0 + j) >= 0;
    Row in[BATCH];
#pragma unroll
    for (int j = 0; j < BATCH; ++j)
      if (routed[j])
        in[j].v = *reinterpret_cast<const Vec16 *>(
            static_cast<const T *>(p.partial) +
            (static_cast<long long>(t) * S::K + j0 + j) * S::H + c);
#pragma unroll
    for (int j = 0; j < BATCH; ++j)
      if (routed[j])
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
