#include "runtime/kernel_set.h"

#include "common/error.h"
#include "runtime/launch_sequence.h"
#include "workload/shape.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <optional>

namespace moejit::runtime {

using codegen::KernelKind;

namespace {
constexpr int64_t kMaxGridY = 65535;
} // namespace

llvm::Expected<std::shared_ptr<KernelSetImpl>>
buildKernelSet(const driver::Device &device, const MoeShape &shape, Plan plan, Combine combine,
               const Arch &arch, store::CubinStore &store, const BuildOptions &options) {
  auto built = buildKernels(kernelSpecs(shape, plan, combine), arch, store, options);
  if (!built)
    return built.takeError();
  return KernelSetImpl::load(device, shape, std::move(plan), combine, std::move(*built));
}

llvm::Expected<std::shared_ptr<KernelSetImpl>>
KernelSetImpl::load(const driver::Device &device, const MoeShape &shape, Plan plan,
                    Combine combine, std::vector<BuiltKernel> built) {
  auto context = driver::ContextScope::enter(device.context);
  if (!context)
    return context.takeError();
  auto set = std::shared_ptr<KernelSetImpl>(new KernelSetImpl());
  set->device_ = device;
  set->shape_ = shape;
  set->max_tokens_ = maxTokens(shape);
  set->id_ = workload::workloadId(shape);
  set->plan_ = std::move(plan);
  set->combine_mode_ = combine;
  for (const BuiltKernel &b : built) {
    auto k = set->modules_.load(b);
    if (!k)
      return k.takeError();
    set->specs_.push_back(b.spec);
    set->kernels_.push_back(*k);
    set->leases_.push_back(b.entry.lease);
  }
  auto find = [&](KernelKind kind) -> const LoadedKernel * {
    for (size_t i = 0; i < set->specs_.size(); ++i)
      if (set->specs_[i].kind == kind)
        return &set->kernels_[i];
    return nullptr;
  };
  set->routing_ = {find(KernelKind::RouteCount), find(KernelKind::RouteScan),
                   find(KernelKind::RouteScatter), find(KernelKind::RouteBlock),
                   find(KernelKind::RouteWide)};
  set->combine_ = find(KernelKind::Combine);
  if (!set->routing_.complete() || (combine == Combine::Fast) != (set->combine_ == nullptr))
    return makeError(ErrorCode::Internal, "kernel set for {} lacks a kernel",
                     workload::canonicalText(shape));
  for (const GemmPlan &g : set->plan_.buckets) {
    const LoadedKernel *g1 = set->findGemm(KernelKind::Gemm1, g.gemm1);
    const LoadedKernel *g2 = set->findGemm(KernelKind::Gemm2, g.gemm2);
    if (!g1 || !g2)
      return makeError(ErrorCode::Internal, "kernel set for {} lacks a planned GEMM",
                       workload::canonicalText(shape));
    set->bucket_gemms_.emplace_back(g1, g2);
  }
  return set;
}

const LoadedKernel *KernelSetImpl::findGemm(KernelKind kind,
                                            const codegen::TileConfig &tile) const {
  const bool simt = shape_.dtype == DType::FP32;
  for (size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].kind == kind && (simt || specs_[i].tile == tile))
      return &kernels_[i];
  return nullptr;
}

std::vector<KernelInfo> KernelSetImpl::kernels() const {
  std::vector<KernelInfo> out;
  for (const LoadedKernel &k : kernels_)
    out.push_back(k.info);
  return out;
}

std::vector<BucketPlan> KernelSetImpl::plan() const {
  std::vector<BucketPlan> out;
  for (int b = 0; b < kBucketCount; ++b) {
    const GemmPlan &g = plan_.buckets[b];
    // The last bucket also serves every larger T.
    const int64_t max_tokens =
        b + 1 == kBucketCount ? std::numeric_limits<int64_t>::max() : bucketTokens(b);
    out.push_back({max_tokens, g.gemm1.suffix(), g.gemm2.suffix()});
  }
  return out;
}

