// Warp specialisation (sm_90a): register budgets per warpgroup.
#pragma once

namespace moejit_dev {

/// Gives registers back (producer warpgroups) or takes them (consumers);
/// the kernel needs a register cap at entry (__launch_bounds__(N, 1)).
template <int R> __device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R> __device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}

} // namespace moejit_dev
