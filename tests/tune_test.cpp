// Autotuner pieces that need no GPU: candidate generation and pruning, and
// the no-compile mode of the builder.
#include "codegen/generate.h"
#include "api/warm.h"
#include "common/error.h"
#include "runtime/arch_tiles.h"
#include "runtime/builder.h"
#include "runtime/planner.h"
#include "tune/autotune.h"
#include "tune/candidates.h"
#include "workload/shape.h"

#include "common/log.h"
#include "testkit.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <sstream>

using namespace moejit;
using codegen::GemmKind;
using codegen::TileConfig;

namespace {

const MoeShape kSeed{8, 2048, 768, 128, DType::BF16};
const MoeShape kSmall{2, 256, 128, 8, DType::BF16};

bool contains(const std::vector<TileConfig> &list, const TileConfig &c) {
  return std::find(list.begin(), list.end(), c) != list.end();
}

TEST(Candidates, AllFollowTheTileRulesAndIncludeTheHeuristic) {
  for (const char *arch : {"sm_80", "sm_90a"})
    for (GemmKind kind : {GemmKind::Gemm1, GemmKind::Gemm2}) {
      const auto list = tune::gemmCandidates(kSeed, arch, kind);
      ASSERT_GT(list.size(), 8u) << arch;
      for (const TileConfig &c : list) {
        llvm::Error e = codegen::checkMmaConfig(c, kind);
        EXPECT_FALSE(e) << arch << " " << c.suffix() << ": " << errorMessage(std::move(e));
        if (std::string(arch) != "sm_90a")
          EXPECT_FALSE(c.wgmma) << c.suffix();
      }
      for (const runtime::GemmPlan &g : runtime::heuristicPlan(kSeed, arch).buckets)
        EXPECT_TRUE(contains(list, kind == GemmKind::Gemm1 ? g.gemm1 : g.gemm2));
      // No duplicates: each is compiled once.
      for (size_t i = 0; i < list.size(); ++i)
        for (size_t j = i + 1; j < list.size(); ++j)
          EXPECT_FALSE(list[i] == list[j]) << list[i].suffix();
    }
}

TEST(Candidates, ExploreEveryKnobOnHopper) {
  const auto list = tune::gemmCandidates(kSeed, "sm_90a", GemmKind::Gemm2);
  std::set<int> bms, bns, stages, inflight, ws_bns, swap_bms;
  bool mma = false;
  for (const TileConfig &c : list) {
    if (!c.wgmma) {
      mma = true;
      continue;
    }
    if (c.swap) { // swap-AB: 128 weight rows (GEMM2: 128 columns), bm token rows
      EXPECT_EQ(c.bn, 128);
      swap_bms.insert(c.bm);
      continue;
    }
    if (c.ws) { // persistent warp-specialised: bm 128, stages by shared memory
      EXPECT_EQ(c.bm, 128);
      ws_bns.insert(c.bn);
      continue;
    }
    bms.insert(c.bm);
    bns.insert(c.bn);
    stages.insert(c.stages);
    inflight.insert(c.inflight);
  }
  EXPECT_TRUE(mma);
  EXPECT_EQ(bms, (std::set<int>{64, 128, 192, 256}));
  EXPECT_GE(bns.size(), 3u);
  EXPECT_EQ(stages, (std::set<int>{3, 4}));
  EXPECT_EQ(inflight, (std::set<int>{0, 1}));
  EXPECT_EQ(ws_bns, (std::set<int>{64, 128, 192, 256}));
  EXPECT_EQ(swap_bms, (std::set<int>{32, 64, 128, 256}));
}

TEST(Candidates, Gemm1SwapAbTilesReach256TokenRows) {
  // GEMM1's gather keeps 32-bit tokens, so 256-row swap-AB tiles fit its
  // producer's registers; each is a candidate once experts fill half of it.
  std::set<int> swap_bms;
  for (const TileConfig &c : tune::gemmCandidates(kSeed, "sm_90a", GemmKind::Gemm1))
    if (c.swap) {
      EXPECT_EQ(c.bn, 64); // 128 weight rows: gate and up of 64 h columns
      swap_bms.insert(c.bm);
    }
  EXPECT_EQ(swap_bms, (std::set<int>{32, 64, 128, 256}));
  const TileConfig swap256 = codegen::swapTile(256, 4, GemmKind::Gemm1);
  EXPECT_FALSE(runtime::worthTiming(swap256, 100, "sm_90a"));
  EXPECT_TRUE(runtime::worthTiming(swap256, 192, "sm_90a"));
}

TEST(Candidates, NarrowOutputsDropWideTiles) {
  const MoeShape narrow{2, 256, 64, 8, DType::BF16};
  for (const TileConfig &c : tune::gemmCandidates(narrow, "sm_90a", GemmKind::Gemm1))
    EXPECT_LT(c.bn - narrow.intermediate, 64) << c.suffix();
}

TEST(Candidates, Fp32HasOnlyItsFixedTile) {
  const MoeShape fp32{2, 256, 128, 8, DType::FP32};
  const auto list = tune::gemmCandidates(fp32, "sm_90a", GemmKind::Gemm1);
  std::set<std::string> names;
  for (const TileConfig &c : list)
    names.insert(codegen::KernelSpec{codegen::KernelKind::Gemm1, fp32, c}.name());
  EXPECT_EQ(names.size(), 1u); // the SIMT kernel ignores the tile
}

TEST(Candidates, TimingIsPrunedByRowsPerExpert) {
  const TileConfig mma16{16, 64, 4, 1, 4}, wg64{64, 64, 4, 0, 0, true, 0},
      wg192{192, 96, 4, 0, 0, true, 1};
  EXPECT_TRUE(runtime::worthTiming(mma16, 2, "sm_90a"));
  EXPECT_FALSE(runtime::worthTiming(mma16, 512, "sm_90a"));
  EXPECT_TRUE(runtime::worthTiming(wg64, 2, "sm_90a"));
  EXPECT_FALSE(runtime::worthTiming(wg64, 4096, "sm_90a"));
  EXPECT_FALSE(runtime::worthTiming(wg192, 8, "sm_90a"));
  EXPECT_TRUE(runtime::worthTiming(wg192, 512, "sm_90a"));
  EXPECT_TRUE(runtime::worthTiming(TileConfig{128, 64, 3, 2, 2}, 512, "sm_80"));
  const TileConfig swap32 = codegen::swapTile(32, 10, GemmKind::Gemm2),
                   swap256 = codegen::swapTile(256, 4, GemmKind::Gemm2);
  EXPECT_TRUE(runtime::worthTiming(swap32, 2, "sm_90a"));
  EXPECT_FALSE(runtime::worthTiming(swap256, 8, "sm_90a"));
  EXPECT_TRUE(runtime::worthTiming(swap256, 200, "sm_90a"));
  EXPECT_FALSE(runtime::worthTiming(swap32, 2048, "sm_90a"));
}

TEST(NoCompile, MissIsATypedErrorNamingWorkloadKernelAndKey) {
  testkit::TempDir dir("moejit-tune-test");
  const std::string root = dir.path;
  store::CubinStore store(root);
  const std::vector<codegen::KernelSpec> specs = {{codegen::KernelKind::RouteCount, kSmall, {}},
                                                  {codegen::KernelKind::Combine, kSmall, {}}};
  runtime::BuildOptions no_compile;
  no_compile.no_compile = true;
  auto missed = runtime::buildKernels(specs, "sm_80", store, no_compile);
  ASSERT_FALSE(missed);
  ErrorCode code = ErrorCode::Internal;
  std::string message;
  llvm::handleAllErrors(missed.takeError(), [&](const MoeErrorInfo &e) {
    code = e.code();
    message = e.message();
  });
  EXPECT_EQ(code, ErrorCode::CacheMiss);
  EXPECT_NE(message.find(workload::workloadId(kSmall)), std::string::npos) << message;
  const std::string key0 = runtime::entryKey(specs[0], codegen::generateSource(specs[0]), "sm_80");
  const std::string key1 = runtime::entryKey(specs[1], codegen::generateSource(specs[1]), "sm_80");
  const bool names_one = (message.find(specs[0].name()) != std::string::npos &&
                          message.find(key0) != std::string::npos) ||
                         (message.find(specs[1].name()) != std::string::npos &&
                          message.find(key1) != std::string::npos);
  EXPECT_TRUE(names_one) << message;
  EXPECT_EQ(store.compiles(), 0u);

  // Once warmed, no-compile mode loads everything and compiles nothing.
  ASSERT_TRUE(static_cast<bool>(runtime::buildKernels(specs, "sm_80", store)));
  EXPECT_EQ(store.compiles(), 2u);
  store::CubinStore again(root);
  auto hit = runtime::buildKernels(specs, "sm_80", again, no_compile);
  ASSERT_TRUE(static_cast<bool>(hit)) << errorMessage(hit.takeError());
  EXPECT_EQ(again.compiles(), 0u);
  EXPECT_EQ(again.hits(), 2u);
}

TEST(BuildEach, FailuresAreRecordedPerSpec) {
  testkit::TempDir dir("moejit-tune-test");
  store::CubinStore store(dir.path);
  const std::vector<codegen::KernelSpec> specs = {
      {codegen::KernelKind::RouteCount, kSmall, {}},
      {codegen::KernelKind::Gemm1, kSmall, TileConfig{64, 64, 4, 0, 0, true, 0}}};
  // wgmma on sm_80 fails alone; the other spec still builds.
  auto results = runtime::buildEach(specs, "sm_80", store);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].ok()) << results[0].error;
  EXPECT_FALSE(results[1].ok());
  EXPECT_EQ(results[1].code, ErrorCode::InvalidArgument);
  EXPECT_NE(results[1].error.find("wgmma"), std::string::npos);
}

