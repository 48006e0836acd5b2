#include "runtime/planner.h"

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
// Small row tiles keep the weight stream (the cost when few tokens hit each
// expert) from being padded with empty rows; large ones reuse each weight
// tile across more rows once GEMMs are compute bound.
GemmPlan planForRows(double rows_per_expert) {
  using codegen::TileConfig;
  if (rows_per_expert <= 16)
    return {TileConfig{16, 64, 4, 1, 4}, TileConfig{16, 128, 4, 1, 4}};
  if (rows_per_expert <= 32)
    return {TileConfig{32, 64, 4, 1, 4}, TileConfig{32, 128, 4, 1, 4}};
  if (rows_per_expert <= 64)
    return {TileConfig{64, 64, 4, 2, 2}, TileConfig{64, 128, 4, 2, 2}};
  return {TileConfig{128, 64, 3, 2, 2}, TileConfig{128, 128, 3, 2, 2}};
}
} // namespace

Plan heuristicPlan(const MoeShape &shape) {
  Plan plan;
  for (int b = 0; b < kBucketCount; ++b) {
    const double rows =
        static_cast<double>(bucketTokens(b)) * shape.k / shape.experts;
    plan.buckets.push_back(planForRows(rows));
  }
  return plan;
}

} // namespace moejit::runtime