int64_t maxTokens(const MoeShape &shape) { return (INT_MAX / 2) / shape.k; }

namespace {

/// The GEMMs' row tiles of a call of `tokens` fit one launch's grid.
bool rowTilesFit(const MoeShape &shape, const Plan &plan, int64_t tokens) {
  const GemmPlan &g = plan.buckets[bucketOf(tokens)];
  return gemmGridRows(shape, g, launchGeometry(shape, tokens, tileRows(shape, g))) <= kMaxGridY;
}

/// The largest N below `tokens` such that every call of at most N tokens
/// fits one launch's grid (at least 1: one token's row tiles are at most
/// k / tile_m + min(E, k) per split, far below the limit). Row tiles grow
/// with the tokens within a bucket's plan, not across buckets (a larger
/// bucket may take larger tiles), so each bucket is searched on its own.
int64_t largestFittingCall(const MoeShape &shape, const Plan &plan, int64_t tokens) {
  for (int b = 0; b < kBucketCount; ++b) {
    const int64_t first = b == 0 ? 1 : bucketTokens(b - 1) + 1;
    if (first > tokens)
      break;
    const int64_t last = b + 1 == kBucketCount ? tokens : std::min(tokens, bucketTokens(b));
    if (rowTilesFit(shape, plan, last))
      continue;
    int64_t fits = first - 1, fails = last;
    while (fails - fits > 1) {
      const int64_t mid = fits + (fails - fits) / 2;
      (rowTilesFit(shape, plan, mid) ? fits : fails) = mid;
    }
    return fits;
  }
  return tokens;
}

} // namespace

llvm::Expected<RunLayout> runLayout(const MoeShape &shape, const Plan &plan, Combine combine,
                                    int64_t tokens, int64_t max_tokens) {
  if (tokens > max_tokens)
    return makeError(ErrorCode::InvalidArgument,
                     "moejit run: tokens = {} is more than one call supports for k = {} (at most "
                     "{}); split the batch",
                     tokens, shape.k, max_tokens);
  auto call = [&](int64_t call_tokens) {
    RunLayout r;
    r.bucket = bucketOf(call_tokens);
    const GemmPlan &g = plan.buckets[r.bucket];
    r.geometry = launchGeometry(shape, call_tokens, tileRows(shape, g));
    r.workspace = workspaceLayout(shape, r.geometry, combine, &g.gemm2);
    r.call_tokens = call_tokens;
    r.workspace_needed = r.workspace.total;
    return r;
  };
  RunLayout r = call(tokens);
  if (gemmGridRows(shape, plan.buckets[r.bucket], r.geometry) <= kMaxGridY)
    return r;
  // More row tiles than one launch's grid holds (about a million tokens at
  // k = 8): calls of the largest T that every shorter call fits as well,
  // on one workspace large enough for each, the last call included (it may
  // fall in another bucket).
  r = call(largestFittingCall(shape, plan, tokens));
  if (const int64_t last = tokens % r.call_tokens; last != 0)
    r.workspace_needed = std::max(r.workspace_needed, call(last).workspace.total);
  return r;
}

namespace {

/// Bytes of one element of x and y, one expert id and one routing weight.
struct ElementBytes {
  int64_t xy, id, weight;
};

ElementBytes elementBytes(const MoeShape &shape, const MoeArgs &a) {
  const int64_t elem = dtype_bytes(shape.dtype);
  return {elem, a.index_type == IndexType::Int64 ? 8 : 4,
          a.weight_type == WeightType::ModelDType ? elem : 4};
}

} // namespace

MoeArgs callArgs(const MoeShape &shape, const MoeArgs &a, int64_t first, int64_t count) {
  if (first == 0 && count == a.tokens)
    return a;
  const ElementBytes bytes = elementBytes(shape, a);
  auto at = [](const void *base, int64_t offset) {
    return static_cast<const char *>(base) + offset;
  };
  MoeArgs c = a;
  c.x = at(a.x, first * shape.hidden * bytes.xy);
  c.y = const_cast<char *>(at(a.y, first * shape.hidden * bytes.xy));
  c.top_k_index = at(a.top_k_index, first * shape.k * bytes.id);
  c.top_k_weights = at(a.top_k_weights, first * shape.k * bytes.weight);
  c.tokens = count;
  return c;
}

