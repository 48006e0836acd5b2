#include "tune/candidates.h"

#include "runtime/planner.h"

#include <llvm/Support/Error.h>

#include <algorithm>

namespace moejit::tune {

using codegen::GemmKind;
using codegen::TileConfig;

namespace {

bool valid(const TileConfig &c, GemmKind kind) {
  if (llvm::Error e = codegen::checkMmaConfig(c, kind)) {
    llvm::consumeError(std::move(e));
    return false;
  }
  return true;
}

void addIfNew(std::vector<TileConfig> &out, const TileConfig &c) {
  for (const TileConfig &o : out)
    if (o == c)
      return;
  out.push_back(c);
}

} // namespace

std::vector<TileConfig> gemmCandidates(const MoeShape &shape, const Arch &arch, GemmKind kind) {
  std::vector<TileConfig> out;
  // The heuristic's configs always take part, so tuning never does worse.
  for (const runtime::GemmPlan &g : runtime::heuristicPlan(shape, arch).buckets)
    addIfNew(out, kind == GemmKind::Gemm1 ? g.gemm1 : g.gemm2);
  if (shape.dtype == DType::FP32)
    return out;
  const int width = kind == GemmKind::Gemm1 ? shape.intermediate : shape.hidden;
  auto consider = [&](const TileConfig &c) {
    // A tile wider than the output by 64 columns or more only adds padding.
    if (c.bn - width >= 64 || !valid(c, kind))
      return;
    addIfNew(out, c);
  };
  if (arch.hasWgmma()) {
    // GEMM1's bn counts h columns; each needs a gate and an up row of B.
    const int bns1[] = {32, 64, 96, 128};
    const int bns2[] = {64, 128, 192, 256};
    for (int bm : {64, 128, 192, 256})
      for (int bn : kind == GemmKind::Gemm1 ? bns1 : bns2)
        for (int stages : {3, 4})
          for (int inflight : {0, 1})
            consider(TileConfig{bm, bn, stages, 0, 0, true, inflight});
  }
  // On sm_90a mma.sync only serves the few-rows buckets (worthTiming).
  const std::vector<int> mma_bms =
      arch.hasWgmma() ? std::vector<int>{16, 32} : std::vector<int>{16, 32, 64, 128};
  const int warp_layouts[][2] = {{1, 4}, {2, 2}, {4, 1}, {2, 4}, {4, 2}};
  for (int bm : mma_bms)
    for (int bn : {64, 128})
      for (int stages : {3, 4})
        for (const auto &w : warp_layouts)
          consider(TileConfig{bm, bn, stages, w[0], w[1], false, 0});
  return out;
}

bool worthTiming(const TileConfig &tile, double rows_per_expert, const Arch &arch) {
  const double r = rows_per_expert;
  if (tile.wgmma)
    // 64-row wgmma tiles are the floor; taller ones once experts fill half
    // of them; 64-row tiles stop paying once experts have >1024 rows.
    return tile.bm <= std::max(64.0, 2 * r) && !(tile.bm == 64 && r > 1024);
  // On sm_90a mma.sync only wins while weights dominate (few rows).
  if (arch.hasWgmma() && r > 32)
    return false;
  return tile.bm <= std::max(16.0, 2 * r) && !(tile.bm <= 32 && r > 256);
}

} // namespace moejit::tune
