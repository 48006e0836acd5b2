// End-to-end tests on a GPU: every case is compared with the fp64 CPU
// reference on fresh random inputs, with y poisoned (NaN) before the run.
// Without a GPU each test skips with the reason.
#include "codegen/tile_config.h"
#include "common/error.h"
#include "driver/driver.h"
#include "gpu_required.h"
#include "runtime/kernel_set.h"
#include "store/cubin_store.h"
#include "testkit.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>

#include <cstring>
#include <thread>

using namespace moejit;
using testkit::DeviceBuffer;

namespace {

constexpr Combine kModes[] = {Combine::Deterministic, Combine::Fast, Combine::BatchInvariant};

/// The cache root of this run's kernels.
const std::string &cacheDir() {
  static const std::string dir = [] {
    llvm::SmallString<128> p;
    llvm::sys::fs::createUniqueDirectory("moejit-gpu-test-cache", p);
    return std::string(p);
  }();
  return dir;
}

/// One runtime per combine mode, over one cache root.
Runtime &runtime(Combine combine = Combine::Deterministic) {
  const std::string &dir = cacheDir();
  static Runtime deterministic(0, RuntimeOptions{dir, {}, {}, Combine::Deterministic});
  static Runtime fast(0, RuntimeOptions{dir, {}, {}, Combine::Fast});
  static Runtime invariant(0, RuntimeOptions{dir, {}, {}, Combine::BatchInvariant});
  return combine == Combine::Fast             ? fast
         : combine == Combine::BatchInvariant ? invariant
                                              : deterministic;
}

/// Tails: k = 1 and expert e gets 128 + (e % 64) + 1 rows (tokens = the
/// sum), so the 128-row tiles of the warp-specialised GEMMs end with tails
/// of every length 1..64. Spread: k = 1 and expert e gets 4 * (e % 64) + 1
/// rows, 1..253: every token width of a 256-row swap-AB tile.
enum class Routing { Random, OneExpert, OutOfRange, Tails, Spread };

/// Rows of expert e in a Tails or Spread case.
constexpr int64_t routedRows(Routing mode, int e) {
  return mode == Routing::Tails ? 128 + e % 64 + 1 : 4 * (e % 64) + 1;
}

struct Problem {
  MoeShape shape;
  int64_t tokens;
  testkit::HostTensor x, gate_up, down;
  testkit::Routing routing;
  DeviceBuffer dx, dgu, ddown, dindex, dweights, dy, dworkspace;
  std::shared_ptr<const KernelSet> kernels;
  /// The kernel set usePlan built (null after useCombine).
  std::shared_ptr<const runtime::KernelSetImpl> planned;

  Problem(MoeShape s, int64_t t, Routing mode, uint64_t seed) : shape(s), tokens(t) {
    x = testkit::randomTensor(s.dtype, t * s.hidden, 1.0f, seed);
    gate_up = testkit::randomTensor(s.dtype, size_t(s.experts) * 2 * s.intermediate * s.hidden,
                                    1.0f / std::sqrt(float(s.hidden)), seed + 1);
    down = testkit::randomTensor(s.dtype, size_t(s.experts) * s.hidden * s.intermediate,
                                 1.0f / std::sqrt(float(s.intermediate)), seed + 2);
    routing = testkit::randomRouting(t, s.k, s.experts, seed + 3);
    if (mode == Routing::OneExpert)
      for (int64_t i = 0; i < t; ++i)
        routing.index[i * s.k] = s.experts / 2; // slot 0 of every token
    if (mode == Routing::Tails || mode == Routing::Spread) {
      int64_t t = 0;
      for (int e = 0; e < s.experts; ++e)
        for (int r = 0; r < routedRows(mode, e) && t < tokens * s.k; ++r)
          routing.index[t++] = e;
    }
    if (mode == Routing::OutOfRange)
      for (size_t i = 0; i < routing.index.size(); i += 3)
        routing.index[i] = i % 2 ? -1 : s.experts + int(i % 1000);
    dx = DeviceBuffer::from(x.bytes);
    dgu = DeviceBuffer::from(gate_up.bytes);
    ddown = DeviceBuffer::from(down.bytes);
    dindex = DeviceBuffer::from(routing.index);
    dweights = DeviceBuffer::from(routing.weights);
    dy = DeviceBuffer(t * s.hidden * dtype_bytes(s.dtype));
    useCombine(Combine::Deterministic);
  }

  /// Runs from now on with the kernel set of `combine` (workspace grown
  /// to fit it).
  void useCombine(Combine combine) {
    kernels = runtime(combine).get(shape);
    planned = nullptr;
    EXPECT_EQ(kernels->combine(), combine);
    const size_t need = kernels->workspace_bytes(tokens);
    if (dworkspace.bytes() < need)
      dworkspace = DeviceBuffer(need);
  }

  /// Runs from now on with `g` in every bucket (the kernels of a plan the
  /// tuner may ship), with the runtime's arch and cache root.
  void usePlan(const runtime::GemmPlan &g, Combine combine) {
    static const driver::Device device = moejit::unwrapOrThrow(driver::Device::open(0));
    static store::CubinStore store(cacheDir());
    runtime::Plan plan;
    plan.buckets.assign(runtime::kBucketCount, g);
    const Arch arch = moejit::unwrapOrThrow(Arch::parse(runtime().arch()));
    planned =
        moejit::unwrapOrThrow(runtime::buildKernelSet(device, shape, plan, combine, arch, store));
    kernels = planned;
    const size_t need = kernels->workspace_bytes(tokens);
    if (dworkspace.bytes() < need)
      dworkspace = DeviceBuffer(need);
  }