TEST(BuildEach, ResultsKeepTheOrderOfTheSpecsWhateverOrderTheyCompileIn) {
  testkit::TempDir dir("moejit-tune-test");
  store::CubinStore store(dir.path);
  // Listed cheapest first: the builder starts the GEMM and the scatter
  // before the others, and result i is still spec i's.
  const std::vector<codegen::KernelSpec> specs = {
      {codegen::KernelKind::Combine, kSmall, {}},
      {codegen::KernelKind::RouteCount, kSmall, {}},
      {codegen::KernelKind::RouteScatter, kSmall, {}},
      {codegen::KernelKind::Gemm1, kSmall, TileConfig{64, 64, 3, 2, 2}}};
  std::vector<std::string> done;
  runtime::BuildOptions options;
  options.on_done = [&](const runtime::BuildResult &r, size_t, size_t) {
    done.push_back(r.kernel.spec.name());
  };
  auto results = runtime::buildEach(specs, "sm_80", store, options);
  ASSERT_EQ(results.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_TRUE(results[i].ok()) << results[i].error;
    EXPECT_EQ(results[i].kernel.spec.name(), specs[i].name());
    EXPECT_EQ(results[i].kernel.entry.meta.kernel, specs[i].name()) << "the cubin built for it";
    EXPECT_FALSE(results[i].kernel.entry.cubin.empty()) << specs[i].name();
  }
  EXPECT_EQ(done.size(), specs.size()) << "every build reported once";
}

