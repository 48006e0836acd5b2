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

/// An L2 policy under which the lines a load brings in are the last to be
/// evicted: token rows that other tiles of the expert read again while the
/// weight stream passes through L2.
__device__ __forceinline__ unsigned long long l2_evict_last_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

/// The default L2 policy, for loads that take a policy operand.
__device__ __forceinline__ unsigned long long l2_evict_normal_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

/// Copies `bytes` (16, or 0: 16 zero bytes, the source then not read but
/// still a mapped address) to the shared-window address `dst`, under the
/// L2 policy `policy` (createpolicy).
__device__ __forceinline__ void cp_async_16_bytes(unsigned dst, const void *src, unsigned bytes,
                                                  unsigned long long policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst),
               "l"(src), "r"(bytes), "l"(policy));
}

/// cp_async_16_bytes where `issue`, nothing elsewhere: the predicate sits
/// on the instruction (a branch around the asm would cost a BSSY/BSYNC
/// pair per copy).
__device__ __forceinline__ void cp_async_16_if(bool issue, unsigned dst, const void *src,
                                               unsigned bytes, unsigned long long policy) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %0, 0;\n"
      "@p cp.async.cg.shared.global.L2::cache_hint [%1], [%2], 16, %3, %4;\n}\n" ::"r"(
          static_cast<int>(issue)),
      "r"(dst), "l"(src), "r"(bytes), "l"(policy));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

/// Waits until at most N committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

} // namespace moejit_dev
