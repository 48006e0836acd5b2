// TMA (sm_90): bulk tensor copies global -> shared described by a tensor map
// the host encodes (cuTensorMapEncodeTiled) and passes as a
// __grid_constant__ kernel parameter. Completion is counted in bytes on an
// mbarrier (ptx/mbarrier.cuh). A prefetch brings the same box into L2 only:
// nothing waits for it, nothing is written.
#pragma once

#include "ptx/smem.cuh"

namespace moejit_dev {

/// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ void prefetch_tensor_map(const TensorMap *map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map))
               : "memory");
}

/// Box at (c0, c1) of a 2-D map into `dst` (1024-byte aligned for the
/// 128-byte swizzle); `bar` receives the bytes.
__device__ __forceinline__ void tma_load_2d(void *dst, const TensorMap *map,
                                            unsigned long long *bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_addr(dst)),
               "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
               : "memory");
}

/// Box at (c0, c1, c2) of a 3-D map into `dst` (1024-byte aligned for the
/// 128-byte swizzle); `bar` receives the bytes.
__device__ __forceinline__ void tma_load_3d(void *dst, const TensorMap *map,
                                            unsigned long long *bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(smem_addr(dst)),
               "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0),
               "r"(c1), "r"(c2)
               : "memory");
}

/// Box at (c0, c1, c2, c3) of a 4-D map.
__device__ __forceinline__ void tma_load_4d(void *dst, const TensorMap *map,
                                            unsigned long long *bar, int c0, int c1, int c2,
                                            int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(smem_addr(dst)),
               "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0),
               "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

__device__ __forceinline__ void tma_load_5d(void *dst, const TensorMap *map,
                                            unsigned long long *bar, int c0, int c1, int c2,
                                            int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n" ::"r"(smem_addr(dst)),
               "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(c0),
               "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

/// The box at (c0, c1, c2) of a 3-D map into L2.
__device__ __forceinline__ void tma_prefetch(const TensorMap *map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

/// The box at (c0, c1, c2, c3) of a 4-D map into L2.
__device__ __forceinline__ void tma_prefetch(const TensorMap *map, int c0, int c1, int c2,
                                             int c3) {
  asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

/// The box at (c0, c1, c2, c3, c4) of a 5-D map into L2.
__device__ __forceinline__ void tma_prefetch(const TensorMap *map, int c0, int c1, int c2, int c3,
                                             int c4) {
  asm volatile(
      "cp.async.bulk.prefetch.tensor.5d.L2.global.tile [%0, {%1, %2, %3, %4, %5}];\n" ::"l"(
          reinterpret_cast<unsigned long long>(map)),
      "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

} // namespace moejit_dev
