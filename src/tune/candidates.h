// The tile configs the autotuner tries. Every candidate passes the tile
// rules (codegen::checkMmaConfig) before anything is compiled; ones that
// then fail to compile, spill, load or check are recorded as failed.
#pragma once

#include "codegen/tile_config.h"
#include "common/arch.h"
#include "moejit/moejit.hpp"

#include <string>
#include <vector>

namespace moejit::tune {

/// Every config worth compiling for one GEMM of `shape` on `arch`: the
/// heuristic's, then the arch's grid (runtime::tileGrid) less configs that
/// break the tile rules or whose columns exceed the GEMM's output width by
/// a whole tile. fp32 has one fixed SIMT tile: the list holds just the
/// heuristic's. Which are worth timing at a row count: runtime::worthTiming.
std::vector<codegen::TileConfig> gemmCandidates(const MoeShape &shape, const Arch &arch,
                                                codegen::GemmKind kind);

} // namespace moejit::tune