  MoeArgs args() const {
    return testkit::moeArgs(dx, dgu, ddown, dindex, dweights, dy, tokens, dworkspace);
  }

  /// Runs once on a poisoned y and returns y's bytes: every stage, or
  /// (with a usePlan kernel set) only `stages` on what the last run left in
  /// the workspace.
  std::vector<uint8_t> run(unsigned stages = runtime::kAllStages) {
    if (stages == runtime::kAllStages)
      return runWith(args());
    dy.fill(0xff);
    moejit::throwIfError(planned->enqueue(args(), nullptr, stages));
    return output();
  }

  /// Runs `a` (which writes dy) once on a poisoned y and returns y's bytes.
  std::vector<uint8_t> runWith(const MoeArgs &a) {
    dy.fill(0xff);
    kernels->run(a, nullptr);
    return output();
  }

  /// y's bytes once the device is idle.
  std::vector<uint8_t> output() const {
    throwIfErrorSync();
    std::vector<uint8_t> out(dy.bytes());
    dy.download(out.data(), out.size());
    return out;
  }

  /// Runs in place (y == x) on a copy of x and returns that buffer's bytes.
  std::vector<uint8_t> runInPlace() const {
    DeviceBuffer inplace = DeviceBuffer::from(x.bytes);
    MoeArgs a = args();
    a.x = inplace.get();
    a.y = inplace.get();
    kernels->run(a, nullptr);
    throwIfErrorSync();
    std::vector<uint8_t> out(inplace.bytes());
    inplace.download(out.data(), out.size());
    return out;
  }

  static void throwIfErrorSync() {
    CUresult rc = driver::loaded().cuCtxSynchronize();
    ASSERT_EQ(rc, CUDA_SUCCESS);
  }

  double error(const std::vector<uint8_t> &y) const {
    testkit::HostTensor out;
    out.dtype = shape.dtype;
    out.bytes = y;
    return testkit::relativeError(testkit::toDoubles(out),
                                  testkit::referenceMoe(shape, tokens, x, gate_up, down, routing));
  }
};

struct Case {
  int k, hidden, intermediate, experts;
  DType dtype;
  int64_t tokens;
  Routing routing = Routing::Random;
};

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  const Case &c = info.param;
  const char *mode[] = {"random", "oneexpert", "outofrange", "tails", "spread"};
  return std::string(dtype_name(c.dtype)) + "_k" + std::to_string(c.k) + "_h" +
         std::to_string(c.hidden) + "_i" + std::to_string(c.intermediate) + "_e" +
         std::to_string(c.experts) + "_t" + std::to_string(c.tokens) + "_" + mode[int(c.routing)];
}

/// Readable parameter in test output (the default prints raw bytes).
void PrintTo(const Case &c, std::ostream *os) {
  *os << caseName(::testing::TestParamInfo<Case>(c, 0));
}

class MatchesReference : public ::testing::TestWithParam<Case> {};

// Each case in every combine mode: one reference, three kernel sets.
TEST_P(MatchesReference, RelativeErrorUnderLimit) {
  REQUIRE_GPU();
  const Case &c = GetParam();
  Problem p({c.k, c.hidden, c.intermediate, c.experts, c.dtype}, c.tokens, c.routing,
            1000 + c.tokens);
  for (Combine mode : kModes) {
    p.useCombine(mode);
    const double err = p.error(p.run());
    EXPECT_LT(err, testkit::errorLimit(c.dtype))
        << "relative Frobenius error, combine " << combine_name(mode);
  }
}

constexpr DType BF = DType::BF16, FP16 = DType::FP16, FP32 = DType::FP32;

INSTANTIATE_TEST_SUITE_P(Seed, MatchesReference,
                         ::testing::Values(Case{8, 2048, 768, 128, BF, 1},
                                           Case{8, 2048, 768, 128, BF, 7},
                                           Case{8, 2048, 768, 128, BF, 128},
                                           Case{8, 2048, 768, 128, FP16, 128},
                                           Case{8, 2048, 768, 8, BF, 128}),
                         caseName);

INSTANTIATE_TEST_SUITE_P(Tokens, MatchesReference,
                         ::testing::Values(Case{2, 256, 128, 8, BF, 1}, Case{2, 256, 128, 8, BF, 7},
                                           Case{2, 256, 128, 8, BF, 128},
                                           Case{2, 256, 128, 8, BF, 1000},
                                           Case{2, 256, 128, 8, BF, 8192},
                                           Case{1, 128, 64, 64, BF, 8192}),
                         caseName);

INSTANTIATE_TEST_SUITE_P(
    KAndExperts, MatchesReference,
    ::testing::Values(Case{1, 256, 128, 1, BF, 300}, Case{1, 256, 128, 8, BF, 300},
                      Case{6, 256, 128, 64, BF, 300}, Case{8, 256, 128, 128, BF, 300},
                      Case{6, 512, 256, 64, FP16, 1000}, Case{8, 128, 64, 8, BF, 1000},
                      // k past the combine's batch of 8 slots, with a warp
                      // of the combine holding one column of H (33 and 66
                      // 16-byte lanes): its sorted rows come through lanes past H.
                      Case{10, 264, 128, 64, BF, 300}, Case{10, 264, 128, 64, FP32, 100}),
    caseName);