/// On one thread the misses of a family compile as one NVRTC program; each
/// kernel is still its own entry, found by a later build with nothing
/// compiled.
TEST(BuildEach, KernelsCompiledTogetherAreEachCachedUnderTheirOwnKey) {
  testkit::TempDir dir("moejit-tune-test");
  const std::vector<codegen::KernelSpec> specs = {
      {codegen::KernelKind::Combine, kSmall, {}},
      {codegen::KernelKind::RouteCount, kSmall, {}},
      {codegen::KernelKind::RouteScan, kSmall, {}},
      {codegen::KernelKind::RouteScatter, kSmall, {}},
      {codegen::KernelKind::Gemm1, kSmall, TileConfig{64, 64, 3, 2, 2}}};
  {
    store::CubinStore store(dir.path);
    runtime::BuildOptions options;
    options.workers = 1;
    auto results = runtime::buildEach(specs, "sm_80", store, options);
    ASSERT_EQ(results.size(), specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      ASSERT_TRUE(results[i].ok()) << results[i].error;
      EXPECT_EQ(results[i].kernel.entry.meta.kernel, specs[i].name());
      EXPECT_NE(results[i].kernel.entry.cubin.find(specs[i].name()), std::string::npos)
          << "the cubin holds " << specs[i].name();
    }
    // Three programs: the combine alone (-O3), the routing kernels
    // together (their family's options), and the mma GEMM (which declares
    // dynamic shared memory) alone.
    EXPECT_EQ(results[0].kernel.program_kernels, 1);
    EXPECT_EQ(results[1].kernel.program_kernels, 3);
    EXPECT_EQ(results[4].kernel.program_kernels, 1);
    EXPECT_EQ(results[1].kernel.entry.cubin, results[3].kernel.entry.cubin);
    EXPECT_EQ(store.compiles(), specs.size());
  }
  store::CubinStore again(dir.path);
  runtime::BuildOptions no_compile;
  no_compile.no_compile = true;
  for (const runtime::BuildResult &r : runtime::buildEach(specs, "sm_80", again, no_compile))
    EXPECT_TRUE(r.ok() && r.kernel.from_cache) << r.kernel.spec.name() << ": " << r.error;
  EXPECT_EQ(again.hits(), specs.size());
}

