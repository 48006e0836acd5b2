#include "api/warm.h"
#include "common/arch.h"
#include "runtime/builder.h"
#include "runtime/planner.h"
#include "runtime/program_groups.h"

#include <gtest/gtest.h>
#include <llvm/ADT/STLExtras.h>

#include <algorithm>
#include <set>

using namespace moejit;
using namespace moejit::runtime;
using codegen::KernelKind;
using codegen::KernelSpec;

namespace {
const MoeShape kSeed{8, 2048, 768, 128, DType::BF16};

/// The seed shape's kernels on sm_90a under the heuristic's plan (its H200
/// table, the same plan in every bucket, was removed in session 46): 64-
/// and 32-row swap-AB tiles and a persistent GEMM pair; with `bn192`, the
/// second persistent GEMM2 the H200 table held before session 42.
std::vector<KernelSpec> seedKernels(bool bn192 = false) {
  std::vector<KernelSpec> specs = fixedSpecs(kSeed);
  for (const auto &[kind, tile] :
       {std::pair{KernelKind::Gemm1, codegen::wsTile(128, 4, true)},
        std::pair{KernelKind::Gemm2, codegen::wsTile(256, 3, true)},
        std::pair{KernelKind::Gemm1, codegen::swapTile(32, 9, codegen::GemmKind::Gemm1)},
        std::pair{KernelKind::Gemm2, codegen::swapTile(32, 9, codegen::GemmKind::Gemm2)},
        std::pair{KernelKind::Gemm1, codegen::swapTile(64, 7, codegen::GemmKind::Gemm1)},
        std::pair{KernelKind::Gemm2, codegen::swapTile(64, 7, codegen::GemmKind::Gemm2)}})
    specs.push_back({kind, kSeed, tile});
  if (bn192)
    specs.push_back({KernelKind::Gemm2, kSeed, codegen::wsTile(192, 4, true)});
  return specs;
}

/// Every index once, one family per program, the longest first.
void expectAPartition(const std::vector<KernelSpec> &specs,
                      const std::vector<std::vector<size_t>> &programs) {
  std::multiset<size_t> seen;
  double last = 1e30;
  for (const std::vector<size_t> &p : programs) {
    ASSERT_FALSE(p.empty());
    double ms = 0;
    for (size_t i : p) {
      ASSERT_LT(i, specs.size());
      seen.insert(i);
      EXPECT_EQ(codegen::programFamily(specs[i]), codegen::programFamily(specs[p.front()]))
          << specs[i].name() << " with " << specs[p.front()].name();
      ms += estimatedCompileMs(specs[i]) - kProgramFixedMs;
    }
    EXPECT_LE(ms, last) << "programs longest first";
    last = ms;
  }
  ASSERT_EQ(seen.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i)
    EXPECT_EQ(seen.count(i), 1u) << specs[i].name();
}
} // namespace

TEST(ProgramGroups, FamiliesSplitByDynamicSharedMemoryAndOptions) {
  const std::vector<KernelSpec> specs = seedKernels();
  // Routing (count, block, wide): its own family, compiled at min.
  const std::string routing = codegen::programFamily(specs[0]);
  for (size_t i = 1; i < 3; ++i)
    EXPECT_EQ(codegen::programFamily(specs[i]), routing) << specs[i].name();
  EXPECT_EQ(codegen::familyOptions(specs[0]), std::vector<std::string>{"--Ofast-compile=min"});
  // The combine declares no dynamic shared memory either, but compiles at
  // -O3 like every other kernel.
  ASSERT_EQ(specs[3].kind, KernelKind::Combine);
  EXPECT_NE(codegen::programFamily(specs[3]), routing);
  EXPECT_TRUE(codegen::familyOptions(specs[3]).empty());
  EXPECT_NE(codegen::programFamily(specs[4]), routing);
  EXPECT_EQ(codegen::programFamily(specs[4]), codegen::programFamily(specs[5]));
  EXPECT_NE(codegen::programFamily(specs[4]), codegen::programFamily(specs[6]));
  EXPECT_EQ(codegen::programFamily(specs[6]), codegen::programFamily(specs[9]));
  for (size_t i = 4; i < specs.size(); ++i)
    EXPECT_TRUE(codegen::familyOptions(specs[i]).empty()) << specs[i].name();
}