namespace {

/// The product of `factors` (each >= 0), or nullopt where it overflows.
std::optional<uint64_t> product(std::initializer_list<int64_t> factors) {
  uint64_t total = 1;
  for (int64_t f : factors)
    if (f < 0 || __builtin_mul_overflow(total, static_cast<uint64_t>(f), &total))
      return std::nullopt;
  return total;
}

} // namespace

llvm::Error checkRunArgs(const MoeShape &shape, const MoeArgs &a, size_t need) {
  const int64_t T = a.tokens, H = shape.hidden, I = shape.intermediate, E = shape.experts,
                K = shape.k;
  const bool ids64 = a.index_type == IndexType::Int64;
  const auto [elem, id_bytes, weight_bytes] = elementBytes(shape, a);
  if (a.index_type != IndexType::Int32 && !ids64)
    return makeError(ErrorCode::InvalidArgument, "moejit run: index_type is not Int32 or Int64");
  if (a.weight_type != WeightType::Float32 && a.weight_type != WeightType::ModelDType)
    return makeError(ErrorCode::InvalidArgument,
                     "moejit run: weight_type is not Float32 or ModelDType");
  if ((a.expert_map == nullptr) != (a.expert_map_size == 0) || a.expert_map_size < 0 ||
      a.expert_map_size > INT_MAX)
    return makeError(ErrorCode::InvalidArgument,
                     "moejit run: expert_map and expert_map_size ({}) must be given together, "
                     "with 1 to {} entries",
                     a.expert_map_size, INT_MAX);
  struct Tensor {
    const char *name;
    const void *ptr;
    uintptr_t align;
    std::optional<uint64_t> bytes;
    bool optional = false;
  };
  const Tensor tensors[] = {
      {"x", a.x, 16, product({T, H, elem})},
      {"gate_up_proj", a.gate_up_proj, 16, product({E, 2, I, H, elem})},
      {"down_proj", a.down_proj, 16, product({E, H, I, elem})},
      {"top_k_index", a.top_k_index, static_cast<uintptr_t>(id_bytes), product({T, K, id_bytes})},
      {"top_k_weights", a.top_k_weights, static_cast<uintptr_t>(weight_bytes),
       product({T, K, weight_bytes})},
      {"expert_map", a.expert_map, 4, product({a.expert_map_size, 4}), /*optional=*/true},
      // What the kernels write, last.
      {"workspace", a.workspace, 16, static_cast<uint64_t>(a.workspace_bytes)},
      {"y", a.y, 16, product({T, H, elem})}};
  for (const Tensor &t : tensors) {
    if (!t.ptr && t.optional)
      continue;
    if (!t.ptr)
      return makeError(ErrorCode::InvalidArgument, "moejit run: {} is null", t.name);
    const auto at = reinterpret_cast<uintptr_t>(t.ptr);
    if (at % t.align != 0)
      return makeError(ErrorCode::InvalidArgument, "moejit run: {} is not {}-byte aligned", t.name,
                       t.align);
    if (!t.bytes || *t.bytes > UINTPTR_MAX - at)
      return makeError(ErrorCode::InvalidArgument,
                       "moejit run: {} at {} does not fit the address space with this shape and "
                       "tokens = {}",
                       t.name, t.ptr, T);
  }
  // What the kernels write overlaps nothing else. y: no input and not the
  // workspace, which kernels read while the combine writes y; y == x
  // exactly is allowed (in place): x is read only by GEMM1, which is done
  // before the combine writes y. The workspace: no input, which the
  // routing and the GEMMs would overwrite while others still read it. All
  // ends were checked not to wrap above; empty ranges overlap nothing.
  auto overlap = [](const Tensor &w, const Tensor &t) {
    const uintptr_t w_begin = reinterpret_cast<uintptr_t>(w.ptr), w_end = w_begin + *w.bytes;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(t.ptr), end = begin + *t.bytes;
    return t.ptr && begin < end && w_begin < w_end && w_begin < end && begin < w_end;
  };
  const llvm::ArrayRef<Tensor> all(tensors), inputs = all.drop_back(2);
  const Tensor &workspace = all[all.size() - 2], &y = all.back();
  const Tensor &x = all.front();
  for (const Tensor &t : all.drop_back()) {
    if (&t == &x && a.y == a.x)
      continue; // (x itself only: another input at x's address is overlapped all the same)
    if (overlap(y, t))
      return makeError(ErrorCode::InvalidArgument, "moejit run: y overlaps {}{}", t.name,
                       &t == &x ? " (only y == x exactly is allowed)" : "");
  }
  for (const Tensor &t : inputs)
    if (overlap(workspace, t))
      return makeError(ErrorCode::InvalidArgument, "moejit run: workspace overlaps {}", t.name);
  if (a.workspace_bytes < need)
    return makeError(ErrorCode::WorkspaceTooSmall,
                     "moejit run: workspace of {} bytes is too small: {} "
                     "tokens need {} (see workspace_bytes)",
                     a.workspace_bytes, a.tokens, need);
  return llvm::Error::success();
}

