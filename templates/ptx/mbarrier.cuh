// mbarrier (sm_90): shared-memory barriers that count arrivals and, for TMA,
// transaction bytes. One full and one empty barrier per pipeline stage: the
// producer fills a stage once its empty barrier completed the phase before,
// consumers read it once its full barrier completed the current phase.
#pragma once

#include "ptx/smem.cuh"

namespace moejit_dev {

/// One thread initialises; then fence_mbarrier_init and a block barrier
/// before any other thread uses it.
__device__ __forceinline__ void mbar_init(unsigned long long *bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(arrivals)
               : "memory");
}

/// Makes initialised barriers visible to the async proxy (TMA completes
/// transactions on them).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned long long *bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar))
               : "memory");
}

/// One arrival that also expects `bytes` of transactions (TMA copies
/// completing on this barrier) in the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

/// An arrival triggered when every cp.async this thread issued so far has
/// landed; .noinc: the barrier's arrival count already includes it.
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned long long *bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar))
               : "memory");
}

__device__ __forceinline__ bool mbar_try_wait(unsigned long long *bar, unsigned parity) {
  unsigned done;
  asm volatile("{\n.reg .pred p;\n"
               "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(smem_addr(bar)), "r"(parity)
               : "memory");
  return done != 0;
}

/// One try of mbar_wait: this lane's try_wait, or with WARP (a wait every
/// lane of the warp makes together) whether all lanes' succeeded, which
/// the compiler sees as the same in every lane.
template <bool WARP>
__device__ __forceinline__ bool mbar_ready(unsigned long long *bar, unsigned parity) {
  const bool done = mbar_try_wait(bar, parity);
  if constexpr (WARP)
    return __all_sync(0xffffffffu, done);
  return done;
}

/// Waits until the phase of parity `parity` has completed (try_wait may
/// return early: loop). Built with MOEJIT_PIPELINE_TIMEOUT_NS, a wait past
/// that many nanoseconds traps, so a broken pipeline fails its test
/// instead of hanging it. WARP: the whole warp waits and leaves together
/// (mbar_ready).
template <bool WARP = false>
__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned parity) {
#ifdef MOEJIT_PIPELINE_TIMEOUT_NS
  // The clock is read once per 4096 failed tries (try_wait itself waits a
  // while), which keeps the loop's registers few.
  unsigned tries = 0;
  unsigned long long start = 0;
  while (!mbar_ready<WARP>(bar, parity)) {
    if ((++tries & 4095u) != 0)
      continue;
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (start == 0)
      start = now;
    else if (now - start > (unsigned long long)(MOEJIT_PIPELINE_TIMEOUT_NS))
      __trap();
  }
#else
  while (!mbar_ready<WARP>(bar, parity)) {
  }
#endif
}

} // namespace moejit_dev
