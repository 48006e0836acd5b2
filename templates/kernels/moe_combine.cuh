// y[t] = sum over j < k, in slot order, of partial[t*k+j] for the slots whose
// expert id is in range. The fixed order makes y bitwise reproducible.
#pragma once

#include "blocks/moe_common.cuh"

namespace moejit_dev {

/// Grid: (T, ceil(H / (16-byte vectors * kCombineThreads))).
template <class S> __device__ void combine(const LaunchParams &p) {
  using T = typename S::T;
  constexpr int VEC = 16 / sizeof(T);
  const int t = blockIdx.x;
  const int c = (blockIdx.y * kCombineThreads + threadIdx.x) * VEC;
  if (c >= S::H)
    return;
  float sum[VEC] = {};
  for (int j = 0; j < S::K; ++j) {
    if (expert_of<S>(p, t * S::K + j) < 0)
      continue;
    const T *src =
        static_cast<const T *>(p.partial) + (static_cast<long long>(t) * S::K + j) * S::H + c;
    union {
      Vec16 v;
      T e[VEC];
    } in;
    in.v = *reinterpret_cast<const Vec16 *>(src);
#pragma unroll
    for (int v = 0; v < VEC; ++v)
      sum[v] += to_float<S::DT>(in.e[v]);
  }
  T *dst = static_cast<T *>(p.y) + static_cast<long long>(t) * S::H + c;
#pragma unroll
  for (int v = 0; v < VEC; v += 2)
    store2<S::DT>(dst + v, sum[v], sum[v + 1]);
}

} // namespace moejit_dev
