#include "tune/candidates.h"

#include "runtime/arch_tiles.h"
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
  for (const TileConfig &c : runtime::tileGrid(arch, kind))
    consider(c);
  return out;
}

} // namespace moejit::tune