/// A kernel listed twice is compiled once (and its key locked once) and
/// both results hold it.
TEST(BuildEach, AKernelListedTwiceIsBuiltOnce) {
  testkit::TempDir dir("moejit-tune-test");
  store::CubinStore store(dir.path);
  const codegen::KernelSpec count{codegen::KernelKind::RouteCount, kSmall, {}};
  const codegen::KernelSpec combine{codegen::KernelKind::Combine, kSmall, {}};
  runtime::BuildOptions options;
  options.workers = 1;
  std::vector<std::string> done;
  options.on_done = [&](const runtime::BuildResult &r, size_t, size_t) {
    done.push_back(r.kernel.spec.name());
  };
  auto results = runtime::buildEach({count, combine, count}, "sm_80", store, options);
  ASSERT_EQ(results.size(), 3u);
  for (const runtime::BuildResult &r : results)
    ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(results[2].kernel.spec.name(), count.name());
  EXPECT_EQ(results[2].kernel.entry.cubin, results[0].kernel.entry.cubin);
  EXPECT_EQ(store.compiles(), 2u);
  EXPECT_EQ(done.size(), 3u);
}

TEST(BuildEach, MoejitCompileThreadsSetsHowTheMissesGroup) {
  // Four kernels of one family: on one thread some share a program, on two
  // (a thread per two kernels) each is alone.
  const std::vector<codegen::KernelSpec> specs = runtime::fixedSpecs(kSmall);
  ASSERT_EQ(specs.size(), 4u);
  for (const auto &[threads, grouped] : {std::pair{"1", true}, std::pair{"2", false}}) {
    testkit::TempDir dir("moejit-tune-test");
    store::CubinStore store(dir.path);
    testkit::EnvVar env("MOEJIT_COMPILE_THREADS", threads);
    auto results = runtime::buildEach(specs, "sm_80", store, {});
    int largest = 0;
    for (const runtime::BuildResult &r : results) {
      ASSERT_TRUE(r.ok()) << r.error;
      largest = std::max(largest, r.kernel.program_kernels);
    }
    EXPECT_EQ(largest > 1, grouped) << threads << " threads: largest program " << largest;
    EXPECT_EQ(store.compiles(), 4u);
  }
}

TEST(BuildEach, ABadMoejitCompileThreadsFailsTheMissesNotTheHits) {
  testkit::TempDir dir("moejit-tune-test");
  store::CubinStore store(dir.path);
  const codegen::KernelSpec count{codegen::KernelKind::RouteCount, kSmall, {}};
  const codegen::KernelSpec combine{codegen::KernelKind::Combine, kSmall, {}};
  runtime::BuildOptions one;
  one.workers = 1;
  ASSERT_TRUE(runtime::buildEach({count}, "sm_80", store, one).front().ok());
  testkit::EnvVar env("MOEJIT_COMPILE_THREADS", "lots");
  auto results = runtime::buildEach({count, combine, combine}, "sm_80", store, {});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok()) << results[0].error;
  for (size_t i : {1, 2}) {
    EXPECT_EQ(results[i].code, ErrorCode::InvalidArgument);
    EXPECT_NE(results[i].error.find("MOEJIT_COMPILE_THREADS=lots"), std::string::npos)
        << results[i].error;
  }
  EXPECT_EQ(store.compiles(), 1u) << "nothing compiled after the bad setting";
  // The option given in code wins over the setting.
  EXPECT_TRUE(runtime::buildEach({combine}, "sm_80", store, one).front().ok());
}