// What `warm --arch sm_90a` compiles for the seed shape (the heuristic's
// plan beside every shipped table) is the ten kernels above: the issue's
// cold get (under 1 s on two cores) has no room for more, and a heuristic
// rule that reached the seed shape (session 45: the 256-row swap-AB pair)
// took it to twelve, 3.6 s.
TEST(ProgramGroups, TheSeedShapesColdGetIsTheTenKernels) {
  std::set<std::string> warmed, expected;
  for (const KernelSpec &s :
       kernelSpecs(kSeed, api::plansToWarm(kSeed, Arch("sm_90a"), "", ""), Combine::Deterministic))
    warmed.insert(s.name());
  for (const KernelSpec &s : seedKernels())
    expected.insert(s.name());
  EXPECT_EQ(warmed, expected);
}

TEST(ProgramGroups, OnTwoCoresTheSeedKernelsCompileAsFivePrograms) {
  for (bool bn192 : {false, true}) {
    const std::vector<KernelSpec> specs = seedKernels(bn192);
    ASSERT_EQ(specs.size(), bn192 ? 11u : 10u);
    const auto programs = groupIntoPrograms(specs, 2);
    expectAPartition(specs, programs);
    // Routing, the combine, the four swap-AB kernels, the persistent GEMM1,
    // the persistent GEMM2s. Split finer, the ten kernels took 0.1 s more
    // CPU (seven programs: each costs ~60 ms of NVRTC of its own) for no
    // shorter wall (NOTES.md, session 42).
    ASSERT_EQ(programs.size(), 5u) << (bn192 ? "with" : "without") << " bn192";
    auto has = [&](std::vector<size_t> members) {
      return llvm::count_if(programs, [&](std::vector<size_t> p) {
               std::sort(p.begin(), p.end());
               return p == members;
             }) == 1;
    };
    EXPECT_TRUE(has({0, 1, 2})) << "routing";
    EXPECT_TRUE(has({3})) << "combine";
    EXPECT_TRUE(has({6, 7, 8, 9})) << "swap-AB";
    EXPECT_TRUE(has({4})) << "persistent GEMM1";
    EXPECT_TRUE(has(bn192 ? std::vector<size_t>{5, 10} : std::vector<size_t>{5}))
        << "persistent GEMM2s";
  }
}

/// Grouping never makes the estimated wall time longer than one kernel per
/// program, for the seed shape and for deepseek-v2-lite's set, whose two
/// 256-row swap-AB kernels take ~1 s of NVRTC each (together in one
/// program, they kept the other thread idle: 3.0 s against 2.3).
TEST(ProgramGroups, GroupingNeverLengthensTheEstimatedWall) {
  const MoeShape deepseek{6, 2048, 1408, 64, DType::BF16};
  std::vector<KernelSpec> dear = fixedSpecs(deepseek);
  for (int bm : {32, 64, 128, 256})
    for (auto kind : {codegen::GemmKind::Gemm1, codegen::GemmKind::Gemm2})
      dear.push_back({kind == codegen::GemmKind::Gemm1 ? KernelKind::Gemm1 : KernelKind::Gemm2,
                      deepseek, codegen::swapTile(bm, bm == 256 ? 4 : 7, kind)});
  for (const std::vector<KernelSpec> &specs : {seedKernels(), seedKernels(true), dear})
    for (unsigned workers : {1u, 2u, 3u, 4u, 8u}) {
      std::vector<std::vector<size_t>> alone;
      for (size_t i = 0; i < specs.size(); ++i)
        alone.push_back({i});
      const auto programs = groupIntoPrograms(specs, workers);
      expectAPartition(specs, programs);
      EXPECT_LE(estimatedFinishMs(specs, programs, workers),
                estimatedFinishMs(specs, alone, workers))
          << specs.size() << " kernels, " << workers << " workers";
    }
}

TEST(ProgramGroups, WithACorePerTwoKernelsEachKernelIsAlone) {
  const std::vector<KernelSpec> specs = seedKernels();
  for (unsigned workers : {6u, 16u}) {
    const auto programs = groupIntoPrograms(specs, workers);
    expectAPartition(specs, programs);
    EXPECT_EQ(programs.size(), specs.size()) << workers << " workers";
  }
}

TEST(ProgramGroups, OnOneCoreEachFamilyIsOneProgram) {
  const std::vector<KernelSpec> specs = seedKernels();
  for (unsigned workers : {0u, 1u}) {
    const auto programs = groupIntoPrograms(specs, workers);
    expectAPartition(specs, programs);
    EXPECT_EQ(programs.size(), 4u) << "routing, combine, persistent GEMMs, swap-AB GEMMs";
  }
  EXPECT_TRUE(groupIntoPrograms({}, 2).empty());
}