INSTANTIATE_TEST_SUITE_P(OddSizes, MatchesReference,
                         ::testing::Values(Case{2, 1032, 584, 8, BF, 128},
                                           Case{2, 1032, 584, 8, FP16, 128},
                                           Case{2, 1032, 584, 8, FP32, 128},
                                           Case{2, 1032, 584, 8, BF, 2000},
                                           Case{3, 72, 40, 5, BF, 1000}, Case{2, 8, 8, 3, BF, 17},
                                           Case{2, 8, 8, 3, FP32, 17}),
                         caseName);

INSTANTIATE_TEST_SUITE_P(Fp32, MatchesReference,
                         ::testing::Values(Case{2, 256, 128, 8, FP32, 1},
                                           Case{8, 256, 128, 64, FP32, 1000},
                                           Case{6, 512, 256, 64, FP32, 128}),
                         caseName);

/// Tokens of a Routing::Tails (or `mode`) case with k = 1 and E experts.
constexpr int64_t tailTokens(int experts, Routing mode = Routing::Tails) {
  int64_t t = 0;
  for (int e = 0; e < experts; ++e)
    t += routedRows(mode, e);
  return t;
}

// One-block routing ends at T*k = 1024 (kRouteBlockMaxAssignments); past
// it one launch over the grid (route_wide) up to kRouteWideMaxAssignments
// (16384), with 16 scatter warps per block at 64 experts and 4 at 1024;
// past that route_count first (its per-block counts summed in passes of
// 8 experts a warp: 1024 experts take 8), past 1024 experts three launches.
INSTANTIATE_TEST_SUITE_P(
    RoutingPaths, MatchesReference,
    ::testing::Values(Case{8, 256, 128, 64, BF, 128}, Case{8, 256, 128, 64, BF, 129},
                      Case{6, 256, 128, 64, BF, 341},
                      Case{8, 256, 128, 16, BF, 9000, Routing::OutOfRange},
                      Case{2, 64, 32, 1024, BF, 1500}, Case{8, 64, 32, 16, BF, 2048},
                      Case{8, 64, 32, 16, BF, 2049}, Case{2, 64, 32, 1024, BF, 9000},
                      Case{2, 64, 32, 1100, BF, 300},
                      Case{1, 256, 128, 64, BF, tailTokens(64), Routing::Tails},
                      Case{1, 264, 200, 64, FP16, tailTokens(64), Routing::Tails}),
    caseName);

INSTANTIATE_TEST_SUITE_P(Routings, MatchesReference,
                         ::testing::Values(Case{1, 256, 128, 64, BF, 1000, Routing::OneExpert},
                                           Case{4, 256, 128, 16, BF, 1000, Routing::OneExpert},
                                           Case{1, 256, 128, 64, BF, 8192, Routing::OneExpert},
                                           Case{8, 256, 128, 64, BF, 1000, Routing::OutOfRange},
                                           Case{2, 256, 128, 8, FP32, 7, Routing::OutOfRange},
                                           Case{8, 2048, 768, 128, BF, 128, Routing::OutOfRange},
                                           // More slots than experts (an expert map's
                                           // share): rows repeat experts.
                                           Case{6, 256, 128, 4, BF, 1000},
                                           Case{3, 72, 40, 1, FP16, 300},
                                           Case{12, 256, 128, 8, FP32, 100}),
                         caseName);

/// The swap-AB GEMMs (weights as wgmma's M) in every combine mode, each
/// with itself and beside a 128-row warp-specialised GEMM: every token
/// width (bm up to 64 rows; bm/4, bm/2 and the steps of 32 up to bm from
/// 128 up; tails and a spread of 1..253 rows included), K and N not multiples of 64, an
/// expert with many tiles, out-of-range ids.
class SwapAbMatchesReference : public ::testing::TestWithParam<Case> {};

