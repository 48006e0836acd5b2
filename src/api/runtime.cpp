#include "moejit/moejit.hpp"

#include "api/options.h"
#include "common/error.h"
#include "common/log.h"
#include "common/settings.h"
#include "nvrtc/compile.h"
#include "runtime/builder.h"
#include "runtime/kernel_set.h"
#include "tune/autotune.h"
#include "tune/plan_lookup.h"
#include "tune/record.h"
#include "workload/shape.h"

#include <map>
#include <mutex>
#include <optional>
#include <string_view>

namespace moejit {

namespace {

/// One slot per (workload id, device, cache root, tuning mode): the first
/// caller builds, others wait on the slot's mutex, not on the whole map.
struct Slot {
  std::mutex mutex;
  std::shared_ptr<const KernelSet> kernels;
};

std::shared_ptr<Slot> slotFor(const std::string &key) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<Slot>> slots;
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = slots[key];
  if (!slot)
    slot = std::make_shared<Slot>();
  return slot;
}

bool sameShape(const MoeShape &a, const MoeShape &b) {
  return a.k == b.k && a.hidden == b.hidden && a.intermediate == b.intermediate &&
         a.experts == b.experts && a.dtype == b.dtype;
}

/// Options with the environment's settings filled in (validated).
struct ResolvedOptions {
  bool no_compile = false;
  Tuning tuning = Tuning::Records;
  Combine combine = Combine::Deterministic;
};

ResolvedOptions resolve(const RuntimeOptions &options) {
  ResolvedOptions r;
  r.no_compile = options.no_compile ? *options.no_compile
                                    : unwrapOrThrow(settings::readBool("MOEJIT_NO_COMPILE"));
  if (options.tuning) {
    r.tuning = *options.tuning;
    if (r.tuning != Tuning::Records && r.tuning != Tuning::Heuristic &&
        r.tuning != Tuning::FirstUse)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("RuntimeOptions::tuning is {}, not a moejit::Tuning",
                              static_cast<int>(r.tuning)));
  } else {
    const std::string mode = unwrapOrThrow(settings::read("MOEJIT_TUNING"));
    r.tuning = mode == "heuristic"   ? Tuning::Heuristic
               : mode == "first-use" ? Tuning::FirstUse
                                     : Tuning::Records;
  }
  if (options.combine) {
    r.combine = *options.combine;
    if (r.combine != Combine::Deterministic && r.combine != Combine::Fast &&
        r.combine != Combine::BatchInvariant)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("RuntimeOptions::combine is {}, not a moejit::Combine",
                              static_cast<int>(r.combine)));
  } else {
    r.combine = unwrapOrThrow(api::combineSetting());
  }
  return r;
}

} // namespace

struct Runtime::Impl {
  driver::Device device;
  Arch arch;
  store::CubinStore store;
  ResolvedOptions options;
  /// The kernel sets this runtime has returned, for get()'s hot path.
  std::mutex recent_mutex;
  std::vector<std::pair<MoeShape, std::shared_ptr<const KernelSet>>> recent;

  Impl(driver::Device d, const RuntimeOptions &o, ResolvedOptions resolved)
      : device(std::move(d)),
        arch(unwrapOrThrow(
            Arch::parse(nvrtc::archForComputeCapability(device.cc_major, device.cc_minor)))),
        store(o.cache_dir), options(resolved) {
    // Settings that are only read later are validated now as well.
    unwrapOrThrow(settings::read("MOEJIT_LOG_LEVEL"));
    unwrapOrThrow(settings::read("MOEJIT_COMPILE_THREADS"));
  }

  /// The plan of `shape` by the tuning mode (see moejit::Tuning).
  runtime::Plan plan(const MoeShape &shape) {
    if (options.tuning == Tuning::Heuristic)
      return runtime::heuristicPlan(shape, arch);
    const std::string id = workload::workloadId(shape);
    if (options.tuning == Tuning::FirstUse &&
        !tune::loadRecord(store.root(), id, device.name, version())) {
      if (options.no_compile) {
        warnOnce("first-use-no-compile", "MOEJIT_TUNING=first-use has no effect in no-compile "
                                         "mode: tuning needs compiles");
      } else {
        logger().info("no tuning record for {} on {}: tuning it now",
                      workload::canonicalText(shape), device.name);
        auto record = tune::autotune(device, arch, shape, store, tune::TuneOptions{});
        if (record) {
          if (llvm::Error e = tune::saveRecord(store.root(), *record))
            warnOnce("record-save:" + store.root(),
                     fmt::format("tuning record not saved: {}", errorMessage(std::move(e))));
          runtime::Plan plan = unwrapOrThrow(tune::planFromRecord(*record, shape, arch));
          plan.source = "autotuned";
          return plan;
        }
        // Tuning only makes things faster: when it cannot run (e.g. the
        // largest bucket's buffers do not fit), get() goes on without it.
        warnOnce("first-use-failed:" + workload::workloadId(shape),
                 fmt::format("tuning {} failed, using the tables or the heuristic: {}",
                             workload::canonicalText(shape), errorMessage(record.takeError())));
      }
    }
    return tune::choosePlan(shape, arch, device.name, store.root());
  }
};

