#include "runtime/planner.h"

#include "common/error.h"

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

namespace {
// Chosen from measured variants on the H200 (tools/bench/NOTES.md, seed
// shape). While weights dominate (<= 16 rows per expert) 16-row mma.sync
// tiles stream them best. On sm_90a everything larger goes to wgmma: 64-row
// tiles near 32 rows per expert, 128-row tiles (2 blocks per SM) up to a few
// hundred rows, then 192x192 tiles (three warpgroups, 4 stages, one wgmma
// group in flight): they beat 256x128 by padding an expert's ~512 rows to
// 576 instead of 768. Elsewhere mma.sync with 64- then 128-row tiles.
GemmPlan planForRows(double rows_per_expert, bool hopper) {
  using codegen::TileConfig;
  if (rows_per_expert <= 16)
    return {TileConfig{16, 64, 4, 1, 4}, TileConfig{16, 128, 4, 1, 4}};
  if (hopper) {
    auto wgmma = [](int bm, int bn1, int bn2, int stages, int inflight) {
      return GemmPlan{TileConfig{bm, bn1, stages, 0, 0, true, inflight},
                      TileConfig{bm, bn2, stages, 0, 0, true, inflight}};
    };
    if (rows_per_expert <= 32)
      return wgmma(64, 64, 128, 4, 0);
    if (rows_per_expert < 384)
      return wgmma(128, 64, 128, 3, 0);
    return wgmma(192, 96, 192, 4, 1);
  }
  if (rows_per_expert <= 128)
    return {TileConfig{64, 64, 3, 2, 2}, TileConfig{64, 128, 3, 2, 2}};
  return {TileConfig{128, 64, 3, 2, 2}, TileConfig{128, 128, 3, 2, 2}};
}
} // namespace

Plan heuristicPlan(const MoeShape &shape, const Arch &arch) {
  const bool hopper = arch.hasWgmma();
  Plan plan;
  for (int b = 0; b < kBucketCount; ++b) {
    const double rows = static_cast<double>(bucketTokens(b)) * shape.k / shape.experts;
    plan.buckets.push_back(planForRows(rows, hopper));
  }
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
