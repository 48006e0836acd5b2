// Shared-memory addressing and lane masks as inline PTX (no toolkit headers).
#pragma once

namespace moejit_dev {

/// 32-bit shared-window address of a generic pointer into shared memory.
__device__ __forceinline__ unsigned smem_addr(const void *ptr) {
  unsigned long long addr;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(addr) : "l"(ptr));
  return static_cast<unsigned>(addr);
}

/// Bit i set for every lane i below the calling lane.
__device__ __forceinline__ unsigned lanemask_lt() {
  unsigned mask;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
  return mask;
}

/// One 32-bit store to shared memory.
__device__ __forceinline__ void st_shared_b32(const void *ptr, unsigned v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(smem_addr(ptr)), "r"(v) : "memory");
}

/// Barrier `id` (1..15; 0 is __syncthreads) over `threads` threads of the
/// block, for one warpgroup to synchronise without the others.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

} // namespace moejit_dev
