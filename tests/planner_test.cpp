#include "common/arch.h"
#include "common/error.h"
#include "runtime/kernel_set.h"
#include "runtime/launch_sequence.h"
#include "runtime/planner.h"
#include "workload/shape.h"

#include <gtest/gtest.h>

using namespace moejit;
using namespace moejit::runtime;

TEST(Planner, BucketsArePowersOfTwo) {
  EXPECT_EQ(bucketOf(1), 0);
  EXPECT_EQ(bucketOf(2), 1);
  EXPECT_EQ(bucketOf(3), 2);
  EXPECT_EQ(bucketOf(128), 7);
  EXPECT_EQ(bucketOf(129), 8);
  EXPECT_EQ(bucketOf(65536), 16);
  EXPECT_EQ(bucketOf(1 << 20), kBucketCount - 1);
}

TEST(Planner, HeuristicConfigsAreValidAndGrowWithTokens) {
  const MoeShape seed{8, 2048, 768, 128, DType::BF16};
  const Plan plan = heuristicPlan(seed, "sm_80");
  ASSERT_EQ(plan.buckets.size(), size_t(kBucketCount));
  int last_bm = 0;
  for (const GemmPlan &g : plan.buckets) {
    EXPECT_FALSE(static_cast<bool>(codegen::checkMmaConfig(g.gemm1, codegen::GemmKind::Gemm1)));
    EXPECT_FALSE(static_cast<bool>(codegen::checkMmaConfig(g.gemm2, codegen::GemmKind::Gemm2)));
    EXPECT_EQ(std::max(g.gemm1.bm, g.gemm2.bm) % std::min(g.gemm1.bm, g.gemm2.bm), 0);
    EXPECT_GE(g.gemm1.bm, last_bm);
    last_bm = g.gemm1.bm;
  }
  EXPECT_EQ(plan.buckets[bucketOf(128)].gemm1.bm, 16);   // 8 rows per expert
  EXPECT_EQ(plan.buckets[bucketOf(8192)].gemm1.bm, 128); // 512 rows per expert
}

TEST(Planner, WorkspaceCoversWorstRouting) {
  const MoeShape s{8, 2048, 768, 128, DType::BF16};
  const LaunchGeometry g = launchGeometry(s, 1000, 64);
  EXPECT_EQ(g.assignments, 8000);
  EXPECT_EQ(g.route_blocks, 8);
  EXPECT_EQ(g.max_tiles, 8000 / 64 + 128);
  const WorkspaceLayout w = workspaceLayout(s, g);
  EXPECT_GE(w.total - w.partial, size_t(8000) * 2048 * 2);
  EXPECT_GE(w.partial - w.h, size_t(8000) * 768 * 2);
  EXPECT_EQ(w.block_counts % 256, 0u);
  EXPECT_EQ(w.h % 256, 0u);
}

// The combine and the persistent GEMM2 read what the routing wrote before
// they wait for the kernel before them: that kernel is GEMM1, never the
// routing.
TEST(Planner, OnlyGemm1FollowsTheRouting) {
  EXPECT_TRUE(stagesChainSafely(kAllStages));
  EXPECT_TRUE(stagesChainSafely(kRouting));
  EXPECT_TRUE(stagesChainSafely(kRouting | kGemm1));
  EXPECT_TRUE(stagesChainSafely(kRouting | kGemm1 | kCombine));
  EXPECT_TRUE(stagesChainSafely(kGemm2 | kCombine));
  EXPECT_TRUE(stagesChainSafely(kGemm2));
  EXPECT_TRUE(stagesChainSafely(kCombine));
  EXPECT_FALSE(stagesChainSafely(kRouting | kGemm2));
  EXPECT_FALSE(stagesChainSafely(kRouting | kCombine));
  EXPECT_FALSE(stagesChainSafely(kRouting | kGemm2 | kCombine));
}

