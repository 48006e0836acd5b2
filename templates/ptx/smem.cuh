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

} // namespace moejit_dev
