// Tensor-core building blocks for sm_80+: ldmatrix and mma.sync m16n8k16
// with fp32 accumulation, for bf16 and fp16 operands.
#pragma once

#include "ptx/smem.cuh"

namespace moejit_dev {

/// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
/// Lane l receives row l/4, columns 2*(l%4) and 2*(l%4)+1 of each matrix.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

/// d += a * b for one 16x8x16 tile (registers only, so not volatile: the
/// compiler may interleave it with loads). a: row-major A fragment (4 regs),
/// b: column-major B fragment (2 regs), d: 4 fp32 accumulators where lane l
/// holds rows l/4 and l/4+8, columns 2*(l%4) and 2*(l%4)+1.
template <bool IsBf16>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1) {
  if constexpr (IsBf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

} // namespace moejit_dev