TEST(Warm, ShapesWarmedTogetherShareNvrtcPrograms) {
  testkit::TempDir dir("moejit-tune-test");
  store::CubinStore store(dir.path);
  const MoeShape other{2, 512, 128, 8, DType::BF16};
  testkit::EnvVar env("MOEJIT_COMPILE_THREADS", "1");
  auto both = api::warmShapes({kSmall, other}, "sm_80", "", store, Combine::Deterministic);
  ASSERT_TRUE(static_cast<bool>(both)) << errorMessage(both.takeError());
  ASSERT_EQ(both->size(), 2u);
  // Each shape's outcomes are its own kernels, as a warm of it alone lists.
  bool shared = false;
  for (size_t s = 0; s < 2; ++s) {
    const MoeShape &shape = s == 0 ? kSmall : other;
    auto alone = api::warmShape(shape, "sm_80", "", store, Combine::Deterministic);
    ASSERT_TRUE(static_cast<bool>(alone)) << errorMessage(alone.takeError());
    ASSERT_EQ((*both)[s].size(), alone->size());
    for (size_t i = 0; i < alone->size(); ++i) {
      EXPECT_EQ((*both)[s][i].kernel.spec.name(), (*alone)[i].kernel.spec.name());
      EXPECT_TRUE((*alone)[i].kernel.from_cache) << (*alone)[i].kernel.spec.name();
    }
  }
  // On one thread the two shapes' kernels of a family went into programs
  // together: some cubin holds kernels of both.
  for (const runtime::BuildResult &a : (*both)[0])
    for (const runtime::BuildResult &b : (*both)[1])
      shared = shared || a.kernel.entry.cubin == b.kernel.entry.cubin;
  EXPECT_TRUE(shared);
  EXPECT_EQ(store.compiles(), (*both)[0].size() + (*both)[1].size());
}

/// Captures what the library logs while alive, at info level.
class CapturedLog {
public:
  CapturedLog() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    level_ = logger().level();
    logger().set_level(spdlog::level::info);
    logger().sinks().push_back(sink_);
  }
  ~CapturedLog() {
    logger().sinks().pop_back();
    logger().set_level(level_);
  }
  std::string text() const { return text_.str(); }

private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  spdlog::level::level_enum level_;
};

TEST(Observability, CompilesLogStartEndAndDurationAndAreCounted) {
  testkit::TempDir dir("moejit-tune-test");
  store::CubinStore store(dir.path);
  const codegen::KernelSpec spec{codegen::KernelKind::RouteScan, kSmall, {}};
  std::string text;
  {
    CapturedLog log;
    ASSERT_TRUE(static_cast<bool>(runtime::buildKernels({spec}, "sm_80", store)));
    text = log.text();
  }
  EXPECT_NE(text.find("compiling " + spec.name() + " for sm_80"), std::string::npos) << text;
  EXPECT_NE(text.find("compiled " + spec.name() + " in "), std::string::npos) << text;
  EXPECT_NE(text.find(" ms ("), std::string::npos) << text;
  EXPECT_EQ(store.misses(), 1u);
  EXPECT_EQ(store.compiles(), 1u);
  EXPECT_EQ(store.hits(), 0u);
  // The second build is a hit: counted, and no compile logged.
  {
    CapturedLog log;
    ASSERT_TRUE(static_cast<bool>(runtime::buildKernels({spec}, "sm_80", store)));
    EXPECT_EQ(log.text().find("compiling"), std::string::npos) << log.text();
  }
  EXPECT_EQ(store.hits(), 1u);
  EXPECT_EQ(store.compiles(), 1u);
}

TEST(Observability, AWarningIsLoggedOnce) {
  CapturedLog log;
  for (int i = 0; i < 3; ++i)
    warnOnce("tune_test-once", "the same warning");
  const std::string text = log.text();
  EXPECT_NE(text.find("the same warning"), std::string::npos);
  EXPECT_EQ(text.find("the same warning"), text.rfind("the same warning")) << text;
}

} // namespace

namespace {
/// Finalists timed with no spread between their two passes.
std::vector<tune::FinalistTime> quiet(const std::vector<double> &ms) {
  std::vector<tune::FinalistTime> times;
  for (double m : ms)
    times.push_back({m, 0});
  return times;
}
} // namespace

// The heuristic's plan (finalist 0) keeps a bucket unless another finalist
// is faster by more than the margin; without it the fastest wins.
TEST(Finalists, HeuristicKeepsABucketInsideTheNoiseMargin) {
  EXPECT_EQ(tune::pickFinalist(quiet({1.000, 0.995, 1.020}), 1), 0u); // 0.5% faster: noise
  EXPECT_EQ(tune::pickFinalist(quiet({1.000, 0.980, 0.985}), 1), 1u); // 2% faster wins
  EXPECT_EQ(tune::pickFinalist(quiet({1.000, 0.995}), 0), 1u);        // no heuristic finalist
  EXPECT_EQ(tune::pickFinalist(quiet({1.000, 0.995}), 1, 0.0), 1u);   // no margin
  EXPECT_EQ(tune::pickFinalist(quiet({0.900, 0.950}), 1), 0u);        // heuristic fastest
}

