// Bulk copies shared -> global (sm_90): one instruction moves a contiguous
// run of bytes (a multiple of 16, 16-byte aligned at both ends) through the
// async proxy while the issuing thread goes on. Completion is tracked per
// thread in bulk groups.
#pragma once

#include "ptx/smem.cuh"

namespace moejit_dev {

__device__ __forceinline__ void bulk_store(void *global_dst, const void *smem_src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(global_dst),
               "r"(smem_addr(smem_src)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

/// Waits until at most N of this thread's bulk groups still read their
/// shared source (the source may then be rewritten).
template <int N> __device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

/// Waits until at most N of this thread's bulk groups are still writing.
template <int N> __device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

} // namespace moejit_dev