// GEMM1 keeps the x rows in L2 while x takes at most a third of it: on a
// 50 MiB L2 (H100, H200) through T=4096 at hidden 2048 (16 MiB of bf16),
// not at T=4096 and hidden 4096 (32 MiB); a third exactly, not a byte
// more; never with no L2 known.
TEST(Planner, Gemm1KeepsXInL2OnlyWhileXIsAThirdOfItAtMost) {
  const int64_t l2 = 50ll << 20;
  EXPECT_TRUE(keepsXInL2(4096ll * 2048 * 2, l2));
  EXPECT_TRUE(keepsXInL2(2048ll * 4096 * 2, l2));
  EXPECT_FALSE(keepsXInL2(4096ll * 4096 * 2, l2));
  EXPECT_FALSE(keepsXInL2(8192ll * 2048 * 2, l2));
  EXPECT_TRUE(keepsXInL2(16ll << 20, 48ll << 20));
  EXPECT_FALSE(keepsXInL2((16ll << 20) + 1, 48ll << 20));
  EXPECT_FALSE(keepsXInL2(1, 0));
  EXPECT_FALSE(keepsXInL2(0, 0));
}

TEST(Planner, HopperUsesWgmmaOnlyForSm90a) {
  const MoeShape seed{8, 2048, 768, 128, DType::BF16};
  const Plan hopper = heuristicPlan(seed, "sm_90a");
  const Plan ampere = heuristicPlan(seed, "sm_80");
  EXPECT_TRUE(hopper.buckets[bucketOf(8192)].gemm1.wgmma);
  EXPECT_TRUE(hopper.buckets[bucketOf(8192)].gemm2.wgmma);
  // Few rows per expert: swap-AB weight streams on sm_90a (a wgmma kernel).
  EXPECT_TRUE(hopper.buckets[bucketOf(128)].gemm1.swap);
  EXPECT_TRUE(hopper.buckets[bucketOf(128)].gemm2.swap);
  EXPECT_FALSE(hopper.buckets[bucketOf(8192)].gemm1.swap);
  for (const GemmPlan &g : ampere.buckets)
    EXPECT_FALSE(g.gemm1.wgmma || g.gemm2.wgmma || g.gemm1.swap || g.gemm2.swap);
  for (const GemmPlan &g : hopper.buckets) {
    EXPECT_FALSE(static_cast<bool>(codegen::checkMmaConfig(g.gemm1, codegen::GemmKind::Gemm1)));
    EXPECT_FALSE(static_cast<bool>(codegen::checkMmaConfig(g.gemm2, codegen::GemmKind::Gemm2)));
  }
}

// The 256-row swap-AB pair runs the buckets of 97-192 rows per expert,
// where its weight tiles pad neither I (64 columns) nor H (128), its GEMM1
// tiles (E * I/64) fill about two waves of SMs, and the experts are few or
// their weights large: the tables' and the sweep's winners there (mixtral,
// deepseek-v2-lite, the seed shape at E=32 and 64, DeepSeek-V3-like, k2
// H4096 I1536 E16); not the seed shape at E=16 (192 tiles) or at E=128
// (its cold get), not Qwen3-Next-like (E=512, small weights), not
// H=I=2880, not at 64, 80, 96 or 256 rows.
TEST(Planner, HopperRunsTheSwap256PairWhereItWon) {
  struct Case {
    MoeShape shape;
    int64_t tokens;
    bool swap256;
  };
  const MoeShape seed{8, 2048, 768, 128, DType::BF16}, seed16{8, 2048, 768, 16, DType::BF16},
      seed32{8, 2048, 768, 32, DType::BF16}, seed64{8, 2048, 768, 64, DType::BF16},
      mixtral{2, 4096, 14336, 8, DType::BF16}, deepseek{6, 2048, 1408, 64, DType::BF16},
      v3like{8, 7168, 2048, 256, DType::BF16}, next{10, 2048, 512, 512, DType::BF16},
      k2e16{2, 4096, 1536, 16, DType::BF16}, odd{4, 2880, 2880, 128, DType::BF16};
  const Case cases[] = {
      {mixtral, 512, true},  {deepseek, 2048, true}, {deepseek, 1024, false}, {v3like, 4096, true},
      {v3like, 8192, false}, {k2e16, 1024, true},    {k2e16, 512, false},     {seed32, 512, true},
      {seed64, 1024, true},  {seed16, 256, false},   {seed, 2048, false},     {seed, 1024, false},
      {next, 8192, false},   {next, 4096, false},    {odd, 4096, false}};
  for (const Case &c : cases) {
    const GemmPlan g = heuristicPlan(c.shape, "sm_90a").buckets[bucketOf(c.tokens)];
    const bool swap256 = g.gemm1.swap && g.gemm1.bm == 256 && g.gemm2.swap && g.gemm2.bm == 256;
    EXPECT_EQ(swap256, c.swap256) << workload::canonicalText(c.shape) << " T=" << c.tokens << ": "
                                  << g.gemm1.suffix() << " : " << g.gemm2.suffix();
    if (swap256) {
      EXPECT_EQ(g.gemm1.suffix(), "bm256_bn64_s4_swap");
      EXPECT_EQ(g.gemm2.suffix(), "bm256_bn128_s4_swap");
    }
  }
}

