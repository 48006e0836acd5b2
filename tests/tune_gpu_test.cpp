// The autotuner and the runtime's tuning modes on a GPU: records are valid
// and usable, first-use tuning saves one, the lookup order holds, tuned
// kernel sets match the fp64 reference, no-compile mode fails typed.
// Without a GPU each test skips with the reason.
#include "common/error.h"
#include "driver/driver.h"
#include "gpu_required.h"
#include "nvrtc/compile.h"
#include "testkit.h"
#include "tune/autotune.h"
#include "tune/plan_lookup.h"
#include "tune/record.h"
#include "workload/shape.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>

using namespace moejit;
using testkit::DeviceBuffer;

namespace {

const MoeShape kSmall{2, 256, 128, 8, DType::BF16};

/// Relative error of `kernels` against the fp64 reference at `tokens`.
double errorAgainstReference(const KernelSet &kernels, int64_t tokens, uint64_t seed) {
  const MoeShape &s = kernels.shape();
  auto x = testkit::randomTensor(s.dtype, tokens * s.hidden, 1.0f, seed);
  auto gu = testkit::randomTensor(s.dtype, size_t(s.experts) * 2 * s.intermediate * s.hidden,
                                  1.0f / std::sqrt(float(s.hidden)), seed + 1);
  auto down = testkit::randomTensor(s.dtype, size_t(s.experts) * s.hidden * s.intermediate,
                                    1.0f / std::sqrt(float(s.intermediate)), seed + 2);
  auto routing = testkit::randomRouting(tokens, s.k, s.experts, seed + 3);
  DeviceBuffer dx = DeviceBuffer::from(x.bytes), dgu = DeviceBuffer::from(gu.bytes),
               ddown = DeviceBuffer::from(down.bytes), di = DeviceBuffer::from(routing.index),
               dw = DeviceBuffer::from(routing.weights),
               dy(tokens * s.hidden * dtype_bytes(s.dtype)), ws(kernels.workspace_bytes(tokens));
  dy.fill(0xff);
  kernels.run(testkit::moeArgs(dx, dgu, ddown, di, dw, dy, tokens, ws), nullptr);
  testkit::HostTensor y;
  y.dtype = s.dtype;
  y.bytes.resize(dy.bytes());
  dy.download(y.bytes.data(), y.bytes.size());
  return testkit::relativeError(testkit::toDoubles(y),
                                testkit::referenceMoe(s, tokens, x, gu, down, routing));
}

/// Device 0 and its NVRTC target.
std::pair<driver::Device, Arch> device0() {
  auto d = unwrapOrThrow(driver::Device::open(0));
  return {d, unwrapOrThrow(Arch::parse(nvrtc::archForComputeCapability(d.cc_major, d.cc_minor)))};
}

TEST(Autotune, RecordIsCompleteValidAndNeverSlowerThanTheHeuristic) {
  REQUIRE_GPU();
  const auto [device, arch] = device0();
  testkit::TempDir dir("moejit-tune-gpu");
  store::CubinStore store(dir.path);
  tune::TuneOptions options;
  options.buckets = {0, 9};
  auto record = tune::autotune(device, arch, kSmall, store, options);
  ASSERT_TRUE(static_cast<bool>(record)) << errorMessage(record.takeError());
  EXPECT_EQ(record->workload_id, workload::workloadId(kSmall));
  EXPECT_EQ(record->gpu, device.name);
  EXPECT_EQ(record->moejit_version, version());
  ASSERT_EQ(record->buckets.size(), static_cast<size_t>(runtime::kBucketCount));
  EXPECT_GT(record->candidates, 20);
  for (int b : {0, 9}) {
    const tune::BucketRecord &r = record->buckets[b];
    EXPECT_GT(r.ms, 0) << b;
    EXPECT_GT(r.heuristic_ms, 0) << b;
    // The heuristic's plan is a finalist timed alongside: the winner is
    // never slower by the tuner's own measurement.
    EXPECT_LE(r.ms, r.heuristic_ms) << b;
  }
  EXPECT_EQ(record->buckets[5].ms, 0); // not tuned: the heuristic's, untimed
  auto parsed = tune::parseRecord(tune::toJson(*record));
  ASSERT_TRUE(static_cast<bool>(parsed)) << errorMessage(parsed.takeError());
  auto plan = tune::planFromRecord(*parsed, kSmall, arch);
  ASSERT_TRUE(static_cast<bool>(plan)) << errorMessage(plan.takeError());
  EXPECT_EQ(plan->buckets[9], record->buckets[9].choice);
}

TEST(Autotune, EveryDtypeTunesToAPlanThatMatchesTheReference) {
  REQUIRE_GPU();
  const auto [device, arch] = device0();
  testkit::TempDir dir("moejit-tune-gpu");
  const std::string root = dir.path;
  for (DType dtype : {DType::FP16, DType::FP32}) {
    MoeShape shape = kSmall;
    shape.dtype = dtype;
    store::CubinStore store(root);
    tune::TuneOptions options;
    options.buckets = {5};
    auto record = tune::autotune(device, arch, shape, store, options);
    ASSERT_TRUE(static_cast<bool>(record))
        << dtype_name(dtype) << ": " << errorMessage(record.takeError());
    EXPECT_GT(record->buckets[5].ms, 0) << dtype_name(dtype);
    ASSERT_FALSE(tune::saveRecord(root, *record));
    RuntimeOptions options_records;
    options_records.cache_dir = root;
    Runtime rt(0, options_records);
    auto set = rt.get(shape);
    EXPECT_EQ(set->plan_source().rfind("tuning record", 0), 0u) << set->plan_source();
    for (int64_t tokens : {20, 32})
      EXPECT_LT(errorAgainstReference(*set, tokens, 70 + tokens), testkit::errorLimit(dtype))
          << dtype_name(dtype) << " T=" << tokens;
  }
}

TEST(Autotune, FirstUseTunesSavesAndLaterRuntimesUseTheRecord) {
  REQUIRE_GPU();
  testkit::TempDir dir("moejit-tune-gpu");
  const std::string root = dir.path;
  RuntimeOptions first;
  first.cache_dir = root;
  first.tuning = Tuning::FirstUse;
  Runtime rt(0, first);
  auto tuned = rt.get(kSmall);
  EXPECT_EQ(tuned->plan_source(), "autotuned");
  const std::string path =
      tune::recordPath(root, workload::workloadId(kSmall), rt.device_name(), version());
  EXPECT_TRUE(llvm::sys::fs::exists(path)) << path;
  for (int64_t tokens : {1, 100, 1000})
    EXPECT_LT(errorAgainstReference(*tuned, tokens, 40 + tokens), testkit::errorLimit(kSmall.dtype))
        << tokens;

  RuntimeOptions records;
  records.cache_dir = root;
  records.tuning = Tuning::Records;
  Runtime later(0, records);
  auto set = later.get(kSmall);
  EXPECT_EQ(set->plan_source(), "tuning record " + path);
  const auto a = tuned->plan(), b = set->plan();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].gemm1, b[i].gemm1);
    EXPECT_EQ(a[i].gemm2, b[i].gemm2);
  }
  // Every kernel of the tuned plan was compiled while tuning.
  EXPECT_EQ(later.cache_stats().compiles, 0u);

  RuntimeOptions heuristic = records;
  heuristic.tuning = Tuning::Heuristic;
  EXPECT_EQ(Runtime(0, heuristic).get(kSmall)->plan_source(), "heuristic");
}

TEST(Runtime, NoCompileMissIsTypedAndWarmedCacheLoads) {
  REQUIRE_GPU();
  testkit::TempDir dir("moejit-tune-gpu");
  const std::string root = dir.path;
  RuntimeOptions strict;
  strict.cache_dir = root;
  strict.no_compile = true;
  strict.tuning = Tuning::Heuristic;
  try {
    Runtime(0, strict).get(kSmall);
    FAIL() << "get() compiled in no-compile mode";
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), ErrorCode::CacheMiss);
    EXPECT_NE(std::string(e.what()).find(workload::workloadId(kSmall)), std::string::npos)
        << e.what();
  }
  RuntimeOptions warm = strict;
  warm.no_compile = false;
  warm.tuning = Tuning::Records; // another slot: a fresh build
  Runtime warmer(0, warm);
  warmer.get(kSmall);
  const CacheStats s = warmer.cache_stats();
  EXPECT_GT(s.compiles, 0u);
  EXPECT_EQ(s.misses, s.compiles);
  strict.tuning = Tuning::Records;
  // The same slot as `warmer`: already loaded, no cache traffic at all.
  EXPECT_NO_THROW(Runtime(0, strict).get(kSmall));
}

} // namespace
