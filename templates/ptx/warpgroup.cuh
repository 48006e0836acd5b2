// Warp specialisation (sm_90a): register budgets per warpgroup, and a
// value the compiler is to treat as the same in every lane.
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

/// `v`, which every active lane holds alike, as a value ptxas knows is
/// uniform (redux.sync's result lives in a uniform register): what is
/// computed from it (a tile's row list, a TMA box's coordinates) stays in
/// uniform registers instead of being moved into them (R2UR) before every
/// TMA issue. For a value that comes from an atomic or from shared memory.
__device__ __forceinline__ int warp_uniform(int v) {
  unsigned mask;
  asm volatile("activemask.b32 %0;" : "=r"(mask));
  int out;
  asm volatile("redux.sync.max.s32 %0, %1, %2;" : "=r"(out) : "r"(v), "r"(mask));
  return out;
}

} // namespace moejit_dev
