#include "tune/autotune.h"

#include "common/error.h"
#include "common/log.h"
#include "nvrtc/compile.h"
#include "runtime/arch_tiles.h"
#include "runtime/builder.h"
#include "runtime/launch_sequence.h"
#include "tune/candidates.h"
#include "tune/device_data.h"
#include "workload/shape.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <set>

namespace moejit::tune {

using codegen::GemmKind;
using codegen::KernelKind;
using codegen::KernelSpec;
using codegen::TileConfig;
using runtime::GemmPlan;
using runtime::LoadedKernel;

namespace {

constexpr size_t kFlushBytes = size_t{512} << 20; // > the H200's 50 MB L2
constexpr int kMinRuns = 3, kMaxRuns = 15;
constexpr int64_t kMaxGridY = 65535;

/// A candidate that compiled, loaded, and passed the check.
struct Candidate {
  TileConfig tile;
  LoadedKernel kernel;
  bool checked = false;
};

/// Everything the timing loops share.
class Tuner {
public:
  Tuner(const driver::Device &device, const Arch &arch, const MoeShape &shape,
        store::CubinStore &store, const TuneOptions &options)
      : device_(device), arch_(arch), shape_(shape), store_(store), options_(options) {}
  ~Tuner();

  llvm::Expected<TuningRecord> run();

private:
  void say(const std::string &line) const {
    logger().info("tune: {}", line);
    if (options_.progress)
      options_.progress(line);
  }
  llvm::Error buildAll();
  llvm::Error allocate(int64_t max_tokens);
  llvm::Error checkCandidates();
  llvm::Expected<double> checkPair(const Candidate &g1, const Candidate &g2,
                                   const std::vector<float> &reference);
  /// Median ms of `enqueue` over runs, each after an L2 flush.
  llvm::Expected<double> timeIt(const std::function<llvm::Error()> &enqueue);
  /// Median ms of each of `enqueues`, run in alternation so that the
  /// card's clock drift hits them alike.
  llvm::Expected<std::vector<double>>
  timeInterleaved(const std::vector<std::function<llvm::Error()>> &enqueues);
  llvm::Error timedRun(EventPair &events, const std::function<llvm::Error()> &enqueue, int round);
  /// `previous`: the winner of the bucket tuned before (the next larger:
  /// tuningOrder), or null.
  llvm::Expected<BucketRecord> tuneBucket(int bucket, const GemmPlan *previous);
  /// Args for `tokens` tokens over the shared buffers (routing uploaded).
  MoeArgs args(int64_t tokens) const;
  llvm::Error enqueueStage(const GemmPlan &plan, int64_t tokens, unsigned stages);
  const Candidate *find(GemmKind kind, const TileConfig &tile) const;

  const driver::Device &device_;
  const Arch arch_;
  const MoeShape shape_;
  store::CubinStore &store_;
  const TuneOptions &options_;

  runtime::ModuleSet modules_;
  runtime::RoutingKernels routing_;
  const LoadedKernel *combine_ = nullptr, *reference_h_ = nullptr, *reference_y_ = nullptr;
  std::vector<runtime::BuiltKernel> kept_; // owns the loaded entries' leases
  std::vector<LoadedKernel> fixed_;
  std::vector<Candidate> gemm1_, gemm2_;
  int tried_ = 0, failed_ = 0;

