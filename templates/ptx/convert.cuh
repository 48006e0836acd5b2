// Element types and conversions as inline PTX, so that no cuda_bf16.h or
// cuda_fp16.h is needed at run time.
#pragma once

namespace moejit_dev {

enum : int { kBF16 = 0, kFP16 = 1, kFP32 = 2 };

/// Storage type of one element: raw 16-bit patterns for bf16/fp16.
template <int DT> struct Storage { using type = unsigned short; };
template <> struct Storage<kFP32> { using type = float; };

template <int DT> __device__ __forceinline__ float to_float(typename Storage<DT>::type v) {
  if constexpr (DT == kBF16) {
    return __uint_as_float(static_cast<unsigned>(v) << 16);
  } else if constexpr (DT == kFP16) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
    return f;
  } else {
    return v;
  }
}

/// Packs two floats as two 16-bit elements, round to nearest even; `lo` is
/// the element at the lower address.
template <int DT> __device__ __forceinline__ unsigned pack2(float lo, float hi) {
  unsigned r;
  if constexpr (DT == kBF16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/// Stores two adjacent elements (ptr is 2-element aligned).
template <int DT>
__device__ __forceinline__ void store2(typename Storage<DT>::type *ptr, float lo, float hi) {
  if constexpr (DT == kFP32) {
    ptr[0] = lo;
    ptr[1] = hi;
  } else {
    *reinterpret_cast<unsigned *>(ptr) = pack2<DT>(lo, hi);
  }
}

} // namespace moejit_dev