TEST_P(SwapAbMatchesReference, EveryPlanAndMode) {
  REQUIRE_GPU();
  if (!moejit::unwrapOrThrow(Arch::parse(runtime().arch())).hasWgmma())
    GTEST_SKIP() << "swap-AB GEMMs need sm_90a, the GPU is " << runtime().arch();
  const Case &c = GetParam();
  Problem p({c.k, c.hidden, c.intermediate, c.experts, c.dtype}, c.tokens, c.routing,
            2000 + c.tokens);
  using codegen::GemmKind, codegen::swapTile, codegen::wsTile;
  const runtime::GemmPlan plans[] = {
      {swapTile(32, 11, GemmKind::Gemm1), swapTile(32, 11, GemmKind::Gemm2)},
      {swapTile(128, 7, GemmKind::Gemm1), swapTile(256, 4, GemmKind::Gemm2)},
      {swapTile(256, 4, GemmKind::Gemm1), swapTile(256, 4, GemmKind::Gemm2)},
      {swapTile(64, 9, GemmKind::Gemm1), wsTile(128, 4, true)},
      {wsTile(128, 4), swapTile(64, 7, GemmKind::Gemm2)}};
  for (const runtime::GemmPlan &g : plans)
    for (Combine mode : kModes) {
      p.usePlan(g, mode);
      const double err = p.error(p.run());
      EXPECT_LT(err, testkit::errorLimit(c.dtype))
          << g.gemm1.suffix() << ":" << g.gemm2.suffix() << ", combine " << combine_name(mode);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SwapAbMatchesReference,
    // The seed shape only at small T: its fp64 reference grows with T.
    ::testing::Values(Case{8, 2048, 768, 128, BF, 1}, Case{8, 2048, 768, 128, BF, 128},
                      Case{6, 512, 256, 64, FP16, 300}, Case{8, 512, 256, 16, BF, 2048},
                      Case{2, 1032, 584, 8, BF, 2000}, Case{2, 8, 8, 3, BF, 17},
                      Case{1, 264, 200, 64, FP16, tailTokens(64), Routing::Tails},
                      Case{1, 264, 200, 64, BF, tailTokens(64, Routing::Spread), Routing::Spread},
                      Case{4, 256, 128, 16, BF, 1000, Routing::OneExpert},
                      Case{8, 256, 128, 64, BF, 1000, Routing::OutOfRange},
                      // More than 16 column tiles (GEMM1's ws and swap-AB
                      // walks, then GEMM2's swap-AB walk, go in bands of 8
                      // row tiles) and ~1100 rows per expert: a full band
                      // and a short one per expert.
                      Case{1, 264, 2184, 2, BF, 2200}, Case{1, 2200, 200, 2, FP16, 2200},
                      // More slots than experts: every expert in every row,
                      // some twice.
                      Case{6, 256, 128, 4, BF, 1000}),
    caseName);

TEST(Runtime, BitwiseRepeatable) {
  REQUIRE_GPU();
  for (DType d : {BF, FP16, FP32}) {
    Problem p({8, 512, 256, 64, d}, 2000, Routing::Random, 77);
    const auto first = p.run();
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(p.run(), first) << dtype_name(d) << " run " << i;
  }
}

// The persistent GEMMs take their tiles by claims counted in the
// workspace, which the last CTA of each GEMM sets back to 0: GEMMs rerun on
// one routing (as the tuner times them) must cover every tile again. x
// changes between the reruns, so a tile left out would keep the other x's
// rows.
TEST(Runtime, PersistentGemmsRerunOnOneRoutingCoverEveryTile) {
  REQUIRE_GPU();
  if (!moejit::unwrapOrThrow(Arch::parse(runtime().arch())).hasWgmma())
    GTEST_SKIP() << "persistent GEMMs need sm_90a, the GPU is " << runtime().arch();
  // ~1000 rows per expert: hundreds of tiles per GEMM, more than SMs.
  Problem p({8, 512, 256, 16, BF}, 2048, Routing::Random, 91);
  const testkit::HostTensor other_x =
      testkit::randomTensor(BF, p.tokens * p.shape.hidden, 1.0f, 92);
  using codegen::GemmKind, codegen::swapTile, codegen::wsTile;
  const runtime::GemmPlan plans[] = {
      {wsTile(128, 4, true), wsTile(256, 3, true)},
      {swapTile(32, 9, GemmKind::Gemm1), swapTile(64, 7, GemmKind::Gemm2)}};
  const unsigned gemms = runtime::kGemm1 | runtime::kGemm2 | runtime::kCombine;
  for (const runtime::GemmPlan &g : plans) {
    p.usePlan(g, Combine::Deterministic);
    p.dx.upload(other_x.bytes.data(), other_x.bytes.size());
    const auto y_other = p.run();
    p.dx.upload(p.x.bytes.data(), p.x.bytes.size());
    const auto y = p.run();
    EXPECT_LT(p.error(y), testkit::errorLimit(BF));
    ASSERT_NE(y, y_other);
    for (int i = 0; i < 4; ++i) {
      const bool other = i % 2 == 0;
      const testkit::HostTensor &x = other ? other_x : p.x;
      p.dx.upload(x.bytes.data(), x.bytes.size());
      EXPECT_EQ(p.run(gemms), other ? y_other : y)
          << g.gemm1.suffix() << ":" << g.gemm2.suffix() << ", rerun " << i;
    }
  }
}

TEST(Runtime, EveryOutputWrittenWhenAllIndicesInvalid) {
  REQUIRE_GPU();
  Problem p({2, 64, 32, 4, BF}, 50, Routing::Random, 5);
  std::vector<int32_t> invalid(100, -1);
  p.dindex.upload(invalid.data(), invalid.size() * 4);
  for (Combine mode : kModes) {
    p.useCombine(mode);
    const auto y = p.run();
    for (size_t i = 0; i < y.size(); i += 2)
      ASSERT_EQ(y[i] | y[i + 1], 0)
          << "y must be zero where no expert contributes, combine " << combine_name(mode);
  }
}

// The fast mode's memset of y is captured with the launches.
TEST(Runtime, CapturedInACudaGraph) {
  REQUIRE_GPU();
  Problem p({8, 256, 128, 32, BF}, 500, Routing::Random, 9);
  const auto &api = driver::loaded();
  CUstream stream;
  ASSERT_EQ(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  for (Combine mode : kModes) {
    SCOPED_TRACE(combine_name(mode));
    p.useCombine(mode);
    const auto direct = p.run();
    CUgraph graph;
    CUgraphExec exec;
    ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    p.kernels->run(p.args(), stream);
    ASSERT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    ASSERT_EQ(api.cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
    p.dy.fill(0xff);
    ASSERT_EQ(api.cuGraphLaunch(exec, stream), CUDA_SUCCESS);
    ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
    std::vector<uint8_t> replay(p.dy.bytes());
    p.dy.download(replay.data(), replay.size());
    if (mode == Combine::Fast) // the order of its adds may differ
      EXPECT_LT(p.error(replay), testkit::errorLimit(BF));
    else
      EXPECT_EQ(replay, direct);
    api.cuGraphExecDestroy(exec);
    api.cuGraphDestroy(graph);
  }
  api.cuStreamDestroy(stream);
}

TEST(Runtime, BadArgumentsFailBeforeAnyLaunch) {
  REQUIRE_GPU();
  Problem p({2, 64, 32, 4, BF}, 10, Routing::Random, 3);
  auto expectCode = [&](MoeArgs a, ErrorCode code, const char *needle) {
    try {
      p.kernels->run(a, nullptr);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const Error &e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  MoeArgs a = p.args();
  a.x = nullptr;
  expectCode(a, ErrorCode::InvalidArgument, "x is null");
  a = p.args();
  a.gate_up_proj = static_cast<const char *>(a.gate_up_proj) + 8;
  expectCode(a, ErrorCode::InvalidArgument, "gate_up_proj is not 16-byte aligned");
  a = p.args();
  a.workspace_bytes -= 1;
  expectCode(a, ErrorCode::WorkspaceTooSmall, "too small");
  a = p.args();
  a.tokens = -1;
  expectCode(a, ErrorCode::InvalidArgument, "negative");
  a = p.args();
  a.y = const_cast<char *>(static_cast<const char *>(a.x)) + 16; // y == x is allowed, not this
  expectCode(a, ErrorCode::InvalidArgument, "y overlaps x");
  a = p.args();
  a.index_type = static_cast<IndexType>(7);
  expectCode(a, ErrorCode::InvalidArgument, "index_type");
  a = p.args();
  a.expert_map_size = 4; // without the map
  expectCode(a, ErrorCode::InvalidArgument, "expert_map");
  a = p.args();
  a.y = static_cast<char *>(a.workspace) + 256;
  expectCode(a, ErrorCode::InvalidArgument, "y overlaps workspace");
  a = p.args();
  a.y = const_cast<void *>(a.down_proj);
  expectCode(a, ErrorCode::InvalidArgument, "y overlaps down_proj");
  // tokens = 0 is a no-op, even with null pointers
  p.dy.fill(0x11);
  MoeArgs empty;
  EXPECT_NO_THROW(p.kernels->run(empty, nullptr));
  EXPECT_EQ(p.kernels->workspace_bytes(0), 0u);
  std::vector<uint8_t> y(p.dy.bytes());
  p.dy.download(y.data(), y.size());
  EXPECT_EQ(y, std::vector<uint8_t>(y.size(), 0x11));
}

/// The arguments serving runtimes pass (int64 ids, weights in the model
/// dtype, an expert map with global ids, y == x) give bitwise the y of the
/// plain call on the same values.
TEST(Runtime, ServingArgumentsGiveThePlainResultBitwise) {
  REQUIRE_GPU();
  for (DType d : {BF, FP16, DType::FP32}) {
    SCOPED_TRACE(dtype_name(d));
    Problem p({8, 256, 128, 16, d}, 300, Routing::OutOfRange, 21);
    const int E = p.shape.experts;
    // Weights the model dtype can hold exactly, so both forms carry the same values.
    std::vector<float> rounded(p.routing.weights.size());
    std::vector<uint16_t> model16(p.routing.weights.size());
    for (size_t i = 0; i < rounded.size(); ++i) {
      const float w = p.routing.weights[i];
      model16[i] = d == BF ? testkit::floatToBf16(w) : testkit::floatToHalf(w);
      rounded[i] = d == BF ? testkit::bf16ToFloat(model16[i]) : testkit::halfToFloat(model16[i]);
    }
    if (d == DType::FP32)
      rounded = p.routing.weights;
    p.dweights.upload(rounded.data(), rounded.size() * 4);
    const auto plain = p.run();
    EXPECT_LT(p.error(plain), d == DType::FP32 ? 1e-5 : 1e-2);

    std::vector<int64_t> ids64(p.routing.index.begin(), p.routing.index.end());
    DeviceBuffer d64 = DeviceBuffer::from(ids64);
    MoeArgs a = p.args();
    a.top_k_index = d64.get();
    a.index_type = IndexType::Int64;
    EXPECT_EQ(p.runWith(a), plain) << "int64 ids";

    DeviceBuffer dmodel =
        d == DType::FP32 ? DeviceBuffer::from(rounded) : DeviceBuffer::from(model16);
    a = p.args();
    a.top_k_weights = dmodel.get();
    a.weight_type = WeightType::ModelDType;
    EXPECT_EQ(p.runWith(a), plain) << "weights in the model dtype";

    // Global ids 2e+1 for local expert e; even ids belong to another GPU.
    std::vector<int32_t> map(2 * E), global(p.routing.index.size());
    for (int g = 0; g < 2 * E; ++g)
      map[g] = g % 2 ? g / 2 : -1;
    for (size_t i = 0; i < global.size(); ++i) {
      const int e = p.routing.index[i];
      global[i] = e >= 0 && e < E ? 2 * e + 1 : (e < 0 ? -1 : 2 * E + e);
    }
    global[0] = 0; // global expert 0 lives on another GPU
    DeviceBuffer dmap = DeviceBuffer::from(map), dglobal = DeviceBuffer::from(global);
    std::vector<int32_t> local = p.routing.index;
    local[0] = -1; // what the other GPU's expert contributes here: nothing
    p.dindex.upload(local.data(), local.size() * 4);
    const auto plain_local = p.run();
    a = p.args();
    a.top_k_index = dglobal.get();
    a.expert_map = static_cast<const int32_t *>(dmap.get());
    a.expert_map_size = 2 * E;
    EXPECT_EQ(p.runWith(a), plain_local) << "expert map";
    p.dindex.upload(p.routing.index.data(), p.routing.index.size() * 4);

    // In place: x's buffer receives y.
    EXPECT_EQ(p.runInPlace(), plain) << "y == x";
  }
}

/// One GPU's share of an expert-parallel layer: 2 of 16 global experts
/// under k = 8, so the kernel set's k exceeds its experts. Correct against
/// the fp64 reference of the share, and bitwise the plain call on the ids
/// the map gives.
TEST(Runtime, ExpertMapShareSmallerThanK) {
  REQUIRE_GPU();
  Problem p({8, 256, 128, 2, BF}, 500, Routing::Random, 31);
  const int global_experts = 16, first = 6;
  const testkit::Routing global = testkit::randomRouting(p.tokens, 8, global_experts, 32);
  std::vector<int32_t> map(global_experts, -1), local(global.index.size());
  for (int e = 0; e < p.shape.experts; ++e)
    map[first + e] = e;
  for (size_t i = 0; i < local.size(); ++i)
    local[i] = map[global.index[i]];
  p.routing = {local, global.weights};
  p.dindex.upload(local.data(), local.size() * sizeof(int32_t));
  p.dweights.upload(global.weights.data(), global.weights.size() * sizeof(float));
  const auto plain = p.run();
  EXPECT_LT(p.error(plain), testkit::errorLimit(BF));

  DeviceBuffer dmap = DeviceBuffer::from(map), dglobal = DeviceBuffer::from(global.index);
  MoeArgs a = p.args();
  a.top_k_index = dglobal.get();
  a.expert_map = static_cast<const int32_t *>(dmap.get());
  a.expert_map_size = global_experts;
  EXPECT_EQ(p.runWith(a), plain);
}

/// A run with more GEMM row tiles than one launch holds (about a million
/// tokens here) was refused ("split the batch"); it now runs as calls of
/// the largest T one launch holds. The fp64 reference checks the tokens
/// on both sides of each call's boundary, the first and the last (the
/// reference of every token would take minutes on the host), in the
/// deterministic and the fast mode, and in place.
TEST(Runtime, RunsPastOneLaunchsRowTilesAreSplitIntoCalls) {
  REQUIRE_GPU();
  const MoeShape shape{8, 64, 64, 8, BF};
  const runtime::Plan plan =
      runtime::heuristicPlan(shape, moejit::unwrapOrThrow(Arch::parse(runtime().arch())));
  int64_t per_call = 0;
  for (int64_t t = 1 << 16; !per_call; t *= 2) {
    auto layout =
        runtime::runLayout(shape, plan, Combine::Deterministic, t, runtime::maxTokens(shape));
    ASSERT_TRUE(static_cast<bool>(layout)) << errorMessage(layout.takeError());
    if (layout->call_tokens < t)
      per_call = layout->call_tokens;
  }
  const int64_t tokens = 2 * per_call + 777; // three calls, the last short
  Problem p(shape, tokens, Routing::Random, 41);
  std::vector<int64_t> checked;
  for (int64_t boundary : {int64_t{0}, per_call, 2 * per_call, tokens})
    for (int64_t t = boundary - 40; t < boundary + 40; ++t)
      if (t >= 0 && t < tokens && (checked.empty() || t > checked.back()))
        checked.push_back(t);
  // The reference of the checked tokens alone (every token is independent).
  const size_t row = size_t(shape.hidden) * dtype_bytes(shape.dtype);
  testkit::HostTensor x;
  x.dtype = shape.dtype;
  testkit::Routing routing;
  for (int64_t t : checked) {
    x.bytes.insert(x.bytes.end(), p.x.bytes.begin() + t * row, p.x.bytes.begin() + (t + 1) * row);
    for (int s = 0; s < shape.k; ++s) {
      routing.index.push_back(p.routing.index[t * shape.k + s]);
      routing.weights.push_back(p.routing.weights[t * shape.k + s]);
    }
  }
  const std::vector<double> want =
      testkit::referenceMoe(shape, checked.size(), x, p.gate_up, p.down, routing);
  auto checkedError = [&](const std::vector<uint8_t> &y) {
    testkit::HostTensor out;
    out.dtype = shape.dtype;
    for (int64_t t : checked)
      out.bytes.insert(out.bytes.end(), y.begin() + t * row, y.begin() + (t + 1) * row);
    return testkit::relativeError(testkit::toDoubles(out), want);
  };
  for (Combine mode : {Combine::Deterministic, Combine::Fast}) {
    p.useCombine(mode);
    EXPECT_GE(p.dworkspace.bytes(), p.kernels->workspace_bytes(per_call));
    const std::vector<uint8_t> y = p.run();
    EXPECT_LT(checkedError(y), testkit::errorLimit(BF)) << static_cast<int>(mode);
    EXPECT_LT(checkedError(p.runInPlace()), testkit::errorLimit(BF)) << static_cast<int>(mode);
    if (mode == Combine::Deterministic)
      EXPECT_EQ(p.run(), y) << "bitwise repeatable";
  }
  // Part of a call reruns on the last call's workspace layout, which is
  // not the other calls' layout: refused for a split run.
  auto impl = std::dynamic_pointer_cast<const runtime::KernelSetImpl>(p.kernels);
  ASSERT_TRUE(impl);
  llvm::Error part = impl->enqueue(p.args(), nullptr, runtime::kGemm1);
  ASSERT_TRUE(static_cast<bool>(part));
  EXPECT_NE(errorMessage(std::move(part)).find("parts of a call need one call"), std::string::npos);
}

TEST(Runtime, ConcurrentGetsBuildOnce) {
  REQUIRE_GPU();
  const MoeShape s{3, 96, 48, 6, DType::FP16};
  std::vector<std::shared_ptr<const KernelSet>> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] { got[i] = runtime().get(s); });
  for (auto &t : threads)
    t.join();
  for (const auto &k : got)
    EXPECT_EQ(k.get(), got.front().get());
}

TEST(Runtime, GetIsSharedAndReportsResources) {
  REQUIRE_GPU();
  const MoeShape s{2, 64, 32, 4, BF};
  auto a = runtime().get(s);
  auto b = runtime().get(s);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->workload_id(), workload_id(s));
  for (const KernelInfo &k : a->kernels()) {
    EXPECT_GT(k.registers, 0) << k.name;
    EXPECT_EQ(k.spill_bytes, 0) << k.name;
  }
  EXPECT_THROW(runtime().get({0, 64, 32, 4, BF}), Error);
}

// A call leaves the caller's thread on the context it had: none here, as
// on a thread that never touched CUDA (the CUDA runtime, and torch, take
// their current device from it). Loading a kernel set and running one
// both enter the device's primary context and leave it.
TEST(Runtime, CallsLeaveTheCallersContextAsItWas) {
  REQUIRE_GPU();
  Problem p({3, 88, 40, 5, BF}, 37, Routing::Random, 11);
  const auto expected = p.run();
  auto current = [] {
    CUcontext c = nullptr;
    EXPECT_EQ(driver::loaded().cuCtxGetCurrent(&c), CUDA_SUCCESS);
    return c;
  };
  p.dy.fill(0xff);
  std::thread bare([&] {
    ASSERT_EQ(current(), nullptr);
    // (An exception escaping a thread would end the whole binary.)
    EXPECT_NO_THROW(runtime().get({3, 96, 40, 5, BF})); // a shape no other test loads
    EXPECT_EQ(current(), nullptr);
    EXPECT_NO_THROW(p.kernels->run(p.args(), nullptr));
    EXPECT_EQ(current(), nullptr);
  });
  bare.join();
  EXPECT_EQ(p.output(), expected);
}

// A shape's modes are kernel sets of their own: fast ones add into y with
// GEMM2s of their own and have no combine kernel; batch-invariant ones use
// one plan for every T.
TEST(Combine, ModesAreSeparateKernelSets) {
  REQUIRE_GPU();
  const MoeShape s{8, 512, 256, 64, BF};
  auto deterministic = runtime(Combine::Deterministic).get(s);
  auto fast = runtime(Combine::Fast).get(s);
  auto invariant = runtime(Combine::BatchInvariant).get(s);
  EXPECT_NE(deterministic.get(), fast.get());
  EXPECT_NE(deterministic.get(), invariant.get());
  EXPECT_EQ(fast->combine(), Combine::Fast);
  auto has = [](const KernelSet &k, const std::string &part) {
    for (const KernelInfo &info : k.kernels())
      if (info.name.find(part) != std::string::npos)
        return true;
    return false;
  };
  EXPECT_TRUE(has(*deterministic, "moe_combine_"));
  EXPECT_FALSE(has(*deterministic, "_addy"));
  EXPECT_FALSE(has(*fast, "moe_combine_"));
  EXPECT_TRUE(has(*fast, "_addy"));
  EXPECT_LT(fast->workspace_bytes(4096), deterministic->workspace_bytes(4096));
  const std::vector<BucketPlan> plan = invariant->plan();
  for (const BucketPlan &b : plan) {
    EXPECT_EQ(b.gemm1, plan.back().gemm1);
    EXPECT_EQ(b.gemm2, plan.back().gemm2);
  }
  EXPECT_EQ(deterministic->plan().back().gemm2, plan.back().gemm2);
}

// Fast mode where y == x: y is zeroed only after GEMM1 has read x. And with
// an expert map whose experts all live elsewhere: y is zero.
TEST(Combine, FastInPlaceAndWithNoLocalExpert) {
  REQUIRE_GPU();
  for (DType d : {BF, FP16, FP32}) {
    SCOPED_TRACE(dtype_name(d));
    Problem p({8, 256, 128, 16, d}, 3000, Routing::Random, 31);
    p.useCombine(Combine::Fast);
    EXPECT_LT(p.error(p.runInPlace()), testkit::errorLimit(d)) << "y == x";

    std::vector<int32_t> elsewhere(p.shape.experts, -1);
    DeviceBuffer dmap = DeviceBuffer::from(elsewhere);
    MoeArgs a = p.args();
    a.expert_map = static_cast<const int32_t *>(dmap.get());
    a.expert_map_size = p.shape.experts;
    const std::vector<uint8_t> y = p.runWith(a);
    EXPECT_EQ(y, std::vector<uint8_t>(y.size(), 0)) << "no local expert";
  }
}

// GEMM2's staged warp-specialised kernels write partial in sorted order,
// blocked by their column tiles (moejit_abi::partial_block_offset), one or
// two bulk copies per warpgroup, and the combine reads it back through the
// routing's sorted rows: every GEMM2 tile width, shapes whose last column
// tile is short (H = 1032, 264), tails of every length 1..64, one hot
// expert, out-of-range ids. Deterministic and batch-invariant y must be the
// bits of the same GEMM2 unstaged (rows by assignment: the same products,
// rounded the same), on a workspace poisoned before each run (a row left
// unwritten reads as NaN); fast mode (rows added into y) within the limit.
TEST(Combine, BlockedPartialAtEveryGemm2Width) {
  REQUIRE_GPU();
  if (!moejit::unwrapOrThrow(Arch::parse(runtime().arch())).hasWgmma())
    GTEST_SKIP() << "warp-specialised GEMMs need sm_90a, the GPU is " << runtime().arch();
  using codegen::GemmKind, codegen::swapTile, codegen::wsTile;
  const codegen::TileConfig gemm1 = swapTile(64, 9, GemmKind::Gemm1);
  const std::pair<int, int> gemm2s[] = {{64, 6}, {128, 4}, {192, 4}, {256, 3}}; // bn, stages
  for (const Case &c : {Case{2, 1032, 584, 8, BF, 2000},
                        Case{1, 264, 200, 64, FP16, tailTokens(64), Routing::Tails},
                        Case{4, 256, 128, 16, BF, 1000, Routing::OneExpert},
                        Case{8, 256, 128, 64, BF, 1000, Routing::OutOfRange}}) {
    SCOPED_TRACE(caseName(::testing::TestParamInfo<Case>(c, 0)));
    Problem p({c.k, c.hidden, c.intermediate, c.experts, c.dtype}, c.tokens, c.routing,
              3000 + c.tokens);
    for (const auto &[bn, stages] : gemm2s) {
      const runtime::GemmPlan blocked{gemm1, wsTile(bn, stages, true)};
      const runtime::GemmPlan by_row{gemm1, wsTile(bn, stages, false)};
      ASSERT_TRUE((
          codegen::KernelSpec{codegen::KernelKind::Gemm2, p.shape, blocked.gemm2}.blocksPartial()));
      for (Combine mode : kModes) {
        SCOPED_TRACE(blocked.gemm2.suffix() + ", combine " + combine_name(mode));
        p.usePlan(blocked, mode);
        p.dworkspace.fill(0xff);
        const std::vector<uint8_t> y = p.run();
        EXPECT_LT(p.error(y), testkit::errorLimit(c.dtype));
        if (mode == Combine::Fast)
          continue;
        p.usePlan(by_row, mode);
        p.dworkspace.fill(0xff);
        EXPECT_EQ(p.run(), y) << "blocked and by-row partial differ";
      }
    }
  }
}

// Batch-invariant mode: one token's y row is the same bits in batches of 1
// to 8192 tokens, at different places among different random tokens.
TEST(Combine, BatchInvariantTokenIsTheSameInEveryBatch) {
  REQUIRE_GPU();
  for (const MoeShape s : {MoeShape{8, 512, 256, 64, BF}, MoeShape{8, 2048, 768, 128, BF}}) {
    SCOPED_TRACE(canonical_text(s));
    auto kernels = runtime(Combine::BatchInvariant).get(s);
    const int64_t most = 8192;
    const size_t row = s.hidden * dtype_bytes(s.dtype);
    const auto gate_up =
        testkit::randomTensor(s.dtype, size_t(s.experts) * 2 * s.intermediate * s.hidden,
                              1.0f / std::sqrt(float(s.hidden)), 41);
    const auto down = testkit::randomTensor(s.dtype, size_t(s.experts) * s.hidden * s.intermediate,
                                            1.0f / std::sqrt(float(s.intermediate)), 42);
    DeviceBuffer dgu = DeviceBuffer::from(gate_up.bytes), ddown = DeviceBuffer::from(down.bytes);
    DeviceBuffer workspace(kernels->workspace_bytes(most));
    const auto token = testkit::randomTensor(s.dtype, s.hidden, 1.0f, 43);
    const testkit::Routing token_routing = testkit::randomRouting(1, s.k, s.experts, 44);
    std::vector<uint8_t> first;
    for (int64_t T : {1, 2, 5, 64, 100, 777, 1000, 2048, 4096, 8192}) {
      auto x = testkit::randomTensor(s.dtype, T * s.hidden, 1.0f, 45 + T);
      testkit::Routing routing = testkit::randomRouting(T, s.k, s.experts, 46 + T);
      const int64_t at = T * 7 / 11; // a different place in each batch
      std::memcpy(x.bytes.data() + at * row, token.bytes.data(), row);
      for (int j = 0; j < s.k; ++j) {
        routing.index[at * s.k + j] = token_routing.index[j];
        routing.weights[at * s.k + j] = token_routing.weights[j];
      }
      DeviceBuffer dx = DeviceBuffer::from(x.bytes), dindex = DeviceBuffer::from(routing.index),
                   dweights = DeviceBuffer::from(routing.weights), dy(T * row);
      dy.fill(0xff);
      kernels->run(testkit::moeArgs(dx, dgu, ddown, dindex, dweights, dy, T, workspace), nullptr);
      Problem::throwIfErrorSync();
      std::vector<uint8_t> y(T * row);
      dy.download(y.data(), y.size());
      const std::vector<uint8_t> mine(y.begin() + at * row, y.begin() + (at + 1) * row);
      if (first.empty())
        first = mine;
      EXPECT_EQ(mine, first) << "the token's y in a batch of " << T;
    }
  }
}

} // namespace
