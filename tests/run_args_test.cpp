// The argument check of KernelSet::run and workspace_bytes, on its own (no
// GPU): token counts past what the kernels index, byte counts and address
// ranges that would overflow, overlaps. Each is refused before any launch.
#include "common/error.h"
#include "runtime/kernel_set.h"
#include "runtime/planner.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>

using namespace moejit;
using namespace moejit::runtime;

namespace {

/// The error's code and text, or a test failure when there is none.
std::pair<ErrorCode, std::string> failure(llvm::Error e) {
  if (!e) {
    ADD_FAILURE() << "accepted";
    return {ErrorCode::Internal, ""};
  }
  ErrorCode code = ErrorCode::Internal;
  std::string text;
  llvm::handleAllErrors(std::move(e), [&](const MoeErrorInfo &info) {
    code = info.code();
    text = info.message();
  });
  return {code, text};
}

void *at(uintptr_t address) { return reinterpret_cast<void *>(address); }

/// Arguments of a plausible call: distinct, aligned, non-overlapping
/// addresses (never dereferenced here).
MoeArgs plausibleArgs(int64_t tokens, size_t workspace_bytes) {
  MoeArgs a;
  a.x = at(0x10000000000);
  a.gate_up_proj = at(0x20000000000);
  a.down_proj = at(0x30000000000);
  a.top_k_index = static_cast<const int32_t *>(at(0x40000000000));
  a.top_k_weights = static_cast<const float *>(at(0x50000000000));
  a.y = at(0x60000000000);
  a.workspace = at(0x70000000000);
  a.tokens = tokens;
  a.workspace_bytes = workspace_bytes;
  return a;
}

} // namespace

TEST(RunArgs, TokenCountsPastTheLimitAreRefusedWithoutOverflow) {
  for (int k : {1, 3, 8}) {
    const MoeShape shape{k, 2048, 768, 128, DType::BF16};
    const Plan plan = heuristicPlan(shape, "sm_90a");
    const int64_t limit = maxTokens(shape);
    EXPECT_EQ(limit, (INT_MAX / 2) / k);
    // 2^61+1 with k=8 wrapped to one token; (2^64+2)/3 with k=3 launched
    // a 1.4-billion-block combine over a two-row workspace.
    for (int64_t tokens : {limit + 1, (int64_t{1} << 61) + 1,
                           static_cast<int64_t>((~uint64_t{0}) / 3 + 1), INT64_MAX}) {
      auto layout = runLayout(shape, plan, Combine::Deterministic, tokens, limit);
      ASSERT_FALSE(static_cast<bool>(layout)) << "k=" << k << " T=" << tokens;
      const auto [code, text] = failure(layout.takeError());
      EXPECT_EQ(code, ErrorCode::InvalidArgument);
      EXPECT_NE(text.find("at most " + std::to_string(limit)), std::string::npos) << text;
    }
  }
}