Runtime::Runtime(int device, RuntimeOptions options) {
  // The options first: a bad one is the caller's error on any machine,
  // with or without the device.
  const ResolvedOptions resolved = resolve(options);
  auto d = unwrapOrThrow(driver::Device::open(device));
  if (d.cc_major < 8)
    throw Error(ErrorCode::NoDevice, fmt::format("device {} ({}) has compute capability {}.{}; "
                                                 "moejit needs 8.0 or newer",
                                                 device, d.name, d.cc_major, d.cc_minor));
  impl_ = std::make_unique<Impl>(std::move(d), options, resolved);
}

Runtime::~Runtime() = default;

const char *version() { return MOEJIT_VERSION; }

namespace {
/// The mode combine_name calls `name`, if any.
std::optional<Combine> combineNamed(std::string_view name) {
  for (Combine c : {Combine::Deterministic, Combine::Fast, Combine::BatchInvariant})
    if (name == combine_name(c))
      return c;
  return std::nullopt;
}
} // namespace

llvm::Expected<Combine> api::combineSetting() {
  auto mode = settings::read("MOEJIT_COMBINE");
  if (!mode)
    return mode.takeError();
  if (mode->empty())
    return Combine::Deterministic;
  if (std::optional<Combine> c = combineNamed(*mode))
    return *c;
  return makeError(ErrorCode::Internal, "MOEJIT_COMBINE's choices and combine_name disagree");
}

const char *combine_name(Combine combine) {
  switch (combine) {
  case Combine::Deterministic:
    return "deterministic";
  case Combine::Fast:
    return "fast";
  case Combine::BatchInvariant:
    return "batch-invariant";
  }
  return "unknown";
}

Combine parse_combine(const std::string &name) {
  if (std::optional<Combine> c = combineNamed(name))
    return *c;
  throw Error(ErrorCode::InvalidArgument,
              "unknown combine mode '" + name + "' (expected deterministic, fast or batch-invariant)");
}

CacheStats Runtime::cache_stats() const {
  const store::CubinStore &s = impl_->store;
  return {s.hits(), s.misses(), s.compiles(), s.memoryOnly()};
}

const std::string &Runtime::arch() const { return impl_->arch.name(); }
Combine Runtime::combine() const { return impl_->options.combine; }
const std::string &Runtime::device_name() const { return impl_->device.name; }

std::shared_ptr<const KernelSet> Runtime::get(const MoeShape &shape) {
  // Hot path: a shape this runtime already returned. No hashing, no
  // formatting, one uncontended lock and a scan of a few entries.
  {
    std::lock_guard<std::mutex> lock(impl_->recent_mutex);
    for (const auto &[known, kernels] : impl_->recent)
      if (sameShape(known, shape))
        return kernels;
  }
  std::shared_ptr<const KernelSet> kernels = getSlow(shape);
  std::lock_guard<std::mutex> lock(impl_->recent_mutex);
  impl_->recent.emplace_back(shape, kernels);
  return kernels;
}

std::shared_ptr<const KernelSet> Runtime::getSlow(const MoeShape &shape) {
  throwIfError(workload::validateShape(shape));
  const std::string id = workload::workloadId(shape);
  std::shared_ptr<Slot> slot =
      slotFor(fmt::format("{}|{}|{}|{}|{}", id, impl_->device.ordinal, impl_->store.root(),
                          static_cast<int>(impl_->options.tuning),
                          static_cast<int>(impl_->options.combine)));
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (slot->kernels)
    return slot->kernels;
  const Combine combine = impl_->options.combine;
  runtime::Plan plan = impl_->plan(shape);
  if (combine == Combine::BatchInvariant)
    plan = runtime::batchInvariantPlan(std::move(plan));
  runtime::BuildOptions build_options;
  build_options.no_compile = impl_->options.no_compile;
  slot->kernels = unwrapOrThrow(runtime::buildKernelSet(impl_->device, shape, std::move(plan),
                                                        combine, impl_->arch, impl_->store,
                                                        build_options));
  return slot->kernels;
}

} // namespace moejit
