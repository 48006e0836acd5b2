// Warming and checking a cache: every kernel a deployment of a shape may use, built into
// a store (from the cache or with NVRTC), for a named arch and without a
// GPU. Shared by `moejit warm` and the C ABI's moejit_warm.
#pragma once

#include "moejit/moejit.hpp"
#include "runtime/builder.h"
#include "runtime/planner.h"
#include "store/cache_admin.h"
#include "store/cubin_store.h"

#include <llvm/Support/Error.h>

#include <string>
#include <vector>

namespace moejit::api {

/// The plans whose kernels a deployment on `gpu` may use: the heuristic's
/// (MOEJIT_TUNING=heuristic), the record or shipped table for that GPU, or,
/// with no GPU named, every shipped table of the workload for this arch.
std::vector<runtime::Plan> plansToWarm(const MoeShape &shape, const Arch &arch,
                                       const std::string &gpu, const std::string &root);

/// Builds every kernel of plansToWarm under `combine` into `store` (a
/// batch-invariant set uses a subset of those plans' configs), one outcome per kernel;
/// `arch` and the shape are checked first, so bad ones compile and write
/// nothing. With `check_only` nothing is compiled: a kernel missing from the
/// cache is an outcome with ErrorCode::CacheMiss (how a deployment proves a
/// copied cache complete). Any other failure is the error. `on_kernel`
/// hears of each kernel as it is done (progress).
llvm::Expected<std::vector<runtime::BuildResult>>
warmShape(const MoeShape &shape, const std::string &arch, const std::string &gpu,
          store::CubinStore &store, Combine combine, bool check_only = false,
          const runtime::KernelDone &on_kernel = {});

/// warmShape of several shapes in one build: their misses compile together
/// (grouped into NVRTC programs across shapes, groupIntoPrograms), one list
/// of outcomes per shape in `shapes`' order; `on_kernel` counts over all.
llvm::Expected<std::vector<std::vector<runtime::BuildResult>>>
warmShapes(llvm::ArrayRef<MoeShape> shapes, const std::string &arch, const std::string &gpu,
           store::CubinStore &store, Combine combine, bool check_only = false,
           const runtime::KernelDone &on_kernel = {});

/// The tuning-record check `cache verify` hands to store::verifyCache
/// (tune::readRecordFile): records are the tune stage's format.
store::RecordCheck recordCheck();

} // namespace moejit::api