TEST(RunArgs, LayoutAtTheLimitIsConsistent) {
  const MoeShape shape{8, 2048, 768, 128, DType::BF16};
  const Plan plan = heuristicPlan(shape, "sm_90a");
  auto small = runLayout(shape, plan, Combine::Deterministic, 8192, maxTokens(shape));
  ASSERT_TRUE(static_cast<bool>(small));
  EXPECT_EQ(small->geometry.assignments, 8192 * 8);
  EXPECT_FALSE(static_cast<bool>(
      checkRunArgs(shape, plausibleArgs(8192, small->workspace.total), small->workspace.total)));
  // Up to the token limit every run is laid out, never with a wrapped size.
  // Past one launch's row tiles a run is split into calls of the largest T
  // that one launch holds, which is less than a call of one more token
  // would need; the workspace holds the widest call, the last included.
  int split = 0;
  for (int64_t tokens = 1; tokens <= maxTokens(shape); tokens *= 4) {
    for (Combine mode : {Combine::Deterministic, Combine::Fast}) {
      auto layout = runLayout(shape, plan, mode, tokens, maxTokens(shape));
      ASSERT_TRUE(static_cast<bool>(layout)) << tokens << ": " << errorMessage(layout.takeError());
      const int64_t per_call = layout->call_tokens;
      ASSERT_GT(per_call, 0);
      ASSERT_LE(per_call, tokens);
      EXPECT_EQ(layout->geometry.assignments, per_call * 8);
      EXPECT_GE(layout->workspace_needed, layout->workspace.total);
      if (mode == Combine::Deterministic)
        EXPECT_GE(layout->workspace.total,
                  static_cast<size_t>(per_call) * 8 * (2048 + 768) * 2); // h and partial
      if (per_call == tokens) {
        EXPECT_EQ(layout->workspace_needed, layout->workspace.total);
        continue;
      }
      split += mode == Combine::Deterministic;
      auto one_call = runLayout(shape, plan, mode, per_call, maxTokens(shape));
      ASSERT_TRUE(static_cast<bool>(one_call));
      EXPECT_EQ(one_call->call_tokens, per_call) << "the calls of a split run fit one launch";
      auto one_more = runLayout(shape, plan, mode, per_call + 1, maxTokens(shape));
      ASSERT_TRUE(static_cast<bool>(one_more));
      EXPECT_LT(one_more->call_tokens, per_call + 1) << "the calls are as long as fits";
      if (tokens % per_call != 0) {
        auto last = runLayout(shape, plan, mode, tokens % per_call, maxTokens(shape));
        ASSERT_TRUE(static_cast<bool>(last));
        EXPECT_EQ(last->call_tokens, tokens % per_call);
        EXPECT_GE(layout->workspace_needed, last->workspace.total);
      }
    }
  }
  EXPECT_GT(split, 0); // the row-tile limit comes before maxTokens at k=8
}

// Each scratch array of the workspace gets its own room, in order and
// without overlap: the tile list one 16-byte record per possible tile
// (GEMMs read a record with one 16-byte load: the workspace is 16-byte
// aligned, so the offset must be too), sorted_ids, sorted_weights and
// sorted_rows one entry per assignment.
/// A split run's call over tokens [first, first + count) takes its rows of
/// x, y and the routing, whatever the element sizes, and the rest as given.
TEST(RunArgs, ASplitRunsCallsTakeTheirOwnRows) {
  auto offset = [](const void *p, const void *base) {
    return static_cast<const char *>(p) - static_cast<const char *>(base);
  };
  for (DType dtype : {DType::BF16, DType::FP16, DType::FP32})
    for (IndexType ids : {IndexType::Int32, IndexType::Int64})
      for (WeightType weights : {WeightType::Float32, WeightType::ModelDType}) {
        const MoeShape shape{6, 2048, 768, 64, dtype};
        MoeArgs a = plausibleArgs(5000, 1 << 30);
        a.index_type = ids;
        a.weight_type = weights;
        const int64_t first = 1234, count = 777, elem = dtype_bytes(dtype);
        const MoeArgs c = callArgs(shape, a, first, count);
        EXPECT_EQ(c.tokens, count);
        EXPECT_EQ(offset(c.x, a.x), first * 2048 * elem);
        EXPECT_EQ(offset(c.y, a.y), first * 2048 * elem);
        EXPECT_EQ(offset(c.top_k_index, a.top_k_index),
                  first * 6 * (ids == IndexType::Int64 ? 8 : 4));
        EXPECT_EQ(offset(c.top_k_weights, a.top_k_weights),
                  first * 6 * (weights == WeightType::ModelDType ? elem : 4));
        EXPECT_EQ(c.gate_up_proj, a.gate_up_proj);
        EXPECT_EQ(c.down_proj, a.down_proj);
        EXPECT_EQ(c.workspace, a.workspace);
        EXPECT_EQ(c.workspace_bytes, a.workspace_bytes);
        EXPECT_EQ(c.index_type, ids);
        EXPECT_EQ(c.weight_type, weights);
        const MoeArgs whole = callArgs(shape, a, 0, a.tokens);
        EXPECT_EQ(whole.x, a.x);
        EXPECT_EQ(whole.top_k_index, a.top_k_index);
        EXPECT_EQ(whole.tokens, a.tokens);
      }
}

