// The launches of one MoE call, stage by stage: routing (count, scan,
// scatter), GEMM1, GEMM2, combine. KernelSet::run enqueues all of them; the
// autotuner times the GEMM stages one by one with the same code.
#pragma once

#include "runtime/kernel_set.h"

namespace moejit::runtime {

/// Rows per routing tile of a plan: the larger bm of the two GEMMs (the
/// smaller one divides it; each GEMM splits list tiles into its own blocks).
int tileRows(const MoeShape &shape, const GemmPlan &plan);

/// The parameter block for one call: caller pointers from `args`, scratch
/// carved out of args.workspace by `layout`.
LaunchParams launchParams(const MoeArgs &args, const WorkspaceLayout &layout,
                          const LaunchGeometry &geometry);

/// Largest grid.y a GEMM of this plan needs at `geometry`.
int64_t gemmGridRows(const MoeShape &shape, const GemmPlan &plan, const LaunchGeometry &geometry);

/// route_small when there is one and the assignments fit one block, else
/// count, scan, scatter.
llvm::Error enqueueRouting(const RoutingKernels &routing, const LaunchGeometry &geometry,
                           const LaunchParams &params, CUstream stream);
/// One grouped GEMM (GEMM1 when kind is Gemm1) with config `tile`.
llvm::Error enqueueGemm(const MoeShape &shape, codegen::KernelKind kind, const LoadedKernel &gemm,
                        const codegen::TileConfig &tile, const LaunchGeometry &geometry,
                        const LaunchParams &params, CUstream stream);
llvm::Error enqueueCombine(const MoeShape &shape, const LoadedKernel &combine,
                           const LaunchParams &params, CUstream stream);

/// The plain GPU reference (templates/moe_reference.cuh) of the call in
/// `args`: fp32 h into `h_ref` [T*k, I], then fp32 y into `y_ref` [T, H].
llvm::Error enqueueReference(const MoeShape &shape, const LoadedKernel &reference_h,
                             const LoadedKernel &reference_y, const MoeArgs &args, void *h_ref,
                             void *y_ref, CUstream stream);

} // namespace moejit::runtime
