// Launch chaining (sm_90): programmatic dependent launch, with which a
// kernel's prologue overlaps the tail of the kernel before it in the stream.
#pragma once

namespace moejit_dev {

/// Programmatic dependent launch. griddep_wait: returns once the grids this
/// one depends on have completed and their writes are visible (at once when
/// launched without the attribute). Nothing a previous kernel of the stream
/// writes, or reads, may be touched before it. griddep_launch_dependents:
/// lets the next kernel of the stream start its prologue on SMs this grid
/// frees. Both are no-ops before sm_90.
__device__ __forceinline__ void griddep_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void griddep_launch_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

} // namespace moejit_dev
