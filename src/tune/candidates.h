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

/// Every config worth compiling for one GEMM of `shape` on `arch`: wgmma
/// tiles (sm_90a only) over bm, bn, stages and groups in flight, and
/// mma.sync tiles over bm, bn, stages and warp layouts. Configs whose
/// columns exceed the GEMM's output width by a whole tile are dropped.
/// fp32 has one fixed SIMT tile: the list holds just the heuristic's.
std::vector<codegen::TileConfig> gemmCandidates(const MoeShape &shape, const Arch &arch,
                                                codegen::GemmKind kind);

/// Whether a config is worth timing when each expert gets about
/// `rows_per_expert` rows: row tiles much taller than that waste most of
/// their rows, and very short ones re-read the weights too often.
bool worthTiming(const codegen::TileConfig &tile, double rows_per_expert, const Arch &arch);

} // namespace moejit::tune
