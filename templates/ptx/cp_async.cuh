// cp.async (sm_80+): 16-byte global->shared copies that bypass registers.
#pragma once

#include "ptx/smem.cuh"

namespace moejit_dev {

/// Copies 16 bytes, or writes 16 zero bytes when `valid` is false (the
/// source is then not read, but must still be a mapped address).
__device__ __forceinline__ void cp_async_16(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

/// Waits until at most N committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

} // namespace moejit_dev
