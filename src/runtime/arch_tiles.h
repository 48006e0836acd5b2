// Each architecture's tile choices in one place: the configs the heuristic
// picks per rows-per-expert, the grid the autotuner searches, and which of
// those are worth timing at a given row count. The planner (heuristicPlan)
// and the tuner (tune::gemmCandidates) read them from here.
#pragma once

#include "codegen/tile_config.h"
#include "common/arch.h"
#include "runtime/planner.h"

#include <vector>

namespace moejit::runtime {

/// The heuristic's GEMM configs for `shape` when each expert gets about
/// `rows_per_expert` rows.
GemmPlan heuristicTiles(const MoeShape &shape, double rows_per_expert, const Arch &arch);

/// The configs the tuner may try for one GEMM on `arch`, before the tile
/// rules and the output width filter them (tune::gemmCandidates).
std::vector<codegen::TileConfig> tileGrid(const Arch &arch, codegen::GemmKind kind);

/// Whether a config is worth timing when each expert gets about
/// `rows_per_expert` rows: row tiles much taller than that waste most of
/// their rows, and very short ones re-read the weights too often.
bool worthTiming(const codegen::TileConfig &tile, double rows_per_expert, const Arch &arch);

} // namespace moejit::runtime
