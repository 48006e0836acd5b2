// A plain GPU reference of the whole operation, fp32 math and an fp32
// intermediate, one warp per output element. Used by `moejit bench` to check
// results at sizes where the fp64 CPU reference would be too slow.
#pragma once

#include "blocks/moe_common.cuh"

namespace moejit_dev {

template <class S>
__device__ float warp_dot(const typename S::T *a, const typename S::T *b, int n) {
  float s = 0.f;
  for (int i = threadIdx.x & 31; i < n; i += 32)
    s += to_float<S::DT>(a[i]) * to_float<S::DT>(b[i]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, off);
  return s;
}

/// One warp per (assignment a, column i): h_ref[a*I+i] (fp32, in p.h).
template <class S> __device__ void reference_h(const LaunchParams &p) {
  using T = typename S::T;
  const long long w = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (w >= static_cast<long long>(p.tokens) * S::K * S::I)
    return;
  const int a = static_cast<int>(w / S::I), i = static_cast<int>(w % S::I);
  const int e = expert_of<S>(p, a);
  float out = 0.f;
  if (e >= 0) {
    const T *x = static_cast<const T *>(p.x) + static_cast<long long>(a / S::K) * S::H;
    const T *gu = static_cast<const T *>(p.gate_up) + static_cast<long long>(e) * 2 * S::I * S::H;
    const float g = warp_dot<S>(x, gu + static_cast<long long>(i) * S::H, S::H);
    const float u = warp_dot<S>(x, gu + static_cast<long long>(S::I + i) * S::H, S::H);
    out = g / (1.f + expf(-g)) * u;
  }
  if ((threadIdx.x & 31) == 0)
    static_cast<float *>(p.h)[w] = out;
}

/// One warp per (token t, column n): y_ref (fp32, in p.partial).
template <class S> __device__ void reference_y(const LaunchParams &p) {
  using T = typename S::T;
  const long long w = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (w >= static_cast<long long>(p.tokens) * S::H)
    return;
  const int t = static_cast<int>(w / S::H), n = static_cast<int>(w % S::H);
  float y = 0.f;
  for (int j = 0; j < S::K; ++j) {
    const int e = expert_of<S>(p, t * S::K + j);
    if (e < 0)
      continue;
    const T *d = static_cast<const T *>(p.down) + (static_cast<long long>(e) * S::H + n) * S::I;
    const float *h =
        static_cast<const float *>(p.h) + (static_cast<long long>(t) * S::K + j) * S::I;
    float s = 0.f;
    for (int i = threadIdx.x & 31; i < S::I; i += 32)
      s += to_float<S::DT>(d[i]) * h[i];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
      s += __shfl_xor_sync(0xffffffffu, s, off);
    y += weight_of<S>(p, t * S::K + j) * s;
  }
  if ((threadIdx.x & 31) == 0)
    static_cast<float *>(p.partial)[w] = y;
}

} // namespace moejit_dev