TEST(RunArgs, WorkspaceArraysHaveTheirRoom) {
  const MoeShape shape{8, 2048, 768, 128, DType::BF16};
  const Plan plan = heuristicPlan(shape, "sm_90a");
  for (Combine mode : {Combine::Deterministic, Combine::Fast, Combine::BatchInvariant})
    for (int64_t tokens : {1, 7, 100, 8192}) {
      auto layout = runLayout(shape, plan, mode, tokens, maxTokens(shape));
      ASSERT_TRUE(static_cast<bool>(layout));
      const WorkspaceLayout &w = layout->workspace;
      const LaunchGeometry &g = layout->geometry;
      EXPECT_EQ(w.tiles % alignof(moejit_abi::TileRecord), 0u) << "T=" << tokens;
      EXPECT_GE(w.num_tiles - w.tiles, sizeof(moejit_abi::TileRecord) * g.max_tiles);
      EXPECT_GE(w.sorted_weights - w.sorted_ids, sizeof(int32_t) * g.assignments);
      EXPECT_GE(w.sorted_rows - w.sorted_weights, sizeof(float) * g.assignments);
      EXPECT_GE(w.h - w.sorted_rows, sizeof(int32_t) * g.assignments);
      EXPECT_LT(w.h, w.partial);
    }
}

// partial's room follows the bucket's GEMM2: rows by assignment [T*k, H],
// or (a staged warp-specialised GEMM2, blocked) whole groups of 64 sorted
// rows of H rounded up to its column tile; the seed shape's plan on sm_90a
// has both kinds of bucket.
TEST(RunArgs, PartialRoomFollowsTheBucketsGemm2) {
  const MoeShape shape{8, 2056, 768, 128, DType::BF16}; // H not a multiple of any bn
  const Plan plan = heuristicPlan(shape, "sm_90a");
  bool blocked_seen = false, plain_seen = false;
  for (Combine mode : {Combine::Deterministic, Combine::BatchInvariant})
    for (int64_t tokens : {1, 7, 100, 3000, 8192}) {
      auto layout = runLayout(shape, plan, mode, tokens, maxTokens(shape));
      ASSERT_TRUE(static_cast<bool>(layout));
      const codegen::TileConfig &gemm2 = plan.buckets[layout->bucket].gemm2;
      const bool blocked = codegen::KernelSpec{codegen::KernelKind::Gemm2, shape, gemm2}.blocksPartial();
      (blocked ? blocked_seen : plain_seen) = true;
      const size_t rows = blocked ? (tokens * 8 + 63) / 64 * 64 : tokens * 8;
      const size_t columns = blocked ? (2056 + gemm2.bn - 1) / gemm2.bn * gemm2.bn : 2056;
      const WorkspaceLayout &w = layout->workspace;
      EXPECT_GE(w.total - w.partial, 2 * rows * columns) << "T=" << tokens << " " << gemm2.suffix();
      EXPECT_LT(w.total - w.partial, 2 * rows * columns + 256) << "T=" << tokens;
    }
  EXPECT_TRUE(blocked_seen);
  EXPECT_TRUE(plain_seen);
}

// Combine::Fast adds GEMM2's rows into y: its workspace holds no [T*k, H]
// partial rows; the other modes' layouts are the deterministic one.
TEST(RunArgs, FastCombineNeedsNoPartialRows) {
  const MoeShape shape{8, 2048, 768, 128, DType::BF16};
  const Plan plan = heuristicPlan(shape, "sm_90a");
  for (int64_t tokens : {1, 100, 8192}) {
    auto det = runLayout(shape, plan, Combine::Deterministic, tokens, maxTokens(shape));
    auto inv = runLayout(shape, plan, Combine::BatchInvariant, tokens, maxTokens(shape));
    auto fast = runLayout(shape, plan, Combine::Fast, tokens, maxTokens(shape));
    ASSERT_TRUE(det && inv && fast);
    const size_t partial = static_cast<size_t>(tokens) * 8 * 2048 * 2;
    EXPECT_EQ(inv->workspace.total, det->workspace.total);
    EXPECT_EQ(fast->workspace.partial, fast->workspace.total) << "T=" << tokens;
    EXPECT_GE(det->workspace.total - fast->workspace.total, partial) << "T=" << tokens;
    EXPECT_EQ(fast->workspace.h, det->workspace.h);
  }
}