// The winner of the bucket tuned before (finalist 1 here) is preferred
// next: it adds no kernel either; the heuristic's plan still comes first.
TEST(Finalists, PreviousBucketsWinnerIsPreferredNext) {
  EXPECT_EQ(tune::pickFinalist(quiet({1.030, 1.000, 0.995}), 2), 1u); // heuristic 3.5% off
  EXPECT_EQ(tune::pickFinalist(quiet({1.004, 1.000, 0.995}), 2), 0u); // both within
  EXPECT_EQ(tune::pickFinalist(quiet({1.030, 1.020, 0.995}), 2), 2u); // neither within
  EXPECT_EQ(tune::pickFinalist(quiet({1.030, 1.020, 0.995}), 5), 2u); // preferred past the end
}

// Timed ABC then CBA: finalist i's medians are i and 2n-1-i; its time is
// their mean, its spread their difference over the lower.
TEST(Finalists, TwoPassesFoldIntoAMeanAndASpread) {
  const auto times = tune::foldPasses({1.000, 2.000, 2.200, 1.030});
  ASSERT_EQ(times.size(), 2u);
  EXPECT_DOUBLE_EQ(times[0].ms, 1.015);
  EXPECT_NEAR(times[0].spread, 0.03, 1e-12);
  EXPECT_DOUBLE_EQ(times[1].ms, 2.1);
  EXPECT_NEAR(times[1].spread, 0.1, 1e-12);
  EXPECT_TRUE(tune::foldPasses({}).empty());
}

// The margin between a preferred plan and the fastest is the larger of
// their spreads, within [1%, 5%]: a 3% spread keeps the heuristic against
// a plan 2% faster; a noisy outsider raises no one else's bar; a plan
// faster by more than 5% wins however noisy the passes.
TEST(Finalists, TheMarginIsTheNoiseOfThePlansCompared) {
  using tune::FinalistTime;
  const std::vector<FinalistTime> noisy_heuristic = {{1.000, 0.03}, {0.980, 0.002}};
  EXPECT_EQ(tune::pickFinalist(noisy_heuristic, 1), 0u);
  const std::vector<FinalistTime> noisy_fastest = {{1.000, 0.002}, {0.980, 0.03}};
  EXPECT_EQ(tune::pickFinalist(noisy_fastest, 1), 0u);
  const std::vector<FinalistTime> noisy_outsider = {
      {1.000, 0.002}, {0.980, 0.002}, {1.200, 0.20}};
  EXPECT_EQ(tune::pickFinalist(noisy_outsider, 1), 1u);
  const std::vector<FinalistTime> capped = {{1.000, 0.20}, {0.930, 0.002}};
  EXPECT_EQ(tune::pickFinalist(capped, 1), 1u);
  EXPECT_EQ(tune::pickFinalist(capped, 1, 0.01, 0.10), 0u); // a 10% cap keeps it
}

// Buckets are tuned from the largest down, each once, so that a mid bucket
// may take the larger buckets' kernels; a bucket out of range is an error.
TEST(TuningOrder, LargestFirstEachOnce) {
  auto all = tune::tuningOrder({});
  ASSERT_TRUE(static_cast<bool>(all)) << errorMessage(all.takeError());
  ASSERT_EQ(all->size(), static_cast<size_t>(runtime::kBucketCount));
  EXPECT_EQ(all->front(), runtime::kBucketCount - 1);
  EXPECT_EQ(all->back(), 0);
  EXPECT_TRUE(std::is_sorted(all->rbegin(), all->rend()));
  auto some = tune::tuningOrder({3, 12, 3, 0});
  ASSERT_TRUE(static_cast<bool>(some)) << errorMessage(some.takeError());
  EXPECT_EQ(*some, (std::vector<int>{12, 3, 0}));
  for (int bad : {-1, runtime::kBucketCount}) {
    auto refused = tune::tuningOrder({1, bad});
    ASSERT_FALSE(static_cast<bool>(refused));
    EXPECT_NE(errorMessage(refused.takeError()).find(std::to_string(bad)), std::string::npos);
  }
}
