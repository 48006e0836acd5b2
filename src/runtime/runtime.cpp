#include "moejit/moejit.hpp"

#include "common/error.h"
#include "common/log.h"
#include "nvrtc/compile.h"
#include "runtime/builder.h"
#include "runtime/kernel_set.h"
#include "workload/shape.h"

#include <map>
#include <mutex>

namespace moejit {

namespace {

/// One slot per (workload id, device, cache root): the first caller builds,
/// others wait on the slot's mutex, not on the whole map.
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

} // namespace

struct Runtime::Impl {
  driver::Device device;
  std::string arch;
  store::CubinStore store;

  explicit Impl(driver::Device d, const RuntimeOptions &options)
      : device(std::move(d)),
        arch(nvrtc::archForComputeCapability(device.cc_major, device.cc_minor)),
        store(options.cache_dir) {}
};

Runtime::Runtime(int device, RuntimeOptions options) {
  auto d = unwrapOrThrow(driver::Device::open(device));
  if (d.cc_major < 8)
    throw Error(ErrorCode::NoDevice, fmt::format("device {} ({}) has compute capability {}.{}; "
                                                 "moejit needs 8.0 or newer",
                                                 device, d.name, d.cc_major, d.cc_minor));
  impl_ = std::make_unique<Impl>(std::move(d), options);
}

Runtime::~Runtime() = default;

const char *version() { return MOEJIT_VERSION; }

CacheStats Runtime::cache_stats() const {
  const store::CubinStore &s = impl_->store;
  return {s.hits(), s.misses(), s.compiles(), s.memoryOnly()};
}

const std::string &Runtime::arch() const { return impl_->arch; }
const std::string &Runtime::device_name() const { return impl_->device.name; }

std::shared_ptr<const KernelSet> Runtime::get(const MoeShape &shape) {
  throwIfError(workload::validateShape(shape));
  const std::string id = workload::workloadId(shape);
  std::shared_ptr<Slot> slot =
      slotFor(fmt::format("{}|{}|{}", id, impl_->device.ordinal, impl_->store.root()));
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (slot->kernels)
    return slot->kernels;
  runtime::Plan plan = runtime::heuristicPlan(shape, impl_->arch);
  auto built = unwrapOrThrow(
      runtime::buildKernels(runtime::kernelSpecs(shape, plan), impl_->arch, impl_->store));
  slot->kernels = unwrapOrThrow(
      runtime::KernelSetImpl::load(impl_->device, shape, std::move(plan), std::move(built)));
  return slot->kernels;
}

} // namespace moejit
