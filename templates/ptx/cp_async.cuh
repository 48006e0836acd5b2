// cp.async (sm_80+): 16-byte global->shared copies that bypass registers.
#pragma once

#include "ptx/smem.cuh"

namespace moejit_dev {

/// An L2 policy under which the lines a load brings in are the last to be
/// evicted: token rows that other tiles of the expert read again while the
/// weight stream passes through L2.
__device__ __forceinline__ unsigned long long l2_evict_last_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

/// Copies `bytes` (16, or 0: 16 zero bytes, the source then not read but
/// still a mapped address) to the shared-window address `dst`; HINTED:
/// under the L2 policy `policy` (createpolicy), else with no hint. No hint
/// is not an evict_normal policy: that one cost a call up to 11% where the
/// rows go without evict_last (session 45, H100, qwen3-235b T=4096).
template <bool HINTED>
__device__ __forceinline__ void cp_async_16_bytes(unsigned dst, const void *src, unsigned bytes,
                                                  unsigned long long policy) {
  if constexpr (HINTED)
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "l"(policy));
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(bytes));
}

/// Copies 16 bytes to the shared memory at `dst`, or writes 16 zero bytes
/// when `valid` is false (the source is then not read, but must still be a
/// mapped address); no L2 hint.
__device__ __forceinline__ void cp_async_16(void *dst, const void *src, bool valid) {
  cp_async_16_bytes<false>(smem_addr(dst), src, valid ? 16 : 0, 0);
}

/// cp_async_16_bytes where `issue`, nothing elsewhere: the predicate sits
/// on the instruction (a branch around the asm would cost a BSSY/BSYNC
/// pair per copy).
template <bool HINTED>
__device__ __forceinline__ void cp_async_16_if(bool issue, unsigned dst, const void *src,
                                               unsigned bytes, unsigned long long policy) {
  if constexpr (HINTED)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %0, 0;\n"
        "@p cp.async.cg.shared.global.L2::cache_hint [%1], [%2], 16, %3, %4;\n}\n" ::"r"(
            static_cast<int>(issue)),
        "r"(dst), "l"(src), "r"(bytes), "l"(policy));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %0, 0;\n"
                 "@p cp.async.cg.shared.global [%1], [%2], 16, %3;\n}\n" ::"r"(
                     static_cast<int>(issue)),
                 "r"(dst), "l"(src), "r"(bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

/// Waits until at most N committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

} // namespace moejit_dev