size_t KernelSetImpl::workspace_bytes(int64_t tokens) const {
  if (tokens <= 0)
    return 0;
  return unwrapOrThrow(runLayout(shape_, plan_, combine_mode_, tokens, max_tokens_))
      .workspace_needed;
}

llvm::Error KernelSetImpl::enqueue(const MoeArgs &a, CUstream stream, unsigned stages) const {
  if (a.tokens < 0)
    return makeError(ErrorCode::InvalidArgument, "moejit run: tokens = {} is negative", a.tokens);
  if (a.tokens == 0)
    return llvm::Error::success();
  auto run = runLayout(shape_, plan_, combine_mode_, a.tokens, max_tokens_);
  if (!run)
    return run.takeError();
  // Part of a call reruns on the workspace the last whole call left, laid
  // out for that call only: a split run's calls differ.
  if (stages != kAllStages && run->call_tokens < a.tokens)
    return makeError(ErrorCode::InvalidArgument,
                     "moejit run: tokens = {} run as calls of {}; parts of a call need one call",
                     a.tokens, run->call_tokens);
  if (llvm::Error e = checkRunArgs(shape_, a, run->workspace_needed))
    return e;
  auto context = driver::ContextScope::enter(device_.context);
  if (!context)
    return context.takeError();
  // One call, or a run past one launch's row tiles as calls one after the
  // other on the stream (each call's first kernel waits for the last one's
  // kernels before it touches the workspace, as between two runs).
  for (int64_t first = 0; first < a.tokens; first += run->call_tokens) {
    const int64_t count = std::min(run->call_tokens, a.tokens - first);
    RunLayout layout = *run;
    if (count != run->call_tokens) {
      auto last = runLayout(shape_, plan_, combine_mode_, count, max_tokens_);
      if (!last)
        return last.takeError();
      layout = *last;
    }
    const int bucket = layout.bucket;
    const LaunchParams p =
        launchParams(callArgs(shape_, a, first, count), layout.workspace, layout.geometry);
    const CallKernels kernels{routing_, bucket_gemms_[bucket].first, bucket_gemms_[bucket].second,
                              combine_};
    if (llvm::Error e =
            enqueueCall(shape_, kernels, plan_.buckets[bucket], layout.geometry, p, stages, stream))
      return e;
  }
  return llvm::Error::success();
}

void KernelSetImpl::run(const MoeArgs &args, void *stream) const {
  throwIfError(enqueue(args, static_cast<CUstream>(stream)));
}

} // namespace moejit::runtime
