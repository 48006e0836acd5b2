// TMA descriptors of the expert weights (and of GEMM2's h rows) for the warp-specialised GEMMs
// (templates/kernels/moe_gemm_ws.cuh): the expert is the outermost
// coordinate, so one map serves every expert; boxes are 64 elements of K
// (one 128-byte swizzled row) by the tile's bn rows.
#pragma once

#include "codegen/tile_config.h"
#include "moejit/moejit.hpp"

#include <cuda.h>
#include <llvm/Support/Error.h>

namespace moejit::runtime {

/// GEMM1: gate_up [E, 2I, H] seen as [E, 2, I, H] (gate or up as a
/// coordinate, so a box past I reads zeros, not the other half); GEMM2:
/// down [E, H, I]. The map of `weights` for the GEMM of `kind` with tile
/// config `tile`.
llvm::Expected<CUtensorMap> weightTensorMap(const MoeShape &shape, codegen::GemmKind kind,
                                            const codegen::TileConfig &tile, const void *weights);

/// GEMM2's A operand: h [rows, I] in sorted order, boxes of 64 elements of
/// K by kWsRowBoxRows rows (rows past `rows` read zeros).
llvm::Expected<CUtensorMap> hRowsTensorMap(const MoeShape &shape, const void *h, int64_t rows);

} // namespace moejit::runtime
