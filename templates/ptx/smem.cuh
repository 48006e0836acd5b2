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

/// Four 8x8 matrices of 16-bit elements from a warp's fragments to shared
/// memory: lane l holds, in register j, row l/4 and columns 2*(l%4), +1 of
/// matrix j (the mma/wgmma accumulator layout, packed), and gives the
/// shared-window address (16-byte aligned) of row l%8 of matrix l/8.
__device__ __forceinline__ void stmatrix_x4(unsigned addr, unsigned m0, unsigned m1, unsigned m2,
                                            unsigned m3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(m0), "r"(m1), "r"(m2), "r"(m3)
               : "memory");
}

/// As stmatrix_x4, each 8x8 matrix transposed: lane l gives the address of
/// row l%8 of matrix l/8 as stored, which is column l%8 of the fragment.
__device__ __forceinline__ void stmatrix_x4_trans(unsigned addr, unsigned m0, unsigned m1,
                                                  unsigned m2, unsigned m3) {
  asm volatile(
      "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
      "r"(m0), "r"(m1), "r"(m2), "r"(m3)
      : "memory");
}

/// 16 bytes from shared memory (a 16-byte aligned shared-window address).
__device__ __forceinline__ uint4 ld_shared_v4(unsigned addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

/// Barrier `id` (1..15; 0 is __syncthreads) over `threads` threads of the
/// block, for one warpgroup to synchronise without the others.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

} // namespace moejit_dev