  DeviceMemory x_, gate_up_, down_, index_, weights_, y_, workspace_, flush_, h_ref_, y_ref_;
  CUstream stream_ = nullptr;
};

Tuner::~Tuner() {
  if (stream_)
    driver::loaded().cuStreamDestroy(stream_);
}

const Candidate *Tuner::find(GemmKind kind, const TileConfig &tile) const {
  for (const Candidate &c : kind == GemmKind::Gemm1 ? gemm1_ : gemm2_)
    if (c.tile == tile)
      return &c;
  return nullptr;
}

llvm::Error Tuner::buildAll() {
  const auto start = std::chrono::steady_clock::now();
  std::vector<KernelSpec> specs = runtime::fixedSpecs(shape_);
  for (KernelKind k : {KernelKind::ReferenceH, KernelKind::ReferenceY})
    specs.push_back({k, shape_, {}});
  const size_t fixed = specs.size();
  const std::vector<TileConfig> c1 = gemmCandidates(shape_, arch_, GemmKind::Gemm1);
  const std::vector<TileConfig> c2 = gemmCandidates(shape_, arch_, GemmKind::Gemm2);
  for (const TileConfig &t : c1)
    specs.push_back({KernelKind::Gemm1, shape_, t});
  for (const TileConfig &t : c2)
    specs.push_back({KernelKind::Gemm2, shape_, t});
  tried_ = static_cast<int>(c1.size() + c2.size());

  std::vector<runtime::BuildResult> built = runtime::buildEach(specs, arch_, store_);
  for (size_t i = 0; i < built.size(); ++i) {
    runtime::BuildResult &r = built[i];
    const std::string name = r.kernel.spec.name();
    std::string why = r.error;
    LoadedKernel kernel;
    // Spilling GEMMs are slow by construction: not worth timing.
    if (i >= fixed && r.ok() && r.kernel.entry.meta.spill_bytes > 0)
      why = fmt::format("spills {} bytes", r.kernel.entry.meta.spill_bytes);
    if (why.empty()) {
      auto loaded = modules_.load(r.kernel);
      if (loaded)
        kernel = *loaded;
      else
        why = errorMessage(loaded.takeError());
    }
    if (i < fixed) {
      if (!why.empty()) // routing, combine and reference are not optional
        return makeError(ErrorCode::CompileFailed, "tune: {}: {}", name, why);
      fixed_.push_back(kernel);
      continue;
    }
    if (!why.empty()) {
      ++failed_;
      say(fmt::format("failed: {}: {}", name, why.substr(0, why.find('\n'))));
      continue;
    }
    (specs[i].kind == KernelKind::Gemm1 ? gemm1_ : gemm2_).push_back({specs[i].tile, kernel});
    kept_.push_back(std::move(r.kernel));
  }
  auto fixedKernel = [&](KernelKind kind) -> const LoadedKernel * {
    for (size_t i = 0; i < fixed; ++i)
      if (specs[i].kind == kind)
        return &fixed_[i];
    return nullptr;
  };
  routing_ = {fixedKernel(KernelKind::RouteCount), fixedKernel(KernelKind::RouteScan),
              fixedKernel(KernelKind::RouteScatter), fixedKernel(KernelKind::RouteBlock),
              fixedKernel(KernelKind::RouteWide)};
  combine_ = fixedKernel(KernelKind::Combine);
  reference_h_ = fixedKernel(KernelKind::ReferenceH);
  reference_y_ = fixedKernel(KernelKind::ReferenceY);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  say(fmt::format("{} GEMM1 and {} GEMM2 configs: {} built and loaded, {} failed ({:.1f} s)",
                  c1.size(), c2.size(), gemm1_.size() + gemm2_.size(), failed_, s));
  return llvm::Error::success();
}

llvm::Error Tuner::allocate(int64_t max_tokens) {
  const MoeShape &s = shape_;
  const size_t elem = dtype_bytes(s.dtype);
  const int64_t check = options_.check_tokens;
  const int64_t tokens = std::max(max_tokens, check);
  // Workspace for the largest T with the shortest row tile (most tiles).
  int min_bm = codegen::kSimtTile;
  for (const auto *list : {&gemm1_, &gemm2_})
    for (const Candidate &c : *list)
      min_bm = std::min(min_bm, c.tile.bm);
  const size_t workspace =
      runtime::workspaceLayout(s, runtime::launchGeometry(s, tokens, min_bm)).total;
  struct Want {
    DeviceMemory *memory;
    size_t bytes;
  } wants[] = {
      {&x_, elem * tokens * s.hidden},
      {&gate_up_, elem * s.experts * 2 * s.intermediate * s.hidden},
      {&down_, elem * s.experts * s.hidden * s.intermediate},
      {&index_, sizeof(int32_t) * tokens * s.k},
      {&weights_, sizeof(float) * tokens * s.k},
      {&y_, elem * tokens * s.hidden},
      {&workspace_, workspace},
      {&flush_, kFlushBytes},
      {&h_ref_, sizeof(float) * check * s.k * s.intermediate},
      {&y_ref_, sizeof(float) * check * s.hidden},
  };
  for (const Want &w : wants) {
    auto m = DeviceMemory::allocate(w.bytes);
    if (!m)
      return m.takeError();
    *w.memory = std::move(*m);
  }
  // Inputs scaled so h and y stay O(1) whatever the shape.
  if (llvm::Error e = fillRandom(x_, s.dtype, 1.0f, 11))
    return e;
  if (llvm::Error e = fillRandom(gate_up_, s.dtype, 1.0f / std::sqrt(float(s.hidden)), 12))
    return e;
  if (llvm::Error e = fillRandom(down_, s.dtype, 1.0f / std::sqrt(float(s.intermediate)), 13))
    return e;
  MOEJIT_CU(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  return llvm::Error::success();
}

MoeArgs Tuner::args(int64_t tokens) const {
  MoeArgs a;
  a.x = x_.get();
  a.gate_up_proj = gate_up_.get();
  a.down_proj = down_.get();
  a.top_k_index = static_cast<const int32_t *>(index_.get());
  a.top_k_weights = static_cast<const float *>(weights_.get());
  a.y = y_.get();
  a.tokens = tokens;
  a.workspace = workspace_.get();
  a.workspace_bytes = workspace_.bytes();
  return a;
}

llvm::Error Tuner::enqueueStage(const GemmPlan &plan, int64_t tokens, unsigned stages) {
  const runtime::LaunchGeometry geo =
      runtime::launchGeometry(shape_, tokens, runtime::tileRows(shape_, plan));
  const runtime::LaunchParams p =
      runtime::launchParams(args(tokens), runtime::workspaceLayout(shape_, geo), geo);
  const Candidate *g1 = stages & runtime::kGemm1 ? find(GemmKind::Gemm1, plan.gemm1) : nullptr;
  // The combine reads partial in the layout of the plan's GEMM2: it needs
  // that kernel too.
  const Candidate *g2 = stages & (runtime::kGemm2 | runtime::kCombine)
                            ? find(GemmKind::Gemm2, plan.gemm2)
                            : nullptr;
  const runtime::CallKernels kernels{routing_, g1 ? &g1->kernel : nullptr,
                                     g2 ? &g2->kernel : nullptr, combine_};
  return runtime::enqueueCall(shape_, kernels, plan, geo, p, stages, stream_);
}

llvm::Expected<double> Tuner::checkPair(const Candidate &g1, const Candidate &g2,
                                        const std::vector<float> &reference) {
  const int64_t T = options_.check_tokens;
  // NaN in every dtype: an element left unwritten fails the check.
  MOEJIT_CU(cuMemsetD8Async(y_.address(), 0xff, y_.bytes(), stream_));
  if (llvm::Error e = enqueueStage({g1.tile, g2.tile}, T, runtime::kAllStages))
    return e;
  MOEJIT_CU(cuStreamSynchronize(stream_));
  auto y = downloadAsFloat(y_, shape_.dtype, T * shape_.hidden);
  if (!y)
    return y.takeError();
  return relativeError(*y, reference);
}

llvm::Error Tuner::checkCandidates() {
  const int64_t T = options_.check_tokens;
  if (llvm::Error e = uploadRouting(index_, weights_, T, shape_.k, shape_.experts, 99))
    return e;
  // The plain GPU reference (fp32 math) of y for the check tokens.
  if (llvm::Error e = runtime::enqueueReference(shape_, *reference_h_, *reference_y_, args(T),
                                                h_ref_.get(), y_ref_.get(), stream_))
    return e;
  MOEJIT_CU(cuStreamSynchronize(stream_));
  auto reference = downloadAsFloat(y_ref_, DType::FP32, T * shape_.hidden);
  if (!reference)
    return reference.takeError();

  // Each config runs paired with a partner of the same bm: one already
  // cleared, else the first in the list (the heuristic's configs come
  // first). A pair within the error limit clears both.
  const double limit = errorLimit(shape_.dtype);
  auto partner = [&](std::vector<Candidate> &list, int bm) -> Candidate * {
    Candidate *first = nullptr;
    for (Candidate &c : list)
      if (c.tile.bm == bm || shape_.dtype == DType::FP32) {
        if (c.checked)
          return &c;
        if (!first)
          first = &c;
      }
    return first;
  };
  int passed = 0, failed = 0;
  for (bool first_gemm : {true, false}) {
    std::vector<Candidate> &list = first_gemm ? gemm1_ : gemm2_;
    std::vector<Candidate> &others = first_gemm ? gemm2_ : gemm1_;
    for (Candidate &c : list) {
      if (c.checked) { // cleared as an earlier config's partner
        ++passed;
        continue;
      }
      Candidate *other = partner(others, c.tile.bm);
      std::string why;
      if (!other) {
        why = "no config of the other GEMM with the same bm";
      } else {
        auto error =
            first_gemm ? checkPair(c, *other, *reference) : checkPair(*other, c, *reference);
        if (!error) // e.g. a launch refused for its resources
          why = errorMessage(error.takeError());
        else if (*error < limit) {
          c.checked = other->checked = true;
          ++passed;
          continue;
        } else
          why = fmt::format("relative error {:.3g} over the limit {:.3g}", *error, limit);
      }
      ++failed;
      say(fmt::format("failed check: {} {}: {}", first_gemm ? "gemm1" : "gemm2", c.tile.suffix(),
                      why));
    }
  }
  failed_ += failed;
  say(fmt::format("checked at T={} against the GPU reference: {} passed, {} failed", T, passed,
                  failed));
  for (auto *list : {&gemm1_, &gemm2_})
    std::erase_if(*list, [](const Candidate &c) { return !c.checked; });
  if (gemm1_.empty() || gemm2_.empty())
    return makeError(ErrorCode::Internal, "tune: no config of {} passed the check",
                     workload::canonicalText(shape_));
  return llvm::Error::success();
}

llvm::Expected<double> Tuner::timeIt(const std::function<llvm::Error()> &enqueue) {
  auto ms = timeInterleaved({enqueue});
  if (!ms)
    return ms.takeError();
  return ms->front();
}

llvm::Expected<std::vector<double>>
Tuner::timeInterleaved(const std::vector<std::function<llvm::Error()>> &enqueues) {
  const size_t n = enqueues.size();
  // One warm-up round, synchronised, also says how many rounds fit the
  // budget; then every round is enqueued back to back, each run after an L2
  // flush, and the stream synchronised once.
  std::vector<EventPair> warm(n);
  for (size_t j = 0; j < n; ++j)
    if (llvm::Error e = timedRun(warm[j], enqueues[j], 0))
      return e;
  MOEJIT_CU(cuStreamSynchronize(stream_));
  double round_ms = 0;
  for (EventPair &w : warm) {
    auto ms = w.elapsed();
    if (!ms)
      return ms.takeError();
    round_ms += *ms + 0.2; // + the flush
  }
  const int runs =
      std::clamp(static_cast<int>(options_.target_ms * n / round_ms), kMinRuns, kMaxRuns);
  std::vector<std::vector<EventPair>> events(n);
  for (auto &e : events)
    e.resize(runs);
  for (int i = 0; i < runs; ++i)
    for (size_t j = 0; j < n; ++j)
      if (llvm::Error e = timedRun(events[j][i], enqueues[j], i + 1))
        return e;
  MOEJIT_CU(cuStreamSynchronize(stream_));
  std::vector<double> medians;
  for (auto &list : events) {
    std::vector<double> times;
    for (EventPair &p : list) {
      auto ms = p.elapsed();
      if (!ms)
        return ms.takeError();
      times.push_back(*ms);
    }
    std::sort(times.begin(), times.end());
    medians.push_back(times[times.size() / 2]);
  }
  return medians;
}

llvm::Error Tuner::timedRun(EventPair &events, const std::function<llvm::Error()> &enqueue,
                            int round) {
  if (llvm::Error e = events.create())
    return e;
  MOEJIT_CU(cuMemsetD8Async(flush_.address(), round & 0xff, kFlushBytes, stream_));
  MOEJIT_CU(cuEventRecord(events.start, stream_));
  if (llvm::Error e = enqueue())
    return e;
  MOEJIT_CU(cuEventRecord(events.stop, stream_));
  return llvm::Error::success();
}

llvm::Expected<BucketRecord> Tuner::tuneBucket(int bucket, const GemmPlan *previous) {
  const int64_t T = runtime::bucketTokens(bucket);
  const double rows = static_cast<double>(T) * shape_.k / shape_.experts;
  BucketRecord record;
  record.bucket = bucket;
  record.tokens = T;
  const GemmPlan heuristic = runtime::heuristicPlan(shape_, arch_).buckets[bucket];
  if (llvm::Error e = uploadRouting(index_, weights_, T, shape_.k, shape_.experts, 1000 + bucket))
    return e;

  // Per row tile: each GEMM's fastest config, timed alone over one routing.
  struct Best {
    double ms = INFINITY;
    const Candidate *candidate = nullptr;
  };
  // Row tiles that both GEMMs have a config worth timing for.
  auto rowTiles = [&](const std::vector<Candidate> &list) {
    std::set<int> bms;
    for (const Candidate &c : list)
      if (runtime::worthTiming(c.tile, rows, arch_))
        bms.insert(c.tile.bm);
    return bms;
  };
  const std::set<int> bm1 = rowTiles(gemm1_), bm2 = rowTiles(gemm2_);
  std::map<int, std::pair<Best, Best>> best; // bm -> (GEMM1, GEMM2)
  for (int bm : bm1)
    if (bm2.count(bm))
      best[bm];
  int timed = 0;
  for (auto &[bm, pair] : best) {
    // Routing for this row tile once; the GEMMs then only read it. (fp32's
    // SIMT kernels have their own fixed row tile whatever bm says.)
    const GemmPlan routing_plan{TileConfig{bm}, TileConfig{bm}};
    const runtime::LaunchGeometry geo =
        runtime::launchGeometry(shape_, T, runtime::tileRows(shape_, routing_plan));
    if (runtime::gemmGridRows(shape_, routing_plan, geo) > kMaxGridY)
      continue;
    if (llvm::Error e = enqueueStage(routing_plan, T, runtime::kRouting))
      return e;
    for (bool first_gemm : {true, false})
      for (const Candidate &c : first_gemm ? gemm1_ : gemm2_) {
        if (c.tile.bm != bm || !runtime::worthTiming(c.tile, rows, arch_))
          continue;
        // The routing above listed tiles of bm rows: c alone, on that list.
        auto ms = timeIt([&] {
          return enqueueStage({c.tile, c.tile}, T, first_gemm ? runtime::kGemm1 : runtime::kGemm2);
        });
        if (!ms)
          return ms.takeError();
        ++timed;
        Best &b = first_gemm ? pair.first : pair.second;
        if (*ms < b.ms)
          b = {*ms, &c};
      }
  }
  // Finalists: the heuristic's plan, the winner of the bucket tuned before
  // (the next larger; plans that add no kernel: preferred inside the noise
  // margin) and the two best row tiles, timed as whole runs side by side.
  std::vector<std::pair<double, GemmPlan>> by_sum;
  for (auto &[bm, pair] : best)
    if (pair.first.candidate && pair.second.candidate)
      by_sum.push_back({pair.first.ms + pair.second.ms,
                        {pair.first.candidate->tile, pair.second.candidate->tile}});
  std::sort(by_sum.begin(), by_sum.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<GemmPlan> finalists;
  const bool heuristic_ok =
      find(GemmKind::Gemm1, heuristic.gemm1) && find(GemmKind::Gemm2, heuristic.gemm2);
  if (heuristic_ok)
    finalists.push_back(heuristic);
  if (previous && find(GemmKind::Gemm1, previous->gemm1) && find(GemmKind::Gemm2, previous->gemm2) &&
      std::find(finalists.begin(), finalists.end(), *previous) == finalists.end()) {
    const runtime::LaunchGeometry geo =
        runtime::launchGeometry(shape_, T, runtime::tileRows(shape_, *previous));
    if (runtime::gemmGridRows(shape_, *previous, geo) <= kMaxGridY)
      finalists.push_back(*previous);
  }
  const size_t preferred = finalists.size();
  for (size_t i = 0; i < by_sum.size() && i < 2; ++i)
    if (std::find(finalists.begin(), finalists.end(), by_sum[i].second) == finalists.end())
      finalists.push_back(by_sum[i].second);
  if (finalists.empty())
    return makeError(ErrorCode::Internal, "tune: no config to time at T={}", T);
  // Each finalist timed twice, interleaved forwards then backwards (ABC
  // CBA), so that heat and drift weigh on all: the two medians of one plan
  // differ by the noise of this card at this moment, which a finalist must
  // beat a preferred plan by to add its kernels (single medians picked
  // noise-level variants: bm16 s3 against s4, NOTES session 42).
  std::vector<std::function<llvm::Error()>> runs;
  for (const GemmPlan &plan : finalists)
    runs.push_back([this, plan, T] { return enqueueStage(plan, T, runtime::kAllStages); });
  for (size_t i = finalists.size(); i-- > 0;)
    runs.push_back(runs[i]);
  auto medians = timeInterleaved(runs);
  if (!medians)
    return medians.takeError();
  const std::vector<FinalistTime> times = foldPasses(*medians);
  const size_t win = pickFinalist(times, preferred);
  record.choice = finalists[win];
  record.ms = times[win].ms;
  record.heuristic_ms = heuristic_ok ? times[0].ms : 0;
  say(fmt::format("bucket {:2} T={:<5} rows/expert {:<7.4g} {:3} configs timed: {}:{} {:.4f} ms "
                  "(spread {:.1f}%; heuristic {:.4f} ms, spread {:.1f}%)",
                  bucket, T, rows, timed, record.choice.gemm1.suffix(),
                  record.choice.gemm2.suffix(), record.ms, times[win].spread * 100,
                  record.heuristic_ms, heuristic_ok ? times[0].spread * 100 : 0.0));
  return record;
}

llvm::Expected<TuningRecord> Tuner::run() {
  const auto start = std::chrono::steady_clock::now();
  auto order = tuningOrder(options_.buckets);
  if (!order)
    return order.takeError();
  const std::vector<int> &buckets = *order;
  if (options_.check_tokens < 1)
    return makeError(ErrorCode::InvalidArgument, "tune: check_tokens must be positive");
  if (llvm::Error e = buildAll())
    return e;
  int64_t max_tokens = 0;
  for (int b : buckets)
    max_tokens = std::max(max_tokens, runtime::bucketTokens(b));
  if (llvm::Error e = allocate(max_tokens))
    return e;
  if (llvm::Error e = checkCandidates())
    return e;

  TuningRecord record;
  record.workload_id = workload::workloadId(shape_);
  record.workload = workload::canonicalText(shape_);
  record.gpu = device_.name;
  record.arch = arch_.name();
  record.moejit_version = version();
  record.nvrtc_version = nvrtc::version();
  const runtime::Plan heuristic = runtime::heuristicPlan(shape_, arch_);
  for (int b = 0; b < runtime::kBucketCount; ++b)
    record.buckets.push_back({b, runtime::bucketTokens(b), heuristic.buckets[b], 0, 0});
  std::optional<GemmPlan> previous;
  for (int b : buckets) {
    auto r = tuneBucket(b, previous ? &*previous : nullptr);
    if (!r)
      return r.takeError();
    record.buckets[b] = *r;
    previous = r->choice;
  }
  record.candidates = tried_;
  record.failed = failed_;
  record.tuning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  record.created_utc = stamp;
  return record;
}

} // namespace

llvm::Expected<std::vector<int>> tuningOrder(const std::vector<int> &requested) {
  std::vector<int> buckets = requested;
  if (buckets.empty())
    for (int b = 0; b < runtime::kBucketCount; ++b)
      buckets.push_back(b);
  for (int b : buckets)
    if (b < 0 || b >= runtime::kBucketCount)
      return makeError(ErrorCode::InvalidArgument, "tune: bucket {} is not in 0..{}", b,
                       runtime::kBucketCount - 1);
  std::sort(buckets.begin(), buckets.end(), std::greater<>());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  return buckets;
}

std::vector<FinalistTime> foldPasses(const std::vector<double> &medians) {
  const size_t n = medians.size() / 2;
  std::vector<FinalistTime> times(n);
  for (size_t i = 0; i < n; ++i) {
    const double a = medians[i], b = medians[2 * n - 1 - i], low = std::min(a, b);
    times[i] = {(a + b) / 2, low > 0 ? std::abs(a - b) / low : 0};
  }
  return times;
}

size_t pickFinalist(const std::vector<FinalistTime> &times, size_t preferred, double floor,
                    double cap) {
  const size_t fastest =
      std::min_element(times.begin(), times.end(),
                       [](const FinalistTime &a, const FinalistTime &b) { return a.ms < b.ms; }) -
      times.begin();
  for (size_t i = 0; i < preferred && i < times.size(); ++i) {
    const double margin =
        std::clamp(std::max(times[i].spread, times[fastest].spread), floor, std::max(floor, cap));
    if (times[fastest].ms >= times[i].ms * (1.0 - margin))
      return i;
  }
  return fastest;
}

llvm::Expected<TuningRecord> autotune(const driver::Device &device, const Arch &arch,
                                      const MoeShape &shape, store::CubinStore &store,
                                      const TuneOptions &options) {
  if (llvm::Error e = workload::validateShape(shape))
    return e;
  // The tuner's modules, buffers and stream are made, used and freed on
  // the device's context; the caller's is current again afterwards.
  auto context = driver::ContextScope::enter(device.context);
  if (!context)
    return context.takeError();
  Tuner tuner(device, arch, shape, store, options);
  return tuner.run();
}

} // namespace moejit::tune
