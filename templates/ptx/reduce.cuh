// Reductions into global memory (Combine::Fast): element adds that other
// CTAs may be doing to the same addresses at the same time. Which add lands
// first is not specified, so the rounding of the sum varies run to run.
#pragma once

#include "ptx/convert.cuh"
#include "ptx/smem.cuh"

namespace moejit_dev {

/// *ptr += lo, *(ptr + 1) += hi, each element atomically (ptr is 2-element
/// aligned); 16-bit sums are rounded to the dtype.
template <int DT>
__device__ __forceinline__ void red_add2(typename Storage<DT>::type *ptr, float lo, float hi) {
  if constexpr (DT == kFP32) {
    asm volatile("red.global.add.f32 [%0], %1;" ::"l"(ptr), "f"(lo) : "memory");
    asm volatile("red.global.add.f32 [%0], %1;" ::"l"(ptr + 1), "f"(hi) : "memory");
  } else if constexpr (DT == kFP16) {
    asm volatile("red.global.add.noftz.f16x2 [%0], %1;" ::"l"(ptr), "r"(pack2<DT>(lo, hi))
                 : "memory");
  } else {
#if __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.noftz.bf16x2 [%0], %1;" ::"l"(ptr), "r"(pack2<DT>(lo, hi))
                 : "memory");
#else
    // Before sm_90 there is no bf16x2 reduction: compare-and-swap the pair.
    unsigned *word = reinterpret_cast<unsigned *>(ptr);
    unsigned seen = *word, expected;
    do {
      expected = seen;
      const float a = to_float<kBF16>(static_cast<unsigned short>(expected & 0xffffu)) + lo;
      const float b = to_float<kBF16>(static_cast<unsigned short>(expected >> 16)) + hi;
      seen = atomicCAS(word, expected, pack2<kBF16>(a, b));
    } while (seen != expected);
#endif
  }
}

/// Adds `bytes` (a multiple of 16, both ends 16-byte aligned) of 16-bit
/// elements from shared memory into global memory through the async proxy
/// (sm_90), each element atomically; tracked in the thread's bulk groups
/// like bulk_store.
template <int DT>
__device__ __forceinline__ void bulk_reduce_add(void *global_dst, const void *smem_src,
                                                unsigned bytes) {
  static_assert(DT == kBF16 || DT == kFP16, "bulk reduce-add of 16-bit elements");
  if constexpr (DT == kBF16)
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16 [%0], [%1], "
                 "%2;\n" ::"l"(global_dst),
                 "r"(smem_addr(smem_src)), "r"(bytes)
                 : "memory");
  else
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.f16 [%0], [%1], "
                 "%2;\n" ::"l"(global_dst),
                 "r"(smem_addr(smem_src)), "r"(bytes)
                 : "memory");
}

} // namespace moejit_dev
