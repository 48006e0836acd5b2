// Planner: a tile configuration per token bucket. Buckets are powers of two:
// bucket b serves 2^(b-1) < T <= 2^b (bucket 0: T = 1); T past the last
// bucket uses the last.
#pragma once

#include "codegen/tile_config.h"
#include "common/arch.h"
#include "moejit/moejit.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace moejit::runtime {

inline constexpr int kBucketCount = 17; // T = 1 .. 65536

int bucketOf(int64_t tokens);
int64_t bucketTokens(int bucket); ///< representative T: 2^bucket

/// The two GEMM configs used together. Routing lists tiles of the larger bm;
/// the smaller bm must divide it (each GEMM splits list tiles into blocks).
struct GemmPlan {
  codegen::TileConfig gemm1, gemm2;
  bool operator==(const GemmPlan &) const = default;
};

struct Plan {
  std::vector<GemmPlan> buckets; ///< kBucketCount entries
  /// Where it came from (KernelSet::plan_source).
  std::string source = "heuristic";
};

/// The rules a GEMM pair must follow on `arch`: each config passes
/// codegen::checkMmaConfig, wgmma only on sm_90a, and the smaller bm divides
/// the larger. InvalidArgument naming the rule otherwise.
llvm::Error checkGemmPlan(const GemmPlan &plan, const Arch &arch);

/// `plan` with every bucket on the largest bucket's GEMM configs (source
/// marked), so that no row's arithmetic depends on T (Combine::BatchInvariant).
Plan batchInvariantPlan(Plan plan);

/// Heuristic plan for target `arch` from the expected rows per expert,
/// T*k/E, of each bucket. wgmma configs are chosen only for sm_90a.
Plan heuristicPlan(const MoeShape &shape, const Arch &arch);

} // namespace moejit::runtime
