#include "runtime/planner.h"

#include "common/error.h"
#include "runtime/arch_tiles.h"

#include <algorithm>
#include <bit>

namespace moejit::runtime {

int bucketOf(int64_t tokens) {
  if (tokens <= 1)
    return 0;
  const int b = 64 - std::countl_zero(static_cast<uint64_t>(tokens - 1));
  return std::min(b, kBucketCount - 1);
}

int64_t bucketTokens(int bucket) { return int64_t{1} << bucket; }

Plan heuristicPlan(const MoeShape &shape, const Arch &arch) {
  Plan plan;
  for (int b = 0; b < kBucketCount; ++b) {
    const double rows = static_cast<double>(bucketTokens(b)) * shape.k / shape.experts;
    plan.buckets.push_back(heuristicTiles(shape, rows, arch));
  }
  return plan;
}

Plan batchInvariantPlan(Plan plan) {
  const GemmPlan last = plan.buckets.back();
  plan.buckets.assign(plan.buckets.size(), last);
  plan.source += " (batch-invariant: the largest bucket's configs for every T)";
  return plan;
}

/// The tile rules a plan's configs must follow on `arch`.
llvm::Error checkGemmPlan(const GemmPlan &g, const Arch &arch) {
  if (llvm::Error e = codegen::checkMmaConfig(g.gemm1, codegen::GemmKind::Gemm1))
    return e;
  if (llvm::Error e = codegen::checkMmaConfig(g.gemm2, codegen::GemmKind::Gemm2))
    return e;
  for (const codegen::TileConfig &c : {g.gemm1, g.gemm2})
    if (c.wgmma && !arch.hasWgmma())
      return makeError(ErrorCode::InvalidArgument,
                       "tile config {} uses wgmma, which only sm_90a has (target {})", c.suffix(),
                       arch.name());
  // Routing lists tiles of the larger bm and each GEMM splits them into
  // blocks of its own bm.
  const int hi = std::max(g.gemm1.bm, g.gemm2.bm), lo = std::min(g.gemm1.bm, g.gemm2.bm);
  if (hi % lo != 0)
    return makeError(ErrorCode::InvalidArgument,
                     "gemm1 bm {} and gemm2 bm {}: the smaller must divide the larger", g.gemm1.bm,
                     g.gemm2.bm);
  return llvm::Error::success();
}

} // namespace moejit::runtime