// Chained launches (programmatic dependent launch) for the fixed kernels
// and the persistent GEMMs only: a GEMM of one tile per block launched
// early crowds onto the SMs that free first.
TEST(RunArgs, OnlyFixedKernelsAndPersistentGemmsLaunchChained) {
  using codegen::KernelKind;
  const MoeShape shape{8, 2048, 768, 128, DType::BF16};
  for (KernelKind k : {KernelKind::RouteBlock, KernelKind::RouteWide, KernelKind::RouteCount,
                       KernelKind::RouteScan, KernelKind::RouteScatter, KernelKind::Combine})
    EXPECT_TRUE(launchesChained({k, shape, {}})) << codegen::kindName(k);
  for (KernelKind k : {KernelKind::Gemm1, KernelKind::Gemm2}) {
    EXPECT_TRUE(launchesChained({k, shape, codegen::wsTile(128, 4)}));
    EXPECT_FALSE(launchesChained({k, shape, codegen::TileConfig{16, 64, 3, 1, 4}}));
    EXPECT_FALSE(launchesChained({k, shape, codegen::TileConfig{}})); // wgmma / mma default
    MoeShape fp32 = shape;
    fp32.dtype = DType::FP32;
    EXPECT_FALSE(launchesChained({k, fp32, codegen::wsTile(128, 4)})); // SIMT whatever the tile
  }
}

TEST(RunArgs, ByteCountsAndRangesAreOverflowChecked) {
  const MoeShape shape{8, 65536, 65536, 4096, DType::FP32};
  // gate_up_proj alone is 4096 * 2 * 65536 * 65536 * 4 bytes = 2^47: it
  // fits; at the top of the address space it does not.
  MoeArgs a = plausibleArgs(1, 1 << 20);
  a.gate_up_proj = at(UINTPTR_MAX - 15);
  auto [code, text] = failure(checkRunArgs(shape, a, 0));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_NE(text.find("gate_up_proj"), std::string::npos) << text;
  EXPECT_NE(text.find("address space"), std::string::npos) << text;
  // A token count whose x would need more than 2^64 bytes.
  a = plausibleArgs(INT64_MAX / 2, 1 << 20);
  std::tie(code, text) = failure(checkRunArgs(shape, a, 0));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_NE(text.find("x at"), std::string::npos) << text;
  // A workspace that claims to run to the end of memory.
  a = plausibleArgs(1, SIZE_MAX);
  std::tie(code, text) = failure(checkRunArgs(shape, a, 0));
  EXPECT_NE(text.find("workspace"), std::string::npos) << text;
}

TEST(RunArgs, NullMisalignedOverlappingAndSmallWorkspace) {
  const MoeShape shape{2, 256, 128, 8, DType::BF16};
  MoeArgs a = plausibleArgs(16, 4096);
  a.down_proj = nullptr;
  EXPECT_NE(failure(checkRunArgs(shape, a, 0)).second.find("down_proj is null"), std::string::npos);
  a = plausibleArgs(16, 4096);
  a.x = at(0x10000000008);
  EXPECT_NE(failure(checkRunArgs(shape, a, 0)).second.find("x is not 16-byte aligned"),
            std::string::npos);
  a = plausibleArgs(16, 4096);
  a.y = at(reinterpret_cast<uintptr_t>(a.workspace) + 4096 - 16);
  EXPECT_NE(failure(checkRunArgs(shape, a, 0)).second.find("y overlaps workspace"),
            std::string::npos);
  a = plausibleArgs(16, 4096);
  a.y = at(reinterpret_cast<uintptr_t>(a.workspace) + 4096); // just past it: fine
  EXPECT_FALSE(static_cast<bool>(checkRunArgs(shape, a, 4096)));
  const auto [code, text] = failure(checkRunArgs(shape, a, 4097));
  EXPECT_EQ(code, ErrorCode::WorkspaceTooSmall) << text;
}