TEST(Planner, HopperGemm2TileIsTheWidthThatPadsHiddenLeast) {
  // 256 columns where 256 divides H (every shipped shape) or pads it least;
  // 192 (four stages) where 192 pads less (H=2880: 15 tiles of 192 against
  // 12 of 256, the last a quarter full); a narrow H keeps a tile that covers
  // it. Checked where the persistent kernels run (512 rows per expert).
  const std::pair<int, int> cases[] = {{2048, 256}, {4096, 256}, {7168, 256}, {2880, 192},
                                       {1000, 256}, {3000, 256}, {1152, 192}, {200, 256},
                                       {128, 128}};
  for (const auto &[hidden, bn] : cases) {
    const MoeShape shape{8, hidden, 768, 16, DType::BF16};
    const Plan plan = heuristicPlan(shape, "sm_90a");
    const GemmPlan &g = plan.buckets[bucketOf(1024)];
    ASSERT_TRUE(g.gemm2.ws) << "H=" << hidden;
    EXPECT_EQ(g.gemm2.bn, bn) << "H=" << hidden;
    EXPECT_EQ(g.gemm2.stages, bn == 192 ? 4 : 3) << "H=" << hidden;
    EXPECT_FALSE(static_cast<bool>(codegen::checkMmaConfig(g.gemm2, codegen::GemmKind::Gemm2)))
        << "H=" << hidden;
  }
}

TEST(Arch, ParsesOnceIntoTheFactsThePlannerAsks) {
  for (const char *good : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_1200"}) {
    auto arch = Arch::parse(good);
    ASSERT_TRUE(static_cast<bool>(arch)) << good << ": " << errorMessage(arch.takeError());
    EXPECT_EQ(arch->name(), good);
  }
  EXPECT_EQ(Arch("sm_86").number(), 86);
  EXPECT_TRUE(Arch("sm_90a").hasWgmma());
  EXPECT_FALSE(Arch("sm_90").hasWgmma()) << "wgmma needs sm_90a's architecture-specific features";
  EXPECT_FALSE(Arch("sm_80").hasWgmma());
  for (const char *bad : {"", "sm_", "sm_80a", "sm_75", "sm_090", "sm_9O", "SM_90", "sm_12345",
                          "sm_90aa", "compute_90", "sm_-90", "sm_90 "}) {
    auto arch = Arch::parse(bad);
    ASSERT_FALSE(static_cast<bool>(arch)) << "'" << bad << "' parsed";
    EXPECT_NE(errorMessage(arch.takeError()).find("unsupported target"), std::string::npos);
  }
  EXPECT_THROW(Arch("sm_70"), Error);
}