/// The workspace, which the kernels write, overlaps no input (they would
/// overwrite ids, weights or x while others still read them); inputs may
/// share memory with each other, being only read.
TEST(RunArgs, TheWorkspaceOverlapsNoInput) {
  const MoeShape shape{2, 256, 128, 8, DType::BF16};
  const uintptr_t ids = 0x40000000000, ids_bytes = 16 * 2 * 4;
  MoeArgs a = plausibleArgs(16, 4096);
  a.workspace = at(ids + ids_bytes - 16); // its first 16 bytes are the last ids
  auto [code, text] = failure(checkRunArgs(shape, a, 4096));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_NE(text.find("workspace overlaps top_k_index"), std::string::npos) << text;
  a.workspace = at(ids + ids_bytes); // just past them: fine
  EXPECT_FALSE(static_cast<bool>(checkRunArgs(shape, a, 4096)));
  a = plausibleArgs(16, 4096);
  a.expert_map = static_cast<const int32_t *>(at(0x70000000000 + 1024)); // inside the workspace
  a.expert_map_size = 8;
  std::tie(code, text) = failure(checkRunArgs(shape, a, 4096));
  EXPECT_NE(text.find("workspace overlaps expert_map"), std::string::npos) << text;
  a = plausibleArgs(16, 4096);
  a.workspace = const_cast<void *>(a.gate_up_proj);
  std::tie(code, text) = failure(checkRunArgs(shape, a, 4096));
  EXPECT_NE(text.find("workspace overlaps gate_up_proj"), std::string::npos) << text;
  // Inputs sharing memory (weights and ids in one pool, say) are fine.
  a = plausibleArgs(16, 4096);
  a.top_k_weights = static_cast<const float *>(a.top_k_index);
  EXPECT_FALSE(static_cast<bool>(checkRunArgs(shape, a, 4096)));
}

TEST(RunArgs, ServingRuntimeArguments) {
  const MoeShape shape{2, 256, 128, 8, DType::BF16};
  MoeArgs a = plausibleArgs(16, 4096);
  a.y = const_cast<void *>(a.x); // in place
  EXPECT_FALSE(static_cast<bool>(checkRunArgs(shape, a, 4096)));
  a.y = static_cast<char *>(const_cast<void *>(a.x)) + 16;
  EXPECT_NE(failure(checkRunArgs(shape, a, 0)).second.find("only y == x exactly"),
            std::string::npos);
  // In place exempts x alone: an input that starts at x's address too is
  // still one y would overwrite.
  for (const char *input : {"gate_up_proj", "down_proj", "top_k_index", "top_k_weights",
                            "expert_map"}) {
    a = plausibleArgs(16, 4096);
    a.y = const_cast<void *>(a.x);
    const std::string which = input;
    if (which == "gate_up_proj")
      a.gate_up_proj = a.x;
    else if (which == "down_proj")
      a.down_proj = a.x;
    else if (which == "top_k_index")
      a.top_k_index = a.x;
    else if (which == "top_k_weights")
      a.top_k_weights = a.x;
    else {
      a.expert_map = static_cast<const int32_t *>(a.x);
      a.expert_map_size = 8;
    }
    EXPECT_NE(failure(checkRunArgs(shape, a, 4096)).second.find("y overlaps " + which),
              std::string::npos)
        << which;
  }
  a = plausibleArgs(16, 4096);
  a.index_type = IndexType::Int64;
  a.top_k_index = at(0x40000000004); // 4-byte aligned, not 8
  EXPECT_NE(failure(checkRunArgs(shape, a, 0)).second.find("top_k_index is not 8-byte aligned"),
            std::string::npos);
  a = plausibleArgs(16, 4096);
  a.weight_type = WeightType::ModelDType;
  a.top_k_weights = at(0x50000000002); // bf16 weights need 2-byte alignment only
  EXPECT_FALSE(static_cast<bool>(checkRunArgs(shape, a, 4096)));
  a = plausibleArgs(16, 4096);
  a.expert_map = static_cast<const int32_t *>(at(0x80000000000));
  EXPECT_NE(failure(checkRunArgs(shape, a, 0)).second.find("given together"), std::string::npos);
  a.expert_map_size = 16;
  EXPECT_FALSE(static_cast<bool>(checkRunArgs(shape, a, 4096)));
  a.expert_map_size = int64_t{1} << 40;
  EXPECT_NE(failure(checkRunArgs(shape, a, 0)).second.find("expert_map"), std::string::npos);
  a = plausibleArgs(16, 4096);
  a.expert_map = static_cast<const int32_t *>(at(0x60000000000)); // y's address
  a.expert_map_size = 16;
  EXPECT_NE(failure(checkRunArgs(shape, a, 0)).second.find("y overlaps expert_map"),
            std::string::npos);
  a = plausibleArgs(16, 4096);
  a.weight_type = static_cast<WeightType>(3);
  EXPECT_NE(failure(checkRunArgs(shape, a, 0)).second.find("weight_type"), std::string::npos);
}
